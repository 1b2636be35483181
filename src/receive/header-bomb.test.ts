// Catalogue RES-06b over real SMTP sessions: no message can stall inbound mail. Header sections, fields and
// folded lines over their bounds are refused at the final dot before any parsing, with nothing stored; an
// analysis that runs past its wall-clock budget (here 2 s) gets 451 4.3.0 and its worker is replaced, while
// an ordinary message in another session is still accepted. Every wait is bounded; outcomes are asserted,
// not durations.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SmtpError } from '../errors.ts';
import { MAX_CONTINUATION_LINES, MAX_FIELD_BYTES, MAX_HEADER_BYTES, MAX_HEADER_LINES } from '../mail/header-limits.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import type { SmtpReply } from '../testkit/smtp-client.ts';
import { Analyzer } from './analyzer.ts';

let s: InboundScene;
test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_ANALYZE_TIMEOUT: '2s' } });
  s.senderDomain('sender.example');
});
test.after(() => s.stop());

let n = 0;
/** A message with `extra` header lines (CRLF-terminated) before the usual ones. */
const message = (extra: string, body = 'Hello there.\r\n') => {
  const id = `bomb${++n}.${Date.now()}@sender.example`;
  const raw = `${extra}From: Alice <alice@sender.example>\r\nTo: Hello <hello@in.example>\r\nSubject: Test ${n}\r\nMessage-ID: <${id}>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\n${body}`;
  return { id, raw: Buffer.from(raw, 'latin1') };
};
const emailRows = () => (s.readDb().prepare('SELECT count(*) AS n FROM emails').get() as { n: number }).n;

/** `promise`, or a failure naming `what` after `ms`: no test waits without a bound. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function refused(raw: Buffer, id: string): Promise<SmtpReply> {
  const before = emailRows();
  const reply = await within(20_000, 'the reply to the final dot', s.deliver(raw, {}));
  assert.is(s.stored('e.message_id = ?', id).length, 0, 'nothing stored');
  assert.is(emailRows(), before, 'no email row at all');
  return reply;
}

test('the RES-06b bomb, one field with 100,000 continuation lines: 554 5.6.0 at the final dot, nothing stored', async () => {
  const m = message(`X-Bomb: a\r\n${' b\r\n'.repeat(100_000)}`);
  assert.ok(m.raw.length > 400_000);
  const reply = await refused(m.raw, m.id);
  assert.is(reply.code, 554, reply.text);
  assert.is(reply.text, `5.6.0 Message refused: the X-Bomb header field has more than ${MAX_CONTINUATION_LINES} continuation lines`);
});

test('a header section over 1 MiB: 552 5.3.4, nothing stored', async () => {
  const field = (i: number) => `X-Fill-${String(i).padStart(2, '0')}: ${'f'.repeat(60_000)}\r\n`;
  const m = message(Array.from({ length: Math.ceil(MAX_HEADER_BYTES / 60_000) }, (_, i) => field(i)).join(''));
  const reply = await refused(m.raw, m.id);
  assert.is(reply.code, 552, reply.text);
  assert.is(reply.text, `5.3.4 Message header too big: the header section is over ${MAX_HEADER_BYTES} bytes`);
});

test('one header field over 64 KiB: 554 5.6.0 naming it, nothing stored', async () => {
  const m = message(`X-Huge: ${'h'.repeat(MAX_FIELD_BYTES)}\r\n`);
  const reply = await refused(m.raw, m.id);
  assert.is(reply.code, 554, reply.text);
  assert.is(reply.text, `5.6.0 Message refused: the X-Huge header field is over ${MAX_FIELD_BYTES} bytes`);
});

test('more than 10,000 header lines of short fields: 552 5.3.4, nothing stored', async () => {
  const m = message('X-Line: 1\r\n'.repeat(MAX_HEADER_LINES));
  const reply = await refused(m.raw, m.id);
  assert.is(reply.code, 552, reply.text);
  assert.is(reply.text, `5.3.4 Message header too big: the header section has more than ${MAX_HEADER_LINES} lines`);
});

test('a header just within every bound is accepted and stored', async () => {
  // 1,000 continuation lines in one field and about 9,000 lines in all, under 1 MiB.
  const m = message(`X-Folded: a\r\n${' b\r\n'.repeat(MAX_CONTINUATION_LINES)}${'X-Line: 1\r\n'.repeat(8_000)}`);
  const reply = await within(20_000, 'the reply to the final dot', s.deliver(m.raw, {}));
  assert.is(reply.code, 250, reply.text);
  assert.is(s.stored('e.message_id = ?', m.id).length, 1);
});

test('SMTP submission refuses the same way: Analyzer.parse throws the refusal before any worker starts', async () => {
  const analyzer = new Analyzer({ dnsServers: ['127.0.0.1'], analyzeTimeout: 10_000 });
  try {
    for (const [raw, code, status] of [
      [message(`X-Bomb: a\r\n${' b\r\n'.repeat(100_000)}`).raw, 554, '5.6.0'],
      [message('X-Line: 1\r\n'.repeat(MAX_HEADER_LINES)).raw, 552, '5.3.4'],
    ] as const) {
      const err = await analyzer.parse(raw).then(
        () => assert.unreachable('parsed a header bomb'),
        (e: unknown) => e,
      );
      assert.instance(err, SmtpError);
      assert.is((err as SmtpError).responseCode, code);
      assert.ok((err as SmtpError).message.startsWith(`${status} `), (err as SmtpError).message);
    }
    assert.equal(analyzer.stats(), [], 'no worker was started for a refused message');
  } finally {
    await analyzer.close();
  }
});

/**
 * Within every header bound and still slow: 2,000 DKIM-Signature fields, each with its own l=, make mailauth
 * run 2,000 relaxed body hashes over a 620 KB body (about 1.2 GB of canonicalisation: many seconds). l= stays
 * within the canonical body (57 bytes a line), so mailauth has nothing to print about a short body.
 */
function signatureAmplifier(): { id: string; raw: Buffer } {
  const lines = 10_000;
  const canonical = lines * 57;
  const signatures = Array.from(
    { length: 2_000 },
    (_, i) => `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=sig${i}.sender.example; s=s; l=${canonical - i}; h=from; bh=AAAA; b=AAAA\r\n`,
  ).join('');
  return message(signatures, 'Lorem ipsum dolor sit amet,   consectetur adipiscing elit   \r\n'.repeat(lines));
}

test('two messages past the analysis budget get 451 4.3.0 and a warning; an ordinary message beside them gets 250', async () => {
  // Observe (not change) the analyzer the app made: the ordinary message must go in only once both bombs are
  // in the workers, so it lands on a worker that a bomb is holding.
  let analyzing = 0;
  const original = Analyzer.prototype.analyze;
  Analyzer.prototype.analyze = function (this: Analyzer, ...args: Parameters<Analyzer['analyze']>) {
    analyzing++;
    return original.apply(this, args);
  };
  try {
    const before = emailRows();
    const bombs = [signatureAmplifier(), signatureAmplifier()];
    const replies = bombs.map((b) => within(40_000, 'the reply to a bomb', s.deliver(b.raw, {})));
    await within(20_000, 'both bombs handed to the analyzer', (async () => {
      while (analyzing < 2) await new Promise((r) => setTimeout(r, 20));
    })());

    const ordinary = message('', 'Just an ordinary message.\r\n');
    const reply = await within(30_000, 'the reply to the ordinary message', s.deliver(ordinary.raw, {}));
    assert.is(reply.code, 250, reply.text);
    assert.is(s.stored('e.message_id = ?', ordinary.id).length, 1, 'the ordinary message is stored');

    for (const bombReply of await Promise.all(replies)) {
      assert.is(bombReply.code, 451, bombReply.text);
      assert.match(bombReply.text, /^4\.3\.0 Message analysis ran past its 2 s budget/);
    }
    for (const b of bombs) assert.is(s.stored('e.message_id = ?', b.id).length, 0, 'a bomb is not stored');
    assert.is(emailRows(), before + 1, 'only the ordinary message was stored');

    const lines = s.t.logs.map((l) => JSON.parse(l) as { level: string; msg: string; session?: string });
    const warnings = lines.filter((l) => l.msg.startsWith('message analysis ran past its budget'));
    assert.is(warnings.length, 2, 'one warning per bomb');
    for (const w of warnings) {
      assert.is(w.level, 'warn');
      assert.type(w.session, 'string');
    }
    assert.is(lines.filter((l) => l.level === 'error').length, 0, `no error logged: ${lines.filter((l) => l.level === 'error').map((l) => l.msg)}`);

    // The replaced workers serve the next message as usual.
    const after = message('', 'After the storm.\r\n');
    assert.is((await within(20_000, 'the reply after the bombs', s.deliver(after.raw, {}))).code, 250);
  } finally {
    Analyzer.prototype.analyze = original;
  }
});

test.run();
