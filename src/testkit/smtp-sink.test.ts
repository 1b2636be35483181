// Tests for the SMTP sink, driven by real nodemailer clients over real sockets: what the outbound MTA will
// do to it is the contract. No smtp-server internals are poked here.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTransport } from 'nodemailer';
import { startSmtpSink } from './smtp-sink.ts';
import type { SmtpSink } from './smtp-sink.ts';

let plain: SmtpSink;
let tls: SmtpSink;

type TransportExtras = { pool?: boolean; requireTLS?: boolean; ignoreTLS?: boolean };

function transportTo(sink: SmtpSink, extras: TransportExtras = {}) {
  const { pool, ...rest } = extras;
  const options = {
    host: sink.host,
    port: sink.port,
    secure: false,
    name: 'client.example.test',
    tls: { rejectUnauthorized: false },
    // A wedged sink should fail the test quickly, not after nodemailer's minutes-long defaults.
    connectionTimeout: 3000,
    greetingTimeout: 3000,
    socketTimeout: 3000,
    ...rest,
  };
  return pool ? createTransport({ ...options, pool: true as const }) : createTransport(options);
}

async function rejectionOf(promise: Promise<unknown>): Promise<Error & { responseCode?: number; code?: string }> {
  try {
    await promise;
  } catch (err) {
    return err as Error & { responseCode?: number };
  }
  assert.unreachable('expected sendMail to fail');
  throw new Error('unreachable');
}

test.before(async () => {
  plain = await startSmtpSink();
  tls = await startSmtpSink({ starttls: true, name: 'tls-sink.test' });
});

test.before.each(() => {
  plain.clear();
  tls.clear();
});

test.after(async () => {
  await Promise.all([plain.close(), tls.close()]);
});

test('records envelope, HELO, peer and the exact message', async () => {
  const transport = transportTo(plain);
  const info = await transport.sendMail({
    from: 'Alice <alice@example.test>',
    to: 'bob@example.test',
    cc: 'carol@example.test',
    subject: 'Quarterly numbers 7f3a',
    text: 'Hello Bob,\r\n.this line starts with a dot\r\nBye',
  });
  transport.close();
  assert.equal(info.accepted.sort(), ['bob@example.test', 'carol@example.test']);

  const [message, ...others] = await plain.waitForMessages(1);
  assert.is(others.length, 0);
  assert.ok(message);
  assert.is(message.mailFrom, 'alice@example.test');
  assert.equal(message.rcptTo, ['bob@example.test', 'carol@example.test']);
  assert.is(message.helo, 'client.example.test');
  assert.is(message.remoteAddress, '127.0.0.1');
  assert.is(message.secure, false);
  const raw = message.raw.toString('utf8');
  assert.match(raw, /^Subject: Quarterly numbers 7f3a\r$/m);
  // Dot-stuffing is undone: the body is exactly what was sent.
  assert.ok(raw.includes('\r\n\r\nHello Bob,\r\n.this line starts with a dot\r\nBye'), raw);
  assert.ok(Math.abs(Date.now() - message.receivedAt) < 5000);
});

test('the null sender is recorded as an empty string', async () => {
  const transport = transportTo(plain);
  await transport.sendMail({ envelope: { from: '', to: 'postmaster@example.test' }, from: 'mailer-daemon@example.test', subject: 'bounce', text: 'x' });
  transport.close();
  const [message] = await plain.waitForMessages(1);
  assert.is(message?.mailFrom, '');
});

test('a scripted 550 rejects one recipient; only the other is recorded', async () => {
  plain.replyTo('nobody@example.test', { code: 550, message: '5.1.1 no such user' });
  const transport = transportTo(plain);
  const info = await transport.sendMail({
    from: 'alice@example.test',
    to: ['bob@example.test', 'NoBody@Example.Test'],
    subject: 'partial',
    text: 'x',
  });
  transport.close();
  assert.equal(info.accepted, ['bob@example.test']);
  assert.equal(info.rejected, ['NoBody@example.test']); // nodemailer lower-cases only the domain
  assert.match(info.rejectedErrors?.[0]?.message ?? '', /550 5\.1\.1 no such user/);
  const [message] = await plain.waitForMessages(1);
  assert.equal(message?.rcptTo, ['bob@example.test']);
});

test('a scripted 451 at DATA fails the send and records nothing, until reset', async () => {
  plain.replyToData({ code: 451, message: '4.2.0 try later' });
  const transport = transportTo(plain);
  const err = await rejectionOf(transport.sendMail({ from: 'alice@example.test', to: 'bob@example.test', subject: 'deferred', text: 'x' }));
  assert.is(err.responseCode, 451);
  assert.match(err.message, /4\.2\.0 try later/);
  assert.is(plain.messages.length, 0);

  plain.replyToData(null);
  await transport.sendMail({ from: 'alice@example.test', to: 'bob@example.test', subject: 'retried', text: 'x' });
  transport.close();
  assert.is(plain.messages.length, 1);
});

test('a scripted MAIL FROM reply fails the send', async () => {
  plain.replyToMail({ code: 553, message: '5.7.1 sender not allowed' });
  const transport = transportTo(plain);
  const err = await rejectionOf(transport.sendMail({ from: 'mallory@example.test', to: 'bob@example.test', subject: 'no', text: 'x' }));
  transport.close();
  assert.is(err.responseCode, 553);
  assert.is(plain.messages.length, 0);
});

test('STARTTLS is offered and used when enabled', async () => {
  const transport = transportTo(tls, { requireTLS: true });
  await transport.sendMail({ from: 'alice@example.test', to: 'bob@example.test', subject: 'secret', text: 'x' });
  transport.close();
  const [message] = await tls.waitForMessages(1);
  assert.is(message?.secure, true);
  assert.is(tls.sessions[0]?.secure, true);
});

test('STARTTLS is not offered when disabled', async () => {
  // Opportunistic: nodemailer upgrades whenever STARTTLS is advertised, so staying in clear text means it was not.
  const opportunistic = transportTo(plain);
  await opportunistic.sendMail({ from: 'alice@example.test', to: 'bob@example.test', subject: 'clear', text: 'x' });
  opportunistic.close();
  assert.is(plain.messages[0]?.secure, false);

  const insistent = transportTo(plain, { requireTLS: true });
  const err = await rejectionOf(insistent.sendMail({ from: 'alice@example.test', to: 'bob@example.test', subject: 'x', text: 'x' }));
  insistent.close();
  assert.match(err.message, /STARTTLS/i);
  assert.is(plain.messages.length, 1);
});

test('a pooled client reuses one connection; separate clients open separate ones', async () => {
  const pooled = transportTo(plain, { pool: true });
  await pooled.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'one', text: 'x' });
  await pooled.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'two', text: 'x' });
  pooled.close();
  assert.is(plain.sessions.length, 1);
  assert.is(plain.sessions[0]?.messages, 2);

  for (const subject of ['three', 'four']) {
    const single = transportTo(plain);
    await single.sendMail({ from: 'a@example.test', to: 'b@example.test', subject, text: 'x' });
    single.close();
  }
  assert.is(plain.sessions.length, 3);
  assert.equal(plain.messages.map((m) => m.sessionId === plain.sessions[0]?.id), [true, true, false, false]);
});

test('waitForMessages waits for late mail and times out with a clear error', async () => {
  const transport = transportTo(plain);
  const waiting = plain.waitForMessages(2, 3000);
  await transport.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'first', text: 'x' });
  await transport.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'second', text: 'x' });
  transport.close();
  assert.is((await waiting).length, 2);

  const err = await rejectionOf(plain.waitForMessages(3, 100));
  assert.match(err.message, /waited 100 ms for 3 message\(s\), got 2/);
});

test('a sink can listen on another loopback address', async () => {
  const other = await startSmtpSink({ host: '127.0.0.2' });
  try {
    assert.is(other.host, '127.0.0.2');
    const transport = transportTo(other);
    await transport.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'via .2', text: 'x' });
    transport.close();
    const [message] = await other.waitForMessages(1);
    assert.match(message?.raw.toString() ?? '', /Subject: via \.2/);
    assert.is(plain.messages.length, 0);
  } finally {
    await other.close();
  }
});

test('clear() forgets messages, sessions and scripted replies', async () => {
  const transport = transportTo(plain);
  await transport.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'before', text: 'x' });
  plain.replyTo('b@example.test', { code: 550 });
  plain.replyToMail({ code: 550 });
  plain.replyToData({ code: 554 });
  plain.clear();
  assert.is(plain.messages.length, 0);
  assert.is(plain.sessions.length, 0);
  await transport.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'after', text: 'x' });
  transport.close();
  assert.equal(plain.messages.map((m) => m.rcptTo), [['b@example.test']]);
});

test('close() ends idle pooled connections promptly and fails pending waits', async () => {
  const sink = await startSmtpSink();
  const pooled = transportTo(sink, { pool: true });
  await pooled.sendMail({ from: 'a@example.test', to: 'b@example.test', subject: 'keep-alive', text: 'x' });
  const pending = rejectionOf(sink.waitForMessages(5, 10_000));
  const started = Date.now();
  await sink.close();
  assert.ok(Date.now() - started < 250, `close took ${Date.now() - started} ms`);
  assert.match((await pending).message, /closed while waiting/);
  pooled.close();
});

test.run();
