// The seams of a delivery attempt: every socket comes from the injected dial (app.dial), a dial
// that fails or hangs is an outcome like a refused connection, and the route cache keeps time by the injected
// clock (app.clock). Against the kit's DNS server and SMTP sink on loopback.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Resolver } from 'node:dns/promises';
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import type { Dial } from '../context.ts';
import { createResolver } from '../dns/resolver.ts';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startSmtpSink, type SmtpSink } from '../testkit/smtp-sink.ts';
import { dialTcp } from './connect.ts';
import { Deliverer, type DelivererOptions, type OutboundMessage, type RecipientOutcome } from './deliver.ts';

// A documentation address (RFC 5737): nothing listens there, so only a dial that goes elsewhere can deliver.
const FAR = '192.0.2.25';
const MTA_PORT = 25;

let dns: DnsServer;
let resolver: Resolver;
let sink: SmtpSink;

test.before(async () => {
  dns = await startDnsServer();
  resolver = createResolver([dns.address], { timeoutMs: 500, tries: 1 });
  sink = await startSmtpSink({ host: '127.0.0.1' });
  dns.add('far.test', 'MX', { preference: 10, exchange: 'mx.far.test' });
  dns.add('mx.far.test', 'A', FAR);
});

test.after(async () => {
  await Promise.all([sink.close(), dns.close()]);
});

test.before.each(() => {
  sink.clear();
  dns.resetQueries();
});

/** A dial that records what it was asked for and connects to the sink instead. */
function toSink(asked: Array<{ host: string; port: number }>): Dial {
  return (to, signal) => {
    asked.push(to);
    return dialTcp({ host: '127.0.0.1', port: sink.port }, signal);
  };
}

let seq = 0;
function message(recipient: string): OutboundMessage {
  const id = `dial_${++seq}`;
  const raw = Buffer.from(`From: <app@example.test>\r\nTo: <${recipient}>\r\nSubject: ${id}\r\nMessage-ID: <${id}@example.test>\r\n\r\nHello.\r\n`);
  return { id, envelopeFrom: 'bounces@example.test', recipients: [recipient], raw };
}

async function deliver(opts: Partial<DelivererOptions>, ...messages: OutboundMessage[]): Promise<RecipientOutcome[]> {
  const d = new Deliverer({ resolver, dial: dialTcp, clock: systemClock, heloName: 'out.mailwright.test', port: MTA_PORT, allowPrivate: true, connectTimeoutMs: 3000, socketTimeoutMs: 5000, ...opts });
  try {
    return await d.deliver('far.test', messages);
  } finally {
    await d.close();
  }
}

test('every socket comes from the dial: the MX address and the MTA port are what it is asked for', async () => {
  const asked: Array<{ host: string; port: number }> = [];
  const [outcome] = await deliver({ dial: toSink(asked) }, message('user@far.test'));
  assert.is(outcome!.result, 'delivered', outcome!.response);
  assert.is(outcome!.mx, 'mx.far.test');
  assert.equal(asked, [{ host: FAR, port: MTA_PORT }]);
  assert.equal(sink.messages.map((m) => m.rcptTo), [['user@far.test']]);
});

test('a dial that fails defers the recipient with its error, naming the host and address', async () => {
  const refused: Dial = async () => {
    throw Object.assign(new Error(`connect ECONNREFUSED ${FAR}:${MTA_PORT}`), { code: 'ECONNREFUSED' });
  };
  const [outcome] = await deliver({ dial: refused }, message('user@far.test'));
  assert.is(outcome!.result, 'deferred');
  assert.is(outcome!.response, `mx.far.test [${FAR}]: connect ECONNREFUSED ${FAR}:${MTA_PORT} (ECONNREFUSED)`);
  assert.is(outcome!.enhanced, '4.4.1');
  assert.is(sink.messages.length, 0);
});

test('a dial that never connects is aborted at the connect timeout', async () => {
  let aborted = false;
  const hangs: Dial = (_to, signal) =>
    new Promise((_resolve, reject) =>
      signal.addEventListener('abort', () => {
        aborted = true;
        reject(signal.reason);
      }),
    );
  const [outcome] = await deliver({ dial: hangs, connectTimeoutMs: 100 }, message('user@far.test'));
  assert.ok(aborted, 'the dial was told to give up');
  assert.is(outcome!.result, 'deferred');
  assert.is(outcome!.response, `mx.far.test [${FAR}]: Connection timeout`);
});

test('the route cache keeps time by the injected clock: one MX lookup for 5 s, then a fresh one', async () => {
  let now = 1_700_000_000_000;
  const clock: Clock = { now: () => now };
  const d = new Deliverer({ resolver, dial: toSink([]), clock, heloName: 'out.mailwright.test', port: MTA_PORT, allowPrivate: true, connectTimeoutMs: 3000, socketTimeoutMs: 5000 });
  const lookups = () => dns.queries.filter((q) => q.name === 'far.test' && q.type === 'MX').length;
  try {
    await d.deliver('far.test', [message('a@far.test')]);
    now += 4999;
    await d.deliver('far.test', [message('b@far.test')]);
    assert.is(lookups(), 1, 'served from the cache within 5 s');
    now += 1;
    await d.deliver('far.test', [message('c@far.test')]);
    assert.is(lookups(), 2, 'asked again once 5 s have passed on the clock');
  } finally {
    await d.close();
  }
  assert.is(sink.messages.length, 3);
});

test.run();
