// Catalogue RES-06b and RES-06c over real SMTP sessions: every analysis has a wall-clock budget for its own
// work. Here the signature bound is raised (dkim_max_signatures 2000) so that a message of 1,000 costly
// signatures runs seconds, past a 2 s budget: it gets 451 4.3.0, while an ordinary message from another
// client that was on the same analyze worker is run again alone and gets 250, never 451. One shared analyze
// thread (memory profile small) puts both on one worker. Every wait is bounded; outcomes are asserted, not
// durations.
import { createHash, createPublicKey, randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { value } from '../db/query.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { Analyzer } from './analyzer.ts';
import { until, within } from '../testkit/within.ts';

let s: InboundScene;
test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_ANALYZE_TIMEOUT: '2s', MAILWRIGHT_DKIM_MAX_SIGNATURES: '2000', MAILWRIGHT_MEMORY_PROFILE: 'small' } });
  s.senderDomain('sender.example');
  s.senderDomain('slow.example');
  s.dns.set('sel._domainkey.bige.example', 'TXT', [bigExponentKey()]);
});
test.after(() => s.stop());

let n = 0;
const message = (from: string, extra: string, body: string) => {
  const id = `budget${++n}.${Date.now()}@${from.split('@')[1]}`;
  const raw = `${extra}From: <${from}>\r\nTo: Hello <hello@in.example>\r\nSubject: Test ${n}\r\nMessage-ID: <${id}>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\n${body}`;
  return { id, raw: Buffer.from(raw, 'latin1') };
};
const emailRows = async () => Number(await s.t.app.store.read(value('SELECT count(*) FROM emails')));

/**
 * Within every bound but dkim_max_signatures, which is raised here: 1,000 DKIM-Signature fields whose body
 * hash is right, so mailauth verifies each one, against a key published with a 3,072-bit public exponent
 * (OpenSSL takes any exponent up to 3,072-bit moduli): a few ms of RSA per signature, seconds in all, with
 * the worker's event loop held throughout (the key and its record come from caches, so no await gives way).
 */
function exponentBomb(): { id: string; raw: Buffer } {
  const body = 'Hello there.\r\n'; // its relaxed canonical form is itself (RFC 6376 3.4.4)
  const bh = createHash('sha256').update(body).digest('base64');
  const b = Buffer.alloc(384, 0x5a);
  b[0] = 0x10; // below the modulus, so OpenSSL does the whole exponentiation
  const signature = `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=bige.example; s=sel; h=from; bh=${bh}; b=${b.toString('base64')}\r\n`;
  return message('alice@sender.example', signature.repeat(1_000), body);
}

/** A DKIM key record whose RSA public exponent is as long as its 3,072-bit modulus. */
function bigExponentKey(): string {
  const n = randomBytes(384);
  n[0] |= 0x80;
  n[383] |= 1;
  const e = randomBytes(383);
  e[0] |= 0x40;
  e[382] |= 1;
  const key = createPublicKey({ key: { kty: 'RSA', n: n.toString('base64url'), e: e.toString('base64url') }, format: 'jwk' });
  return `v=DKIM1; k=rsa; p=${key.export({ type: 'spki', format: 'der' }).toString('base64')}`;
}

test('a message past the budget gets 451 4.3.0; an ordinary message that shared its worker gets 250, never 451', async () => {
  // Observe (not change) the analyzer the app made, to hand the bomb over only once the ordinary message is on
  // the worker, and to see that both are on one worker.
  const handed: Analyzer[] = [];
  const original = Analyzer.prototype.analyze;
  Analyzer.prototype.analyze = function (this: Analyzer, ...args: Parameters<Analyzer['analyze']>) {
    handed.push(this);
    return original.apply(this, args);
  };
  try {
    const before = await emailRows();
    // The ordinary message waits 1.2 s for its SPF record (within the budget alone), so it is still on the
    // worker when the bomb takes that worker's event loop, and its own budget, which started first, runs out
    // first: before each job was timed by its own work, it took the 451 for the bomb.
    s.dns.slow('slow.example', 1200);
    const ordinary = message('bob@slow.example', '', 'Just an ordinary message.\r\n');
    const ordinaryReply = within(40_000, 'the reply to the ordinary message', s.deliver(ordinary.raw, { from: 'bob@slow.example', localAddress: '127.0.1.2' }));
    await until(20_000, 'the ordinary message handed to the analyzer', () => handed.length >= 1);
    const bomb = exponentBomb();
    const bombReply = within(60_000, 'the reply to the bomb', s.deliver(bomb.raw, {}));
    await until(20_000, 'the bomb handed to the analyzer', () => handed.length >= 2);
    await until(5_000, 'both messages on one analyze worker', () => handed[0].stats().some((w) => w.inFlight === 2));

    const reply = await ordinaryReply;
    assert.is(reply.code, 250, reply.text);
    assert.is((await s.stored('e.message_id = ?', ordinary.id)).length, 1, 'the ordinary message is stored');
    const refused = await bombReply;
    assert.is(refused.code, 451, refused.text);
    assert.match(refused.text, /^4\.3\.0 Message analysis ran past its 2 s budget/);
    assert.is((await s.stored('e.message_id = ?', bomb.id)).length, 0, 'the bomb is not stored');
    assert.is(await emailRows(), before + 1, 'only the ordinary message was stored');

    const lines = s.t.logs.map((l) => JSON.parse(l) as { level: string; msg: string; session?: string; ip?: string });
    const warnings = lines.filter((l) => l.msg.startsWith('message analysis ran past its budget'));
    assert.is(warnings.length, 1, 'one warning, for the bomb');
    assert.is(warnings[0].level, 'warn');
    assert.is(warnings[0].ip, '127.0.0.1', "the bomb's client");
    assert.is(lines.filter((l) => l.level === 'error').length, 0, `no error logged: ${lines.filter((l) => l.level === 'error').map((l) => l.msg)}`);

    // The replaced worker serves the next message as usual, from either client.
    s.dns.slow('slow.example', 0);
    for (const localAddress of ['127.0.1.2', '127.0.0.1']) {
      const after = message('alice@sender.example', '', 'After the storm.\r\n');
      assert.is((await within(20_000, 'the reply after the bomb', s.deliver(after.raw, { localAddress }))).code, 250);
    }
  } finally {
    Analyzer.prototype.analyze = original;
    s.dns.slow('slow.example', 0);
  }
});

test.run();
