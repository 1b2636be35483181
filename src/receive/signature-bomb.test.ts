// Catalogue RES-06c over real SMTP sessions: one message cannot stall inbound analysis. The issue's message
// (1.1 MB, 500 DKIM-Signature fields each with its own l=: 19 s of CPU in mailauth before) is sent by three
// sessions of one client while another client, on another network, sends 20 ordinary messages. Only a
// bounded number of signatures is checked (dkim_max_signatures, 10 by default, and three distinct body
// hashes), so the bombs are cheap: every message gets 250, the ordinary ones within their time bound, and
// the bombs' Authentication-Results say how many signatures were checked of how many. Every wait is bounded;
// outcomes are asserted, not durations.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import type { SmtpReply } from '../testkit/smtp-client.ts';
import { within } from '../testkit/within.ts';

let s: InboundScene;
test.before(async () => {
  s = await startInboundScene();
  s.senderDomain('sender.example');
  s.senderDomain('other.example');
});
test.after(() => s.stop());

let n = 0;
const message = (from: string, extra: string, body: string) => {
  const id = `sig${++n}.${Date.now()}@${from.split('@')[1]}`;
  const raw = `${extra}From: <${from}>\r\nTo: Hello <hello@in.example>\r\nSubject: Test ${n}\r\nMessage-ID: <${id}>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\n${body}`;
  return { id, raw: Buffer.from(raw, 'latin1') };
};

/** The issue's message: 1.1 MB, 500 DKIM-Signature fields, each with its own l= within the canonical body. */
function issueBomb(): { id: string; raw: Buffer } {
  const lines = 17_500;
  const canonical = lines * 57;
  const signatures = Array.from(
    { length: 500 },
    (_, i) => `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=sig${i}.sender.example; s=s; l=${canonical - i}; h=from; bh=AAAA; b=AAAA\r\n`,
  ).join('');
  return message('alice@sender.example', signatures, 'Lorem ipsum dolor sit amet,   consectetur adipiscing elit   \r\n'.repeat(lines));
}

/** Our Authentication-Results field of a stored message (the box's hostname as authserv-id), unfolded. */
function ourAuthResults(raw: Buffer): string {
  const head = raw.toString('latin1', 0, raw.indexOf('\r\n\r\n'));
  const field = /^Authentication-Results: mx\.mailwright\.test[^]*?(?=\r\n\S)/m.exec(head);
  return (field?.[0] ?? '').replace(/\r\n\s+/g, ' ');
}

test('three sessions of the 500-signature message from one client; 20 ordinary messages from another all get 250', async () => {
  const bombs = [issueBomb(), issueBomb(), issueBomb()];
  assert.ok(bombs[0].raw.length > 1_100_000, `the issue's size: ${bombs[0].raw.length}`);
  let ordinaryDone = false;
  // Each bomb session sends its message again and again while the ordinary mail flows (at most four times).
  const bombing = bombs.map(async (b) => {
    const replies: SmtpReply[] = [];
    for (let i = 0; i < 4 && (i === 0 || !ordinaryDone); i++) replies.push(await within(60_000, 'the reply to a bomb', s.deliver(b.raw, {})));
    return replies;
  });
  const ordinary = Array.from({ length: 20 }, () => message('bob@other.example', '', 'Just an ordinary message.\r\n'));
  // Four sessions from 127.0.1.2 (another /24), five messages each, one after another.
  const sending = [0, 1, 2, 3].map(async (k) => {
    const replies: SmtpReply[] = [];
    for (const m of ordinary.slice(k * 5, k * 5 + 5)) {
      replies.push(await within(30_000, 'the reply to an ordinary message', s.deliver(m.raw, { from: 'bob@other.example', localAddress: '127.0.1.2' })));
    }
    return replies;
  });
  const ordinaryReplies = (await within(120_000, 'all 20 ordinary messages', Promise.all(sending))).flat();
  ordinaryDone = true;
  assert.equal(ordinaryReplies.map((r) => r.code), Array(20).fill(250), ordinaryReplies.map((r) => r.text).join(' | '));
  for (const m of ordinary) assert.is((await s.stored('e.message_id = ?', m.id)).length, 1, 'each ordinary message is stored');

  const bombReplies = (await Promise.all(bombing)).flat();
  assert.ok(bombReplies.length >= 3);
  for (const r of bombReplies) assert.is(r.code, 250, `a bomb is cheap now: ${r.text}`);
  for (const b of bombs) {
    const [stored] = await s.stored('e.message_id = ?', b.id);
    assert.ok(stored, 'the bomb is stored');
    assert.is(stored.raw.toString('latin1').match(/^DKIM-Signature:/gm)?.length, 500, 'the stored message keeps every signature');
    const results = ourAuthResults(stored.raw);
    const checked = results.match(/ dkim=/g)?.length ?? 0;
    assert.ok(checked >= 1 && checked <= 10, `at most 10 signatures checked: ${checked}`);
    assert.match(results, `(${checked} of 500 DKIM signatures checked)`);
  }
  const logs = s.t.logs.map((l) => JSON.parse(l) as { level: string; msg: string; dkimChecked?: string });
  assert.ok(logs.some((l) => l.msg === 'received' && /^\d+\/500$/.test(l.dkimChecked ?? '')), 'the received line says how many were checked');
  assert.is(logs.filter((l) => l.level === 'error').length, 0, 'no error logged');
});

test('a From-aligned signature below ten others is checked and passes: DKIM and DMARC pass, and the note says 10 of 12', async () => {
  const signer = s.senderDomain('aligned.example');
  const id = `aligned.${Date.now()}@aligned.example`;
  const signed = await signer.sign(`From: <carol@aligned.example>\r\nTo: Hello <hello@in.example>\r\nSubject: Aligned\r\nMessage-ID: <${id}>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\nSigned by the author's domain.\r\n`);
  // Eleven signatures of other domains added above it, as relays and lists add theirs on top.
  const others = Array.from({ length: 11 }, (_, i) => `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=relay${i}.example; s=s; h=from; bh=AAAA; b=AAAA\r\n`).join('');
  const reply = await within(30_000, 'the reply', s.deliver(Buffer.concat([Buffer.from(others), signed]), { from: 'carol@aligned.example' }));
  assert.is(reply.code, 250, reply.text);
  const [stored] = await s.stored('e.message_id = ?', id);
  const auth = JSON.parse(stored.authentication) as { dkim: { result: string; domains: string[] }; dmarc: { result: string } };
  assert.is(auth.dkim.result, 'pass');
  assert.equal(auth.dkim.domains, ['aligned.example']);
  assert.is(auth.dmarc.result, 'pass');
  assert.match(ourAuthResults(stored.raw), '(10 of 12 DKIM signatures checked)');
});

test.run();
