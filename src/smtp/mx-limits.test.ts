// The MX listener's limits, with small values so they can be reached: messages per session, the absolute
// session deadline, the idle timeout, concurrent clients. The limits per client address and the error limit
// of a session are in client-limits.test.ts.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';

// Two boxes: the counts are checked where the clocks are generous, so that a slow machine running the whole
// suite cannot reach a deadline before the count it tests; the clocks are checked on a box of their own.
const counts = suite('counts');
const clocks = suite('clocks');
let s: InboundScene;
counts.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_SMTP_MAX_MESSAGES: '2', MAILWRIGHT_SMTP_MAX_CLIENTS: '3' } });
});
counts.after(() => s.stop());
clocks.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_SMTP_SESSION_TIMEOUT: '3s', MAILWRIGHT_SMTP_IDLE_TIMEOUT: '1s' } });
});
clocks.after(() => s.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// A budget for a loaded machine, not a speed check.
const WAIT = 15_000;

async function session(): Promise<RawSmtp> {
  const c = await RawSmtp.open(s.t.smtpPort);
  await c.read(WAIT);
  await c.command('EHLO client.example', WAIT);
  return c;
}

async function sendOne(c: RawSmtp, subject: string) {
  const mail = await c.command('MAIL FROM:<a@sender.example>', WAIT);
  if (mail.code !== 250) return mail;
  await c.command(`RCPT TO:<${s.inbox.address}>`, WAIT);
  await c.command('DATA', WAIT);
  c.write(`From: a@sender.example\r\nSubject: ${subject}\r\n\r\nhi\r\n.\r\n`);
  return c.read(WAIT);
}

counts('a session may send smtp_max_messages messages, then gets 452 4.4.5 until it reconnects', async () => {
  const c = await session();
  assert.is((await sendOne(c, 'one')).code, 250);
  assert.is((await sendOne(c, 'two')).code, 250);
  const third = await sendOne(c, 'three');
  assert.is(third.code, 452);
  assert.match(third.text, /^4\.4\.5 /);
  c.close();
  const again = await session();
  assert.is((await sendOne(again, 'three')).code, 250);
  again.close();
});

clocks('a busy session is closed with 421 4.4.2 at the session deadline', async () => {
  const c = await session();
  const started = Date.now();
  let last = await c.command('NOOP');
  while (last.code === 250 && Date.now() - started < 6000) {
    await sleep(300);
    last = await c.command('NOOP');
  }
  assert.is(last.code, 421, last.text);
  assert.match(last.text, /^4\.4\.2 /);
  assert.ok(Date.now() - started >= 2500, 'not before the deadline');
  await sleep(100);
  assert.ok(c.closed, 'and the connection is closed');
});

clocks('a silent session is closed after the idle timeout', async () => {
  const c = await session();
  await sleep(1600);
  const reply = await c.read(2000);
  assert.is(reply.code, 421);
  await sleep(100);
  assert.ok(c.closed);
});

counts('more concurrent clients than smtp_max_clients get 421', async () => {
  const open = [await session(), await session(), await session()];
  const extra = await RawSmtp.open(s.t.smtpPort);
  const greeting = await extra.read();
  assert.is(greeting.code, 421);
  extra.close();
  for (const c of open) c.close();
});

counts.run();
clocks.run();
