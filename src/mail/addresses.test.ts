// parseMailbox and checkAddress: what an API caller writes either becomes exactly the mailbox they meant or
// is refused with a reason; nothing a lenient parser would read as another recipient gets through. Each
// accepted mailbox is also composed (nodemailer) and read back (mailparser), as a receiver would.
import { domainToASCII } from 'node:url';
import { simpleParser } from 'mailparser';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkAddress, parseMailbox, type Mailbox } from './addresses.ts';
import { compose } from './compose.ts';

const ACCEPTED: Array<[string, Mailbox]> = [
  ['a@x.test', { address: 'a@x.test' }],
  ['  a@x.test  ', { address: 'a@x.test' }],
  ['<a@x.test>', { address: 'a@x.test' }],
  ['Name <a@x.test>', { name: 'Name', address: 'a@x.test' }],
  ['Name<a@x.test>', { name: 'Name', address: 'a@x.test' }],
  ['Ada  Lovelace <a@x.test>', { name: 'Ada Lovelace', address: 'a@x.test' }],
  ['Dr. Who <a@x.test>', { name: 'Dr. Who', address: 'a@x.test' }],
  ["O'Brien <a@x.test>", { name: "O'Brien", address: 'a@x.test' }],
  ['"Last, First" <a@x.test>', { name: 'Last, First', address: 'a@x.test' }],
  ['"Name with \\"quotes\\"" <a@x.test>', { name: 'Name with "quotes"', address: 'a@x.test' }],
  ['"support@bank.test" <a@x.test>', { name: 'support@bank.test', address: 'a@x.test' }],
  ['"" <a@x.test>', { address: 'a@x.test' }],
  ['Jörg Müller <a@x.test>', { name: 'Jörg Müller', address: 'a@x.test' }],
  ['山田 太郎 <taro@x.test>', { name: '山田 太郎', address: 'taro@x.test' }],
  ['"山田, 太郎" <taro@x.test>', { name: '山田, 太郎', address: 'taro@x.test' }],
  ['Party 🎉 <a@x.test>', { name: 'Party 🎉', address: 'a@x.test' }],
  ['a+tag@x.test', { address: 'a+tag@x.test' }],
  ['first.last+tag@Sub.Example.TEST', { address: 'first.last+tag@sub.example.test' }],
  ['a@bücher.test', { address: 'a@xn--bcher-kva.test' }],
  ['Name <a@bücher.test>', { name: 'Name', address: 'a@xn--bcher-kva.test' }],
];

for (const [input, expected] of ACCEPTED) {
  test(`accepted: ${input}`, () => {
    const parsed = parseMailbox(input);
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.reason);
    if (parsed.ok) assert.equal(parsed.mailbox, expected);
  });
}

// Each with what the lenient parser would have made of it, or why it is refused.
const REFUSED: Array<[string, RegExp]> = [
  ['a b@x.test', /space/], // addressparser: name "a", address b@x.test
  ['a @x.test', /space/], // addressparser: a@x.test
  ['a@ x.test', /space/],
  ['a@x.test b', /space/], // name "b"
  ['Name <a b@x.test>', /space/],
  ['Name <a@x.test> junk', /after the closing >/], // name "Name junk"
  ['<a@x.test> b@y.test', /after the closing >/], // name "b@y.test"
  ['a@x.test <b@y.test>', /@ in its name/], // goes to b@y.test
  ['x <a@x.test> <b@y.test>', /angle brackets/],
  ['Name <<a@x.test>>', /angle brackets/],
  ['Name <a@x.test', /angle brackets/],
  ['Name a@x.test>', /angle brackets/],
  ['<a@x.test', /angle brackets/],
  ['a@x.test>', /angle brackets/],
  ['"unbalanced <a@x.test>', /double quote/], // addressparser: address "unbalanced <a"@x.test>
  ['"a\\" <a@x.test>', /double quote/],
  ['Name "q" <a@x.test>', /quoted string with other words/],
  ['a@x.test (comment)', /comment/],
  ['(comment) a@x.test', /comment/],
  ['Name (c) <a@x.test>', /comment/],
  ['a@x.test, b@y.test', /exactly one address/],
  ['a@x.test;b@y.test', /exactly one address/],
  ['Group: a@x.test;', /exactly one address/],
  ['<a@x.test>,', /exactly one address/],
  ['a@x.test.', /ends in a dot/],
  ['Name <a@x.test.>', /ends in a dot/],
  ['@x.test', /not an e-mail address/],
  ['Name <@x.test>', /not an e-mail address/],
  ['a@b@x.test', /more than one @/],
  ['a.@x.test', /local part/],
  ['a..b@x.test', /local part/],
  ['jörg@x.test', /local part/],
  ['"a b"@x.test', /quoted local part/],
  ['a@[192.0.2.1]', /not an e-mail address/],
  ['a@x', /two labels/],
  ['Name <>', /not an e-mail address/],
  ['Name:<a@x.test>', /not an e-mail address/],
  ['Müller', /not an e-mail address/],
  ['', /empty/],
  ['=?utf-8?B?YWRtaW5AYmFuay5jb20=?= <a@x.test>', /encoded-word/], // would read as admin@bank.com
  ['"=?utf-8?Q?admin=40bank.test?=" <a@x.test>', /encoded-word/],
  ['a@x.test\r\nBcc: v@evil.test', /control characters/],
  ['"a\r\nX: y" <a@x.test>', /control characters/],
  ['a\u0000@x.test', /control characters/],
  [`${'n'.repeat(510)} <a@x.test>`, /longer than 512/],
];

for (const [input, reason] of REFUSED) {
  test(`refused: ${JSON.stringify(input).slice(0, 60)}`, () => {
    const parsed = parseMailbox(input);
    assert.not.ok(parsed.ok, `accepted as ${JSON.stringify(parsed.ok && parsed.mailbox)}`);
    if (!parsed.ok) assert.match(parsed.reason, reason);
  });
}

test('every accepted mailbox reaches the headers as itself: composed, then read back by mailparser', async () => {
  const to = ACCEPTED.map(([input]) => parseMailbox(input)).map((p) => (p.ok ? p.mailbox : assert.unreachable()) as Mailbox);
  const raw = await compose({ messageId: 'm@x.test', date: Date.UTC(2024, 0, 1), from: { address: 'a@x.test' }, to, cc: [], replyTo: [], subject: 's', text: 't', headers: {}, attachments: [] });
  const parsed = await simpleParser(raw);
  const read = (Array.isArray(parsed.to) ? parsed.to : [parsed.to!]).flatMap((t) => t.value).map((v) => {
    // mailparser shows IDN domains in Unicode; the box keeps their ASCII form.
    const [local, domain] = v.address!.split('@');
    const address = `${local}@${domainToASCII(domain)}`;
    return v.name ? { name: v.name, address } : { address };
  });
  assert.equal(read, to);
});

test('checkAddress (envelope addresses): what it took before, but never a final dot', () => {
  for (const ok of ['a@x.test', 'A.B+c@Example.COM', 'first.last@sub.x.test', 'a@bücher.test', "o'brien@x.test", 'x_y-z@x-y.test']) {
    assert.ok(checkAddress(ok).ok, ok);
  }
  assert.equal(checkAddress('A.B+c@Example.COM'), { ok: true, mailbox: { address: 'A.B+c@example.com' } });
  assert.equal(checkAddress('a@x.test', '  Name  '), { ok: true, mailbox: { name: 'Name', address: 'a@x.test' } });
  for (const bad of ['a@x.test.', 'a@b@x.test', '@x.test', 'a', 'a@', 'a..b@x.test', 'jörg@x.test', 'a@x', 'a@[192.0.2.1]', 'a@x.test>']) {
    assert.not.ok(checkAddress(bad).ok, bad);
  }
});

test.run();
