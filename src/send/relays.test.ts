// [[relay]] end to end: the real app sends through the API; a relay (smtp-server with STARTTLS and AUTH on
// 127.0.0.3) carries the mail of the domain its rule names, and only that; mail of another domain goes
// straight to the recipient's MX (the kit's sink); a relay without STARTTLS gets nothing and the mail waits.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';

interface Carried {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  user: string | null;
  secure: boolean;
}

/** A relay on 127.0.0.3 that wants AUTH (after STARTTLS, smtp-server's default) unless `plain`. */
async function startRelay(host: string, opts: { plain?: boolean } = {}): Promise<{ port: number; carried: Carried[]; close: () => Promise<void> }> {
  const carried: Carried[] = [];
  const server = new SMTPServer({
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: opts.plain ?? false,
    disabledCommands: opts.plain ? ['AUTH', 'STARTTLS'] : [],
    logger: false,
    onAuth: (auth, _session, callback) => {
      if (auth.username === 'mailwright' && auth.password === 's3cret:pass') return callback(null, { user: auth.username });
      callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        carried.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          user: (session.user as string | undefined) ?? null,
          secure: session.secure,
        });
        callback();
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  return { port: (server.server.address() as AddressInfo).port, carried, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let s: OutboundScene;
let relay: Awaited<ReturnType<typeof startRelay>>;
let plain: Awaited<ReturnType<typeof startRelay>>;

test.before(async () => {
  relay = await startRelay('127.0.0.3');
  plain = await startRelay('127.0.0.4', { plain: true });
  const relays = [
    // smtp-server's own certificate verifies for no name: tls_verify = false, as for a relay on the LAN.
    { match: 'sender:relayed.test', url: `smtp://mailwright:${encodeURIComponent('s3cret:pass')}@127.0.0.3:${relay.port}`, tls_verify: false },
    { match: ['recipient:partner.test'], url: `smtp://127.0.0.4:${plain.port}` },
  ];
  s = await startOutboundScene({ env: { MAILWRIGHT_RELAY: JSON.stringify(relays), MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  await s.verifiedDomain('relayed.test');
  await s.verifiedDomain('direct.test');
  s.routeTo('dest.test');
  s.routeTo('partner.test');
});
test.after(async () => {
  await s.stop();
  await relay.close();
  await plain.close();
});

const sendFrom = async (from: string, to: string) => {
  const res = await s.send({ from, to, subject: `from ${from}`, text: 'Hello.' });
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.id as string;
};

test('a relay with AUTH carries the mail of the domain it names, and only that', async () => {
  const viaRelay = await sendFrom('ada@relayed.test', 'one@dest.test');
  const direct = await sendFrom('bob@direct.test', 'two@dest.test');
  const carried = await eventually(() => relay.carried.find((m) => m.rcptTo.includes('one@dest.test')), 10_000, 'the relay carries one@dest.test');
  const straight = await eventually(() => s.sink.messages.find((m) => m.rcptTo.includes('two@dest.test')), 10_000, 'two@dest.test reaches its MX');
  assert.equal([carried.user, carried.secure], ['mailwright', true], 'authenticated over STARTTLS');
  assert.match(carried.mailFrom, /@bounces\.relayed\.test$/);
  assert.equal((await s.dkim(carried.raw)).status, 'pass', 'still signed by the box');
  assert.is(straight.mailFrom.endsWith('@bounces.direct.test'), true);
  assert.not.ok(relay.carried.some((m) => m.rcptTo.includes('two@dest.test')), 'the relay never sees direct.test mail');
  assert.not.ok(s.sink.messages.some((m) => m.rcptTo.includes('one@dest.test')), 'relayed mail does not also go to the MX');
  const delivered = async (id: string) => (await eventually(async () => (await s.events(id)).find((e) => e.type === 'delivered'), 10_000, `${id} delivered`)).data;
  assert.is((await delivered(viaRelay)).mx, '127.0.0.3');
  assert.is((await delivered(direct)).mx, 'mx.dest.test');
});

test('a relay that offers no STARTTLS gets nothing: the mail to its domain is deferred, naming STARTTLS', async () => {
  const id = await sendFrom('bob@direct.test', 'carol@partner.test');
  const deferred = await eventually(async () => (await s.events(id)).find((e) => e.type === 'delivery_delayed'), 10_000, 'deferred');
  assert.match(String(deferred.data.response), /STARTTLS/);
  assert.is(deferred.data.mx, '127.0.0.4');
  assert.is(plain.carried.length, 0);
  assert.not.ok(s.sink.messages.some((m) => m.rcptTo.includes('carol@partner.test')), 'and not to the MX either');
});

test.run();
