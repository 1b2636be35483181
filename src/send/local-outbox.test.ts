// Try mode's transport against a real SMTP peer on loopback (the test kit's sink, standing for the box's own
// listener) with a dial and a resolver that record every use: mail for the local domain and its subdomains goes
// to the own listener over STARTTLS; mail for any other domain is kept, with no socket and no lookup.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Resolver } from 'node:dns/promises';
import { startSmtpSink, type SmtpSink } from '../testkit/smtp-sink.ts';
import { systemClock } from '../clock.ts';
import { dialTcp } from './connect.ts';
import { LOCAL_OUTBOX, LocalOutbox } from './local-outbox.ts';
import type { OutboundMessage } from './deliver.ts';

let sink: SmtpSink;
const dialed: string[] = [];
const asked: string[] = [];
// Any question to DNS is a failure of the transport: it records the question and refuses.
const resolver = new Proxy({} as Resolver, {
  get: (_target, method) => (...args: unknown[]) => {
    asked.push(`${String(method)} ${String(args[0])}`);
    return Promise.reject(new Error('no DNS in try mode'));
  },
});
let outbox: LocalOutbox;

test.before(async () => {
  sink = await startSmtpSink({ host: '127.0.0.1', starttls: true });
  outbox = new LocalOutbox(['mail.localhost'], { host: '127.0.0.1', port: sink.port }, {
    resolver,
    dial: (to, signal) => {
      dialed.push(`${to.host}:${to.port}`);
      return dialTcp(to, signal);
    },
    clock: systemClock,
    heloName: 'try.localhost',
    port: 25,
    allowPrivate: false,
  });
});
test.after(async () => {
  await outbox.close();
  await sink.close();
});

const message = (id: string, recipients: string[]): OutboundMessage => ({
  id,
  envelopeFrom: 'bounce+x@bounces.mail.localhost',
  recipients,
  raw: Buffer.from(`From: hello@mail.localhost\r\nTo: ${recipients.join(', ')}\r\nSubject: ${id}\r\n\r\nHi\r\n`),
});

test('mail to other domains is kept: delivered from the local outbox, no socket, no lookup', async () => {
  assert.is(outbox.relayFor('mail.localhost', 'example.com'), null);
  const outcomes = await outbox.deliver('example.com', [message('em_kept', ['a@example.com', 'b@example.com', 'bad address@example.com'])]);
  assert.equal(
    outcomes.map((o) => [o.recipient, o.result, o.code, o.mx]),
    [
      ['a@example.com', 'delivered', 250, LOCAL_OUTBOX],
      ['b@example.com', 'delivered', 250, LOCAL_OUTBOX],
      // What could never go on the wire bounces as it would on a box.
      ['bad address@example.com', 'bounced', null, null],
    ],
  );
  assert.match(outcomes[0].response, /^250 2\.0\.0 Kept in the local outbox/);
  assert.equal([dialed, asked, sink.messages.length], [[], [], 0]);
});

test('mail to the local domain and its subdomains goes to the own listener, over STARTTLS, without DNS', async () => {
  const relay = outbox.relayFor(null, 'mail.localhost');
  assert.ok(relay, 'a route to the own listener');
  const outcomes = await outbox.deliver('mail.localhost', [message('em_local', ['hello@mail.localhost'])], relay);
  assert.equal(outcomes.map((o) => [o.recipient, o.result, o.code]), [['hello@mail.localhost', 'delivered', 250]]);
  assert.ok(outcomes[0].tls, 'STARTTLS with the own certificate');
  const bounces = await outbox.deliver('bounces.mail.localhost', [message('em_bounce', ['x@bounces.mail.localhost'])]);
  assert.is(bounces[0].result, 'delivered');
  assert.equal(sink.messages.map((m) => m.rcptTo), [['hello@mail.localhost'], ['x@bounces.mail.localhost']]);
  assert.ok(sink.messages.every((m) => m.secure));
  assert.ok(dialed.length > 0 && dialed.every((d) => d === `127.0.0.1:${sink.port}`), dialed.join(', '));
  assert.equal(asked, []);
});

test.run();
