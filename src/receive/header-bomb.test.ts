// Catalogue RES-06b over real SMTP sessions: no message can stall inbound mail. Header sections, fields and
// folded lines over their bounds are refused at the final dot before any parsing, with nothing stored. (An
// analysis past its wall-clock budget: analysis-budget.test.ts; a message with many signatures:
// signature-bomb.test.ts.) Every wait is bounded; outcomes are asserted, not durations.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SmtpError } from '../errors.ts';
import { MAX_CONTINUATION_LINES, MAX_FIELD_BYTES, MAX_HEADER_BYTES, MAX_HEADER_LINES } from '../mail/header-limits.ts';
import { value } from '../db/query.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import type { SmtpReply } from '../testkit/smtp-client.ts';
import { within } from '../testkit/within.ts';
import { Analyzer } from './analyzer.ts';

let s: InboundScene;
test.before(async () => {
  s = await startInboundScene();
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
const emailRows = async () => Number(await s.t.app.store.read(value('SELECT count(*) FROM emails')));

async function refused(raw: Buffer, id: string): Promise<SmtpReply> {
  const before = await emailRows();
  const reply = await within(20_000, 'the reply to the final dot', s.deliver(raw, {}));
  assert.is((await s.stored('e.message_id = ?', id)).length, 0, 'nothing stored');
  assert.is(await emailRows(), before, 'no email row at all');
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
  assert.is((await s.stored('e.message_id = ?', m.id)).length, 1);
});

test('SMTP submission refuses the same way: Analyzer.parse throws the refusal before any worker starts', async () => {
  const analyzer = new Analyzer({ dnsServers: ['127.0.0.1'], analyzeTimeout: 10_000, dkimMaxSignatures: 10, uribl: [], spamFilter: 'builtin', rspamdUrl: '' });
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

test.run();
