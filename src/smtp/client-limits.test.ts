// The per-client limits (catalogue RES-04b, RES-15): the counters and delays of client-limits.ts, then over real
// sockets on loopback (all of 127.0.0.0/8 is local, so 127.0.0.9 is "another client"): connections per address,
// the connection rate, the error limit of a session, and submission's limit before AUTH.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect } from 'node:net';
import { freePort, startTestApp, type TestApp } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { firstReply, RawSmtp, type SmtpReply } from '../testkit/smtp-client.ts';
import { ANVIL_RATE_TIME_UNIT, ClientTable, clientAddress, errorSleep, ReplyCount, SMTPD_HARD_ERROR_LIMIT } from './client-limits.ts';

let s: InboundScene;
let r: TestApp;
test.before(async () => {
  // The connection rate is off here: the 220 connections of RES-04b and the reconnections after them would
  // otherwise meet it first; the rate has the app `r` below to itself.
  s = await startInboundScene({ env: { MAILWRIGHT_SMTP_CONNECTION_RATE_PER_IP: '0', MAILWRIGHT_SUBMISSION_PORT: String(await freePort()) } });
  r = await startTestApp({ env: { MAILWRIGHT_SMTP_CONNECTION_RATE_PER_IP: '5', MAILWRIGHT_SUBMISSION_PORT: String(await freePort()) } });
});
test.after(async () => {
  await s.stop();
  await r.stop();
});

const WAIT = 5_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ------------------------------------------------------------------------------------------------ arithmetic

test('errors 11 to 19 wait longer each, 3 s in all; the 20th ends the session', () => {
  assert.equal([1, 10, 11, 12, 13, 14, 15, 19].map(errorSleep), [0, 0, 100, 200, 300, 400, 400, 400]);
  let total = 0;
  for (let n = 1; n < SMTPD_HARD_ERROR_LIMIT; n++) total += errorSleep(n);
  assert.is(total, 3_000);
  const count = new ReplyCount(null);
  const error = { code: 550, delivered: false, authenticated: false };
  for (let n = 1; n < 15; n++) count.judge(error);
  assert.equal(count.judge({ code: 250, delivered: true, authenticated: false }), { delay: 0 }, 'a delivery resets the count');
  for (let n = 1; n < 20; n++) assert.ok('delay' in count.judge(error));
  assert.equal(count.judge(error), { end: 'Too many errors, closing connection' });
});

test('before AUTH: the 10th counted reply ends the session; 220 and 334 are not counted, nothing after AUTH is', () => {
  const count = new ReplyCount(10);
  const reply = (code: number, authenticated = false) => count.judge({ code, delivered: false, authenticated });
  for (let n = 1; n < 10; n++) assert.equal(reply(250), { delay: 0 });
  assert.equal(reply(220), { delay: 0 });
  assert.equal(reply(334), { delay: 0 });
  assert.equal(reply(250, true), { delay: 0 });
  assert.ok('end' in reply(535));
});

test('one address: IPv4-mapped IPv6 is the IPv4 client', () => {
  assert.is(clientAddress('::ffff:192.0.2.7'), '192.0.2.7');
  assert.is(clientAddress('::FFFF:192.0.2.7'), '192.0.2.7');
  assert.is(clientAddress('2001:DB8::1'), '2001:db8::1');
  const table = new ClientTable({ maxOpen: 1, ratePerMinute: 0, maxOpenPerNetwork: 50, maxTotal: 200, reserved: 40 });
  assert.ok(table.admit('a', clientAddress('::ffff:192.0.2.7'), 0).ok);
  assert.not.ok(table.admit('b', clientAddress('192.0.2.7'), 0).ok);
});

test('the table counts open connections exactly, the rate per window, and forgets idle addresses', () => {
  const table = new ClientTable({ maxOpen: 2, ratePerMinute: 3, maxOpenPerNetwork: 50, maxTotal: 100_000, reserved: 0 });
  assert.ok(table.admit('a', '192.0.2.1', 0).ok);
  assert.ok(table.admit('b', '192.0.2.1', 1).ok);
  const third = table.admit('c', '192.0.2.1', 2);
  assert.equal(third, { ok: false, status: '4.7.0', reason: 'Too many connections from your address (2 open), try again later', report: true });
  table.release('c'); // never admitted: nothing to give back
  table.release('a');
  table.release('a'); // twice: once
  assert.is(table.openFrom('192.0.2.1'), 1);
  const overRate = table.admit('d', '192.0.2.1', 3);
  assert.not.ok(overRate.ok, 'the 4th connection of the minute, refused ones counted');
  assert.is(overRate.ok || overRate.report, false, 'reported once a window');
  assert.ok(table.admit('e', '192.0.2.1', ANVIL_RATE_TIME_UNIT).ok, 'a new window');
  for (let i = 0; i < 10_000; i++) {
    const id = `x${i}`;
    table.admit(id, `10.0.${i >> 8}.${i & 255}`, 1_000);
    table.release(id);
  }
  assert.is(table.size, 10_001);
  table.admit('f', '192.0.2.2', 3 * ANVIL_RATE_TIME_UNIT);
  assert.is(table.size, 2, 'the idle ones are gone: 192.0.2.1 (still open) and 192.0.2.2 are left');
});

// ------------------------------------------------------------------------------------------------ sockets

const dial = (port: number, localAddress: string) => firstReply(port, localAddress, WAIT);

test('220 connections from one address held open: 20 get 220, the rest 421 4.7.0; others still deliver; no slot leaks', async () => {
  const port = s.t.smtpPort;
  const held = await Promise.all(Array.from({ length: 220 }, () => dial(port, '127.0.0.9')));
  const greeted = held.filter((c) => c.code === 220);
  const refused = held.filter((c) => c.code === 421);
  assert.is(greeted.length, 20);
  assert.is(refused.length, 200);
  assert.match(refused[0].line, /^421 4\.7\.0 mx\.mailwright\.test Too many connections from your address \(20 open\)/);
  const reply = await s.deliver('From: alice@sender.example\r\nSubject: still open\r\n\r\nhi\r\n', {});
  assert.is(reply.code, 250, reply.text);
  for (const c of held) c.socket.destroy();

  // Once the server has seen them close, 127.0.0.9 has exactly its 20 again: none leaked, none counted twice.
  let again: Awaited<ReturnType<typeof dial>>[] = [];
  for (const started = Date.now(); Date.now() - started < WAIT; await sleep(100)) {
    again = await Promise.all(Array.from({ length: 21 }, () => dial(port, '127.0.0.9')));
    if (again.filter((c) => c.code === 220).length === 20) break;
    for (const c of again) c.socket.destroy();
  }
  assert.equal(again.map((c) => c.code).sort(), [...Array(20).fill(220), 421]);
  for (const c of again) c.socket.destroy();
});

test('however a session ends, its slot comes back: QUIT, reset, a talker before the greeting, STARTTLS left unfinished', async () => {
  const port = s.t.smtpPort;
  const from = '127.0.0.10';
  for (let round = 0; round < 2; round++) {
    const sessions = await Promise.all(Array.from({ length: 20 }, () => dial(port, from)));
    assert.ok(sessions.every((c) => c.code === 220), `round ${round}: all 20 greeted`);
    sessions.forEach((c, i) => {
      if (i % 3 === 0) c.socket.end('QUIT\r\n');
      else if (i % 3 === 1) c.socket.resetAndDestroy();
      else c.socket.end('EHLO x\r\nSTARTTLS\r\n'); // then FIN in the middle of the handshake
    });
    await sleep(300);
  }
  const early = connect({ port, host: '127.0.0.1', localAddress: from });
  early.on('error', () => undefined);
  early.write('EHLO too.soon\r\n');
  await sleep(300);
  early.destroy();
  await sleep(200);
  const last = await Promise.all(Array.from({ length: 21 }, () => dial(port, from)));
  assert.equal(last.map((c) => c.code).sort(), [...Array(20).fill(220), 421]);
  for (const c of last) c.socket.destroy();
});

test('a client over smtp_connection_rate_per_ip a minute gets 421 4.7.0; the other listener counts its own', async () => {
  for (let i = 0; i < 5; i++) {
    const c = await dial(r.smtpPort, '127.0.0.11');
    assert.is(c.code, 220, `connection ${i + 1}`);
    c.socket.destroy();
  }
  const sixth = await dial(r.smtpPort, '127.0.0.11');
  assert.match(sixth.line, /^421 4\.7\.0 mx\.mailwright\.test Too many connections from your address \(over 5 a minute\)/);
  sixth.socket.destroy();
  const submission = await dial(r.submissionPort!, '127.0.0.11');
  assert.is(submission.code, 220);
  submission.socket.destroy();
  const other = await dial(r.smtpPort, '127.0.0.12');
  assert.is(other.code, 220);
  other.socket.destroy();
});

async function mxSession(): Promise<RawSmtp> {
  const c = await RawSmtp.open(s.t.smtpPort);
  assert.is((await c.read(WAIT)).code, 220);
  assert.is((await c.command('EHLO client.example', WAIT)).code, 250);
  return c;
}

async function closed(c: RawSmtp): Promise<boolean> {
  for (const started = Date.now(); !c.closed && Date.now() - started < WAIT; ) await sleep(20);
  return c.closed;
}

const tooManyErrors = (reply: SmtpReply) => reply.code === 421 && /^4\.7\.0 mx\.mailwright\.test Too many errors/.test(reply.text);

test('1,000 RCPTs to unknown local addresses pipelined: 19 refusals in order, delayed after the 10th, then 421', async () => {
  const c = await mxSession();
  const rcpts = Array.from({ length: 1000 }, (_, i) => `RCPT TO:<nobody${i + 1}@${s.domain.name}>\r\n`);
  const started = Date.now();
  c.write(`MAIL FROM:<probe@sender.example>\r\n${rcpts.join('')}`);
  assert.is((await c.read(WAIT)).code, 250);
  const times: number[] = [];
  for (let n = 1; n < 20; n++) {
    const reply = await c.read(WAIT);
    times.push(Date.now() - started);
    assert.is(reply.code, 550, reply.text);
    assert.ok(reply.text.includes(`<nobody${n}@${s.domain.name}>`), `reply ${n} answers RCPT ${n}: ${reply.text}`);
  }
  const last = await c.read(WAIT);
  assert.ok(tooManyErrors(last), `${last.code} ${last.text}`);
  const elapsed = Date.now() - started;
  assert.ok(times[9] < 1_000, `the first 10 errors are not delayed (${times[9]} ms)`);
  assert.ok(elapsed >= 2_900 && elapsed < 10_000, `3 s of delays in all: ${elapsed} ms`);
  assert.ok(await closed(c), 'and the connection is closed');
  await c.read(300).then(
    (extra) => assert.unreachable(`nothing after the 421: ${extra.code} ${extra.text}`),
    () => undefined,
  );
});

test("smtp-server's own error replies count: 20 RCPTs without MAIL get 503 nineteen times, then 421", async () => {
  const c = await mxSession();
  for (let n = 1; n < 20; n++) assert.is((await c.command(`RCPT TO:<${s.inbox.address}>`, WAIT)).code, 503);
  const last = await c.command(`RCPT TO:<${s.inbox.address}>`, WAIT);
  assert.ok(tooManyErrors(last), `${last.code} ${last.text}`);
  assert.ok(await closed(c));
});

test('20 unknown commands: the session is closed with 421 before the 20th (smtp-server ends it at the 10th)', async () => {
  const c = await mxSession();
  const codes: number[] = [];
  for (let n = 1; n <= 20 && !c.closed; n++) {
    const reply = await c.command(`XYZZY${n}`, WAIT);
    codes.push(reply.code);
    if (reply.code === 421) break;
  }
  assert.equal(codes, [...Array(9).fill(500), 421]);
  assert.ok(await closed(c));
});

test('a delivered message resets the count: 15 errors, a 250 after DATA, then 19 more errors before the 421', async () => {
  const c = await mxSession();
  const unknown = (n: number) => c.command(`RCPT TO:<stranger${n}@${s.domain.name}>`, WAIT);
  assert.is((await c.command('MAIL FROM:<probe@sender.example>', WAIT)).code, 250);
  for (let n = 1; n <= 15; n++) assert.is((await unknown(n)).code, 550);
  assert.is((await c.command(`RCPT TO:<${s.inbox.address}>`, WAIT)).code, 250);
  assert.is((await c.command('DATA', WAIT)).code, 354);
  c.write('From: probe@sender.example\r\nSubject: reset\r\n\r\nhi\r\n.\r\n');
  assert.is((await c.read(30_000)).code, 250);
  assert.is((await c.command('MAIL FROM:<probe@sender.example>', WAIT)).code, 250);
  for (let n = 1; n < 20; n++) assert.is((await unknown(100 + n)).code, 550, `error ${n} after the delivery`);
  assert.ok(tooManyErrors(await unknown(200)));
  assert.ok(await closed(c));
});

test('submission: a session that never authenticates is closed at its 10th command, in clear or after STARTTLS', async () => {
  const port = s.t.submissionPort!;
  const clear = await RawSmtp.open(port);
  await clear.read(WAIT);
  const codes: number[] = [];
  for (let n = 1; n <= 12 && !clear.closed; n++) {
    const reply = await clear.command(n === 1 ? 'EHLO client.example' : 'NOOP', WAIT);
    codes.push(reply.code);
    if (reply.code === 421) assert.match(reply.text, /^4\.7\.0 .* Too many commands without authentication/);
    if (reply.code === 421) break;
  }
  assert.equal(codes, [...Array(9).fill(250), 421]);
  assert.ok(await closed(clear));

  const tls = await RawSmtp.open(port);
  await tls.read(WAIT);
  await tls.command('EHLO client.example', WAIT);
  assert.is((await tls.command('STARTTLS', WAIT)).code, 220);
  await tls.startTls();
  const after: number[] = [];
  for (let n = 1; n <= 12 && !tls.closed; n++) {
    const reply = await tls.command(n % 2 ? 'EHLO client.example' : 'MAIL FROM:<a@b.example>', WAIT);
    after.push(reply.code);
    if (reply.code === 421) break;
  }
  assert.equal(after, [250, 530, 250, 530, 250, 530, 250, 530, 421], 'EHLO before STARTTLS was the 1st');
  assert.ok(await closed(tls));
});

test.run();
