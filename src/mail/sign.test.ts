// sign: what a receiver checks. The public key is published in the test DNS server and every signature is
// verified by mailauth's verifier through the project's resolver, as a receiving MX would.
import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dkimName, dkimValue } from '../dns/records.ts';
import { createResolver } from '../dns/resolver.ts';
import { startDnsServer } from '../testkit/dns-server.ts';
import { assertWireSafe, compose, type ComposeInput } from './compose.ts';
import { sign, SIGNED_HEADERS, SignError, type DkimKey } from './sign.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'der' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const KEY: DkimKey = { domain: 'example.com', selector: 'mwtest2024', privateKey };
const dns = await startDnsServer();
dns.add(dkimName(KEY), 'TXT', dkimValue(publicKey.toString('base64')));
const resolver = (name: string, type: string) => createResolver([dns.address]).resolve(name, type);

test.after(() => dns.close());

function input(over: Partial<ComposeInput> = {}): ComposeInput {
  return {
    messageId: '01JSIGNTEST@example.com',
    date: Date.UTC(2024, 9, 1),
    from: { name: 'Sender', address: 'news@example.com' },
    to: [{ address: 'rcpt@example.net' }],
    cc: [{ address: 'cc@example.net' }],
    replyTo: [{ address: 'reply@example.com' }],
    subject: 'Hello signed world',
    text: 'Hello there, this body is signed.',
    headers: {
      'List-Unsubscribe': '<https://box.example.com/u/abc>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      'List-Id': 'News <news.example.com>',
      'Feedback-ID': 'c1:news:mailwright',
      'X-Entity-Ref-ID': 'ref-1',
    },
    attachments: [],
    inReplyTo: 'parent@example.net',
    references: ['parent@example.net'],
    ...over,
  };
}

async function verify(message: Buffer) {
  const { results } = await dkimVerify(message, { resolver } as Parameters<typeof dkimVerify>[1]);
  assert.is(results.length, 1, 'one signature');
  return results[0]!;
}

/** The DKIM-Signature tags of a signed message, from its first (unfolded) header. */
function tags(signed: Buffer): Map<string, string> {
  const header = signed.toString('latin1').split(/\r\n(?![ \t])/)[0]!;
  assert.match(header, /^DKIM-Signature:/);
  const value = header.slice('DKIM-Signature:'.length).replace(/\s+/g, '');
  return new Map(value.split(';').filter(Boolean).map((t) => [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)]));
}

test('a signed message verifies at the receiver, h= covering both List-Unsubscribe headers', async () => {
  const signed = await sign(await compose(input()), KEY);
  const result = await verify(signed);
  assert.is(result.status.result, 'pass', result.status.comment);
  assert.is(result.signingDomain, 'example.com');
  assert.is(result.selector, 'mwtest2024');
  // The header names the verifier hashed (mailauth reports them; its index.d.ts does not declare the field).
  const seen = (result as unknown as { signingHeaders?: { keys: string } }).signingHeaders?.keys ?? '';
  const h = seen.toLowerCase().split(/:\s*/);
  assert.ok(h.includes('list-unsubscribe-post'), h.join(' '));
  assert.ok(h.includes('list-unsubscribe'), h.join(' '));
});

test('signature shape: a=rsa-sha256, c=relaxed/relaxed, d=, s=, t=, no l=, h= lists every identity header', async () => {
  const before = Math.floor(Date.now() / 1000);
  const signed = await sign(await compose(input()), KEY);
  const t = tags(signed);
  assert.is(t.get('a'), 'rsa-sha256');
  assert.is(t.get('c'), 'relaxed/relaxed');
  assert.is(t.get('d'), 'example.com');
  assert.is(t.get('s'), 'mwtest2024');
  assert.not.ok(t.has('l'), 'no l= (RFC 6376 8.2)');
  assert.not.ok(t.has('x'), 'no x=: a message still queued days later must verify');
  const signedAt = Number(t.get('t'));
  assert.ok(signedAt >= before && signedAt <= Math.floor(Date.now() / 1000), `t=${t.get('t')}`);
  const h = new Set(t.get('h')!.toLowerCase().split(':'));
  for (const name of SIGNED_HEADERS) assert.ok(h.has(name.toLowerCase()), `h= lacks ${name}: ${t.get('h')}`);
  assert.not.ok(h.has('x-entity-ref-id'), 'only the listed headers are signed');
  assert.is(h.size, SIGNED_HEADERS.length, 'each header once');
});

test('h= names only the headers the message has', async () => {
  const signed = await sign(await compose(input({ headers: {}, cc: [], replyTo: [], inReplyTo: undefined, references: undefined })), KEY);
  const h = new Set(tags(signed).get('h')!.toLowerCase().split(':'));
  for (const absent of ['cc', 'reply-to', 'in-reply-to', 'references', 'list-unsubscribe', 'list-unsubscribe-post', 'list-id', 'feedback-id']) {
    assert.not.ok(h.has(absent), `h= names absent ${absent}`);
  }
  for (const present of ['from', 'to', 'subject', 'date', 'message-id', 'mime-version', 'content-type']) assert.ok(h.has(present), present);
  assert.is((await verify(signed)).status.result, 'pass');
});

test('the output is one DKIM-Signature header, CRLF, then exactly the input bytes', async () => {
  const raw = await compose(input());
  const signed = await sign(raw, KEY);
  const head = signed.subarray(0, signed.length - raw.length);
  assert.ok(signed.subarray(signed.length - raw.length).equals(raw), 'the message is unchanged');
  const text = head.toString('latin1');
  assert.match(text, /^DKIM-Signature: /);
  assert.ok(text.endsWith('\r\n'), 'ends with CRLF');
  // One field: every further line is a continuation (RFC 5322 2.2.3).
  const lines = text.slice(0, -2).split('\r\n');
  assert.ok(lines.slice(1).every((l) => /^[ \t]/.test(l)), text);
  assertWireSafe(signed);
});

test('tampering after signing fails: one body byte, or the Subject', async () => {
  const signed = (await sign(await compose(input()), KEY)).toString('latin1');
  assert.ok(signed.includes('this body is signed'));
  const body = await verify(Buffer.from(signed.replace('this body is signed', 'this body is signet'), 'latin1'));
  assert.is(body.status.result, 'neutral');
  assert.is(body.status.comment, 'body hash did not verify');
  assert.ok(signed.includes('\r\nSubject: Hello signed world\r\n'));
  const subject = await verify(Buffer.from(signed.replace('Subject: Hello signed world', 'Subject: Hello signed w0rld'), 'latin1'));
  assert.is(subject.status.result, 'fail');
  assert.is(subject.status.comment, 'bad signature');
});

test('a message with lone dots, bare CR/LF, trailing spaces, 8-bit text and a 50 KB line verifies', async () => {
  const text = `.\n..\r\n.\rx\n${'L'.repeat(50_000)}\ntrailing   \r\nÜnïcödé ✓\n.\n`;
  const html = `<p>${'y'.repeat(50_000)}</p>\n.\n`;
  const signed = await sign(await compose(input({ text, html })), KEY);
  assertWireSafe(signed);
  const result = await verify(signed);
  assert.is(result.status.result, 'pass', result.status.comment);
});

test('a bad key throws SignError naming the selector; nothing is signed', async () => {
  const raw = await compose(input());
  const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256', privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } }).privateKey;
  const cases: Array<[string, RegExp]> = [
    ['not a key', /DECODER/],
    [privateKey.replace(/[A-Za-z](?=[^\n]*\n-----END)/, '!'), /DECODER|asn1|base64/i],
    // The cause is carried, not just "no signature": an EC key where RSA is required.
    [ecKey, /key type: "ec"/],
  ];
  for (const [bad, cause] of cases) {
    try {
      await sign(raw, { ...KEY, privateKey: bad });
      assert.unreachable('signed with a bad key');
    } catch (err) {
      assert.instance(err, SignError);
      assert.is((err as Error).name, 'SignError');
      assert.match((err as Error).message, 'mwtest2024._domainkey.example.com');
      assert.match((err as Error).message, cause);
    }
  }
});

test('with an ed25519 key too: two signatures, rsa-sha256 then ed25519-sha256, same h=, both verify (RFC 8463)', async () => {
  const ed = generateKeyPairSync('ed25519', { publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  // RFC 8463 4: p= is the raw 32-byte key, not the SPKI DER around it.
  const raw32 = ed.publicKey.subarray(ed.publicKey.length - 32).toString('base64');
  const key: DkimKey = { ...KEY, ed25519: { selector: 'mwetest2024', privateKey: ed.privateKey } };
  dns.add(dkimName({ selector: 'mwetest2024', domain: 'example.com' }), 'TXT', dkimValue(raw32, 'ed25519'));
  const raw = await compose(input());
  const signed = await sign(raw, key);
  assert.ok(signed.subarray(signed.length - raw.length).equals(raw), 'the message is unchanged');
  const headers = signed.subarray(0, signed.length - raw.length).toString('latin1').split(/\r\n(?![ \t])/).filter(Boolean);
  assert.is(headers.length, 2, 'two DKIM-Signature fields');
  const [rsa, ed25519] = headers.map((h) => tags(Buffer.from(`${h}\r\n`, 'latin1')));
  assert.equal([rsa!.get('a'), rsa!.get('s'), ed25519!.get('a'), ed25519!.get('s')], ['rsa-sha256', 'mwtest2024', 'ed25519-sha256', 'mwetest2024']);
  assert.is(ed25519!.get('c'), 'relaxed/relaxed');
  assert.is(ed25519!.get('h'), rsa!.get('h'), 'the same h= list');
  assert.is(ed25519!.get('bh'), rsa!.get('bh'), 'one body hash');
  const { results } = await dkimVerify(signed, { resolver } as Parameters<typeof dkimVerify>[1]);
  assert.equal(
    results.map((r) => [r.selector, r.status.result]),
    [
      ['mwtest2024', 'pass'],
      ['mwetest2024', 'pass'],
    ],
  );
  // Each signature stands alone: a receiver that holds a different ed25519 key still passes the RSA one.
  dns.set(dkimName({ selector: 'mwetest2024', domain: 'example.com' }), 'TXT', [dkimValue(Buffer.alloc(32, 7).toString('base64'), 'ed25519')]);
  const again = await dkimVerify(signed, { resolver } as Parameters<typeof dkimVerify>[1]);
  assert.equal(again.results.map((r) => r.status.result), ['pass', 'fail']);
  // A bad ed25519 key fails the signing like a bad RSA key, naming its selector.
  try {
    await sign(raw, { ...KEY, ed25519: { selector: 'mwebad', privateKey: 'not a key' } });
    assert.unreachable('signed with a bad ed25519 key');
  } catch (err) {
    assert.instance(err, SignError);
    assert.match((err as Error).message, 'mwebad._domainkey.example.com');
  }
});

test('sign refuses bytes that are not wire-safe instead of signing what a relay would rewrite', async () => {
  const raw = Buffer.from('From: a@example.com\r\nSubject: x\r\n\r\nbare\nLF\r\n', 'latin1');
  try {
    await sign(raw, KEY);
    assert.unreachable('signed a bare LF');
  } catch (err) {
    assert.is((err as Error).name, 'ComposeError');
  }
});

test.run();
