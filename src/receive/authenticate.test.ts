// authenticate: what mailauth is handed (the header section alone for unsigned mail) changes no verdict and no
// header, and a DKIM key record is turned into a key once (dkim-keys.ts) without hiding a changed record.
// DNS answers come from a Map, as the analyze thread's answer cache gives them.
// authenticate.ts is imported first, as in the analyze thread: dkim-keys.ts must run before mailauth loads.
import { authenticate, whatMailauthReads, type AuthContext } from './authenticate.ts';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import crypto from 'node:crypto';
import { authenticate as mailauth } from 'mailauth';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DnsLookup } from '../dns/cache.ts';
import { sign } from '../mail/sign.ts';

const records = new Map<string, unknown[]>();
const dns: DnsLookup = {
  async resolve(name, type) {
    const answer = records.get(`${type} ${name.toLowerCase()}`);
    if (answer) return answer;
    throw Object.assign(new Error(`ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  },
};
const txt = (name: string, value: string) => records.set(`TXT ${name}`, [[value]]);
txt('sender.example', 'v=spf1 ip4:192.0.2.1 -all');
txt('_dmarc.sender.example', 'v=DMARC1; p=reject');
txt('other.example', 'v=spf1 -all');
txt('_dmarc.other.example', 'v=DMARC1; p=none');

const ctx = (over: Partial<AuthContext> = {}): AuthContext => ({ ip: '192.0.2.1', helo: 'mail.sender.example', mailFrom: 'a@sender.example', hostname: 'mx.box.test', dns, ...over });
const raw = (s: string) => Buffer.from(s, 'latin1');

function rsaKey() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), record: `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}` };
}

/** mailauth on the whole message, reduced as authenticate reduces it (the same call authenticate makes). */
async function onWhole(m: Buffer, c: AuthContext) {
  const resolver = (name: string, type: string) => c.dns.resolve(name, type) as Promise<string[][]>;
  const r = await mailauth(m, { ip: c.ip, helo: c.helo, sender: c.mailFrom, mta: c.hostname, resolver, disableBimi: true });
  return { headers: r.headers, spf: r.spf ? r.spf.status?.result : 'none', dkim: r.dkim?.results, dmarc: r.dmarc ? [r.dmarc.status?.result, r.dmarc.policy, r.dmarc.domain] : null, arc: r.arc ? r.arc.status?.result : 'none' };
}

const BODY = 'Hello,\r\n\r\nbody text with a dot line\r\n..\r\nand more\r\n';
const UNSIGNED: Array<[string, string]> = [
  ['plain CRLF', `From: A <a@sender.example>\r\nTo: b@box.test\r\nSubject: hi\r\n\r\n${BODY}`],
  ['bare LF', 'From: a@sender.example\nTo: b@box.test\nSubject: hi\n\nbody\nmore\n'],
  ['LF CR LF ends the section for mailauth', 'From: a@sender.example\nSubject: hi\n\r\nX-Not-A-Header: body\r\n\r\nrest\r\n'],
  ['no body', 'From: a@sender.example\r\nSubject: hi\r\n\r\n'],
  ['no blank line', 'From: a@sender.example\r\nSubject: hi\r\n'],
  ['no From', `To: b@box.test\r\nSubject: hi\r\n\r\n${BODY}`],
  ['two From fields', `From: a@sender.example\r\nFrom: c@other.example\r\n\r\n${BODY}`],
  ['folded fields', `From: A\r\n <a@sender.example>\r\nSubject: a\r\n\tlong one\r\nReceived: from x by y;\r\n Tue, 1 Oct 2024 00:00:00 +0000\r\n\r\n${BODY}`],
  ['From of another domain', `From: c@other.example\r\n\r\n${BODY}`],
];

test('unsigned mail: mailauth gets the header section only', () => {
  const m = raw(`From: a@sender.example\r\nSubject: hi\r\n\r\n${BODY}`);
  const read = whatMailauthReads(m);
  assert.is(read.toString('latin1'), `From: a@sender.example\r\nSubject: hi\r\n\r\n`);
  assert.is(whatMailauthReads(raw('From: a@sender.example\r\n')).length, 'From: a@sender.example\r\n'.length, 'all header: the whole message');
});

test('a DKIM-Signature or an ARC field, in any case, anywhere in the section: the whole message', () => {
  for (const field of ['DKIM-Signature: v=1', 'dkim-signature: x', 'DKIM-SIGNATURE : x', 'ARC-Seal: i=1', 'arc-message-signature: i=1', 'ARC-Authentication-Results: i=1']) {
    const m = raw(`From: a@sender.example\r\nX-Y: z\r\n${field}\r\n\r\n${BODY}`);
    assert.is(whatMailauthReads(m), m, field);
  }
  const inBody = raw(`From: a@sender.example\r\n\r\nDKIM-Signature: in the body\r\n`);
  assert.is.not(whatMailauthReads(inBody), inBody, 'a field name in the body does not count');
});

test('unsigned mail: the same verdicts and Authentication-Results as mailauth on the whole message', async () => {
  for (const [name, text] of UNSIGNED) {
    for (const c of [ctx(), ctx({ ip: '198.51.100.7' }), ctx({ mailFrom: 'c@other.example' })]) {
      const m = raw(text);
      const whole = await onWhole(m, c);
      assert.equal(await onWhole(whatMailauthReads(m), c), whole, name);
      const ours = await authenticate(m, c);
      assert.is(ours.verdicts.dkim.result, 'none', name);
      assert.is(ours.verdicts.spf.result, whole.spf, `${name}: spf`);
      if (whole.dmarc) {
        assert.equal([ours.verdicts.dmarc.result, ours.verdicts.dmarc.policy, ours.verdicts.dmarc.domain], whole.dmarc, `${name}: dmarc`);
        assert.is(ours.headers, whole.headers, `${name}: headers`);
      } else {
        assert.is(ours.verdicts.dmarc.result, 'fail', `${name}: no single From`);
      }
    }
  }
});

test('signed mail: verified on the whole message; a changed body fails', async () => {
  const key = rsaKey();
  txt('s1._domainkey.sender.example', key.record);
  const signed = await sign(raw(`From: A <a@sender.example>\r\nTo: b@box.test\r\nSubject: signed\r\n\r\n${BODY}`), { domain: 'sender.example', selector: 's1', privateKey: key.privateKey });
  const ok = await authenticate(signed, ctx());
  assert.is(ok.verdicts.dkim.result, 'pass');
  assert.equal(ok.verdicts.dkim.domains, ['sender.example']);
  assert.is(ok.headers, (await onWhole(signed, ctx())).headers);
  const tampered = Buffer.concat([signed, raw('tampered\r\n')]);
  assert.is((await authenticate(tampered, ctx())).verdicts.dkim.result, 'fail', 'the body was read and hashed');
});

test('a key record is imported once, and a changed record is read afresh', async () => {
  const first = rsaKey();
  const second = rsaKey();
  const message = raw(`From: a@sender.example\r\nSubject: rotation\r\n\r\n${BODY}`);
  const signedFirst = await sign(message, { domain: 'sender.example', selector: 'rot', privateKey: first.privateKey });
  const signedSecond = await sign(message, { domain: 'sender.example', selector: 'rot', privateKey: second.privateKey });
  let imports = 0;
  const real = crypto.createPublicKey;
  crypto.createPublicKey = ((...args: Parameters<typeof createPublicKey>) => {
    imports++;
    return real(...args);
  }) as typeof createPublicKey;
  try {
    txt('rot._domainkey.sender.example', first.record);
    for (let i = 0; i < 3; i++) assert.is((await authenticate(signedFirst, ctx())).verdicts.dkim.result, 'pass');
    assert.is(imports, 1, 'one import for three messages signed with one key');
    txt('rot._domainkey.sender.example', second.record);
    assert.is((await authenticate(signedFirst, ctx())).verdicts.dkim.result, 'fail', 'the old signature no longer verifies');
    assert.is((await authenticate(signedSecond, ctx())).verdicts.dkim.result, 'pass');
    assert.is(imports, 2, 'the new record was imported');
    records.delete('TXT rot._domainkey.sender.example');
    const gone = await authenticate(signedSecond, ctx());
    assert.is(gone.verdicts.dkim.result, 'neutral', 'a record that is gone is not answered from memory');
    assert.match(gone.headers, /no key/);
  } finally {
    crypto.createPublicKey = real;
  }
});

test.run();
