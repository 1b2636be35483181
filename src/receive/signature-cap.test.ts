// signature-cap: what mailauth is given to check. Ordinary mail is handed over as it is (the same Buffer);
// past a bound, signatures are left out of the header section and every other byte stays as it was, in order;
// From-aligned signatures are taken first (RFC 6376 6.1); a kept signature still verifies (authenticate()).
// authenticate.ts is imported first, as in the analyze thread: dkim-keys.ts must run before mailauth loads.
import { authenticate, type AuthContext } from './authenticate.ts';
import { generateKeyPairSync } from 'node:crypto';
import { Readable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DnsLookup } from '../dns/cache.ts';
import { sign } from '../mail/sign.ts';
import { capSignatures, MAX_BODY_HASHES, MAX_SIGNATURE_BYTES, MAX_SIGNED_LOOKUPS } from './signature-cap.ts';

const records = new Map<string, unknown[]>();
const dns: DnsLookup = {
  async resolve(name, type) {
    const answer = records.get(`${type} ${name.toLowerCase()}`);
    if (answer) return answer;
    throw Object.assign(new Error(`ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  },
};
const ctx = (over: Partial<AuthContext> = {}): AuthContext => ({ ip: '192.0.2.1', helo: 'mail.sender.example', mailFrom: 'a@sender.example', hostname: 'mx.box.test', dns, ...over });
const raw = (s: string) => Buffer.from(s, 'latin1');
const BODY = 'Hello,\r\n\r\nthe body.\r\n';
const HEAD = 'From: A <a@sender.example>\r\nTo: b@box.test\r\nSubject: hi\r\n';
/** A DKIM-Signature field of domain `d` (CRLF-terminated); `tags` replace or add tags. */
const sig = (d: string, tags = '') => `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=${d}; s=s; h=from:subject; ${tags}bh=AAAA; b=AAAA\r\n`;

async function read(input: Buffer | Readable): Promise<Buffer> {
  if (Buffer.isBuffer(input)) return input;
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

test('ordinary mail is handed over as it is: the same Buffer, nothing counted as left out', () => {
  const one = raw(`${sig('sender.example')}${HEAD}\r\n${BODY}`);
  const unsigned = raw(`${HEAD}\r\n${BODY}`);
  for (const m of [one, unsigned]) {
    const c = capSignatures(m, 10);
    assert.is(c.input, m);
    assert.is(c.checked, c.signatures);
    assert.is(c.arcLeftOut, false);
  }
});

test('past dkim_max_signatures the later signatures are left out; every other byte stays, in order', async () => {
  const fields = Array.from({ length: 12 }, (_, i) => sig(`relay${i}.example`));
  // A folded signature and bare LF line ends among them: the cut follows mailauth's own idea of a field.
  fields[3] = 'DKIM-Signature: v=1; a=rsa-sha256; d=relay3.example;\n\ts=s; h=from; bh=AAAA;\r\n b=AAAA\n';
  const m = raw(`Received: x\r\n${fields.join('')}${HEAD}X-Last: 1\n\r\n${BODY}`);
  const c = capSignatures(m, 10);
  assert.is(c.signatures, 12);
  assert.is(c.checked, 10);
  assert.is((await read(c.input)).toString('latin1'), `Received: x\r\n${fields.slice(0, 10).join('')}${HEAD}X-Last: 1\n\r\n${BODY}`);
  assert.is(capSignatures(m, 12).input, m, 'within the bound: unchanged');
});

test('signatures of the From domain (or its parent or subdomain) are taken first', async () => {
  const others = Array.from({ length: 4 }, (_, i) => sig(`relay${i}.example`));
  const m = raw(`${others.join('')}${sig('mail.sender.example')}${sig('other.example')}${sig('example')}${HEAD}\r\n${BODY}`);
  const kept = (await read(capSignatures(m, 2).input)).toString('latin1');
  assert.equal(kept.match(/d=[a-z0-9.]+/g), ['d=mail.sender.example', 'd=example'], 'From-aligned (relaxed) first; header order among them');
  assert.ok(kept.endsWith(`${HEAD}\r\n${BODY}`));
});

test(`at most ${MAX_BODY_HASHES} distinct body hashes (canonicalization, hash, l=) among the signatures checked`, async () => {
  const fields = [sig('a.example', 'l=10; '), sig('b.example', 'l=11; '), sig('c.example', 'c=simple/simple; '), sig('d.example', 'l=12; '), sig('e.example', 'l=10; '), sig('f.example')];
  const m = raw(`${fields.join('')}${HEAD}\r\n${BODY}`);
  const c = capSignatures(m, 10);
  const kept = (await read(c.input)).toString('latin1').match(/d=[a-z]\.example/g);
  // a, b, c make three keys; d would be a fourth; e shares a's key; f (relaxed, no l=) would be a fourth.
  assert.equal(kept, ['d=a.example', 'd=b.example', 'd=c.example', 'd=e.example']);
  assert.is(c.checked, 4);
});

test('signed-field look-ups are bounded: a signature whose h= times the fields passes the bound, or over 8 KiB, is left out', async () => {
  const filler = 'X-F: 1\r\n'.repeat(600);
  const names = Array.from({ length: 2000 }, (_, i) => `x${i % 10}`).join(':');
  assert.ok(2000 * 600 > MAX_SIGNED_LOOKUPS && names.length < MAX_SIGNATURE_BYTES);
  const costly = `DKIM-Signature: v=1; a=rsa-sha256; d=costly.example; s=s; h=${names}; bh=AAAA; b=AAAA\r\n`;
  const huge = `DKIM-Signature: v=1; a=rsa-sha256; d=huge.example; s=s; h=from; z=${'z'.repeat(MAX_SIGNATURE_BYTES)}; bh=AAAA; b=AAAA\r\n`;
  const m = raw(`${costly}${huge}${sig('fine.example')}${filler}${HEAD}\r\n${BODY}`);
  const c = capSignatures(m, 10);
  assert.equal([c.signatures, c.checked], [3, 1]);
  assert.equal((await read(c.input)).toString('latin1').match(/d=[a-z]+\.example/g), ['d=fine.example']);
  // Nothing left to check: the header section alone.
  const none = capSignatures(raw(`${costly}${filler}${HEAD}\r\n${BODY}`), 10);
  assert.equal([none.signatures, none.checked], [1, 0]);
  assert.is((await read(none.input)).toString('latin1'), `${filler}${HEAD}\r\n`);
});

test('an ARC set whose last ARC-Message-Signature passes the look-up bound is left out whole', async () => {
  const filler = 'X-F: 1\r\n'.repeat(600);
  const names = Array.from({ length: 2000 }, (_, i) => `x${i % 10}`).join(':');
  const arc = `ARC-Seal: i=1; a=rsa-sha256; cv=none; d=fwd.example; s=s; b=AAAA\r\nARC-Message-Signature: i=1; a=rsa-sha256; c=relaxed/relaxed; d=fwd.example; s=s; h=${names}; bh=AAAA; b=AAAA\r\nARC-Authentication-Results: i=1; fwd.example; spf=pass\r\n`;
  const m = raw(`${arc}${filler}${HEAD}\r\n${BODY}`);
  const c = capSignatures(m, 10);
  assert.is(c.arcLeftOut, true);
  assert.is((await read(c.input)).toString('latin1'), `${filler}${HEAD}\r\n`);
  const result = await authenticate(m, ctx());
  assert.is(result.verdicts.arc.result, 'none');
  assert.match(result.headers, /^Authentication-Results: mx\.box\.test \(ARC not checked\);/m);
  // A short h= is within the bound: the set is mailauth's to judge.
  const fine = raw(`${arc.replace(names, 'from')}${filler}${HEAD}\r\n${BODY}`);
  assert.is(capSignatures(fine, 10).arcLeftOut, false);
});

test('a kept signature still verifies, and the Authentication-Results say how many were checked of how many', async () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  records.set('TXT s1._domainkey.sender.example', [[`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]]);
  records.set('TXT _dmarc.sender.example', [['v=DMARC1; p=reject']]);
  const signed = await sign(raw(`${HEAD}\r\n${BODY}`), { domain: 'sender.example', selector: 's1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() });
  const others = Array.from({ length: 14 }, (_, i) => sig(`relay${i}.example`)).join('');
  const result = await authenticate(Buffer.concat([raw(others), signed]), ctx());
  assert.is(result.verdicts.dkim.result, 'pass');
  assert.equal(result.verdicts.dkim.domains, ['sender.example']);
  assert.is(result.verdicts.dmarc.result, 'pass');
  assert.equal(result.unchecked, { checked: 10, of: 15, arc: false });
  const ours = result.headers.slice(result.headers.indexOf('Authentication-Results:'));
  assert.match(ours, /^Authentication-Results: mx\.box\.test \(10 of 15 DKIM signatures checked\);/);
  assert.is(ours.match(/ dkim=/g)?.length, 10);
  // Within the bound nothing is said.
  const plain = await authenticate(signed, ctx());
  assert.is(plain.unchecked, undefined);
  assert.not.match(plain.headers, /checked/);
});

test.run();
