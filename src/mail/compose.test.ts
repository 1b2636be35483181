// compose: the bytes a receiver gets. Each message is parsed back with mailparser (what a mail client does)
// and checked for the wire rules (CRLF only, lines <= 998) independently of assertWireSafe.
import { randomBytes } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { assertWireSafe, compose, ComposeError, type ComposeInput } from './compose.ts';

const DATE = Date.UTC(2024, 9, 1, 12, 30, 15);

function input(over: Partial<ComposeInput> = {}): ComposeInput {
  return {
    messageId: '01JABCDEF0123456789@example.com',
    date: DATE,
    from: { name: 'Sender', address: 'sender@example.com' },
    to: [{ address: 'rcpt@example.net' }],
    cc: [],
    replyTo: [],
    subject: 'Hello',
    text: 'Hello there',
    headers: {},
    attachments: [],
    ...over,
  };
}

const latin1 = (raw: Buffer) => raw.toString('latin1');
const headerBlock = (raw: Buffer) => latin1(raw).split('\r\n\r\n')[0]!.replace(/\r\n[ \t]/g, ' ');
const headerLines = (raw: Buffer) => headerBlock(raw).split('\r\n');

// The wire rules, checked without the code under test.
function assertWireRules(raw: Buffer) {
  const s = latin1(raw);
  assert.not.ok(/\r(?!\n)/.test(s), 'no bare CR');
  assert.not.ok(/(?<!\r)\n/.test(s), 'no bare LF');
  const longest = s.split('\r\n').reduce((max, line) => Math.max(max, line.length), 0);
  assert.ok(longest <= 998, `longest line is ${longest} octets`);
  assertWireSafe(raw);
}

const crlfToLf = (s: string) => s.replace(/\r\n|\r|\n/g, '\n');

test('Message-ID and Date are the ones given, not nodemailer\'s', async () => {
  const raw = await compose(input());
  const lines = headerLines(raw);
  assert.ok(lines.includes('Message-ID: <01JABCDEF0123456789@example.com>'), lines.join('\n'));
  assert.ok(lines.includes('Date: Tue, 01 Oct 2024 12:30:15 +0000'), lines.join('\n'));
  assert.is(lines.filter((l) => /^message-id:/i.test(l)).length, 1);
  assert.is(lines.filter((l) => /^date:/i.test(l)).length, 1);
  const parsed = await simpleParser(raw);
  assert.is(parsed.messageId, '<01JABCDEF0123456789@example.com>');
  assert.is(parsed.date?.getTime(), DATE);
  assertWireRules(raw);
});

test('addresses, reply threading and extra headers reach the header block', async () => {
  const raw = await compose(
    input({
      to: [{ address: 'a@example.net' }, { name: 'Bee', address: 'b@example.net' }],
      cc: [{ address: 'c@example.net' }],
      replyTo: [{ address: 'reply@example.com' }],
      inReplyTo: 'parent@example.net',
      references: ['root@example.net', 'parent@example.net'],
      headers: {
        'X-Entity-Ref-ID': 'ref-123',
        'List-Unsubscribe': '<https://box.example.com/u/abc>, <mailto:unsub@box.example.com?subject=u>',
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
    }),
  );
  const lines = headerLines(raw);
  for (const line of [
    'To: a@example.net, Bee <b@example.net>',
    'Cc: c@example.net',
    'Reply-To: reply@example.com',
    'In-Reply-To: <parent@example.net>',
    'References: <root@example.net> <parent@example.net>',
    'X-Entity-Ref-ID: ref-123',
    'List-Unsubscribe: <https://box.example.com/u/abc>, <mailto:unsub@box.example.com?subject=u>',
    'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
  ]) {
    assert.ok(lines.includes(line), `missing ${line} in\n${lines.join('\n')}`);
  }
  const parsed = await simpleParser(raw);
  assert.is(parsed.inReplyTo, '<parent@example.net>');
  assert.equal(parsed.references, ['<root@example.net>', '<parent@example.net>']);
});

test('non-ASCII subject and display name are RFC 2047 encoded and decode back', async () => {
  const subject = 'Grüße aus Köln — 日本語 ✓';
  const name = 'Jöhn Dœ, "the" Sender';
  const raw = await compose(input({ subject, from: { name, address: 'sender@example.com' } }));
  const block = headerBlock(raw);
  assert.ok(/^Subject: =\?UTF-8\?[QB]\?/im.test(block), block);
  assert.ok(/^From: =\?UTF-8\?[QB]\?.*<sender@example\.com>$/im.test(block), block);
  // Headers stay 7-bit: no SMTPUTF8 needed for a non-ASCII subject.
  assert.ok([...raw].every((b) => b < 0x80), 'every octet is ASCII');
  const parsed = await simpleParser(raw);
  assert.is(parsed.subject, subject);
  const from = parsed.from?.value[0];
  assert.is(from?.name, name);
  assert.is(from?.address, 'sender@example.com');
});

test('HTML-only mail gets a text/plain alternative made from the HTML', async () => {
  const html = '<h1>Welcome aboard</h1><p>Confirm your address: <a href="https://box.example.com/c/xyz">confirm</a>.</p><img src="cid:logo">';
  const raw = await compose(input({ text: undefined, html }));
  const block = headerBlock(raw);
  const boundary = /^Content-Type: multipart\/alternative;.*boundary="([^"]+)"/im.exec(block)?.[1];
  assert.ok(boundary, block);
  const parts = latin1(raw).split(`--${boundary}`).map((p) => p.replace(/^\r\n/, ''));
  const textPart = parts.find((p) => /^Content-Type: text\/plain/i.test(p));
  const htmlPart = parts.find((p) => /^Content-Type: text\/html/i.test(p));
  assert.ok(textPart && htmlPart, 'both alternatives are present');
  // Parse the text part on its own so mailparser cannot fill in text from the HTML itself.
  const text = (await simpleParser(Buffer.from(textPart, 'latin1'))).text ?? '';
  assert.match(text, /WELCOME ABOARD/i);
  assert.match(text, 'Confirm your address: confirm [https://box.example.com/c/xyz].');
  assert.not.match(text, 'cid:logo');
  assert.not.match(text, '<');
  assert.is((await simpleParser(raw)).html, html);
  assertWireRules(raw);
});

test('HTML-only text alternative wraps at 78 columns', async () => {
  const html = `<p>${'word '.repeat(200)}</p>`;
  const raw = await compose(input({ text: undefined, html }));
  const parts = latin1(raw).split(/\r\n--/);
  const textPart = parts.find((p) => /Content-Type: text\/plain/i.test(p))!;
  const text = (await simpleParser(Buffer.from(textPart.replace(/^[^\r]*\r\n/, ''), 'latin1'))).text ?? '';
  const lines = text.split('\n').filter(Boolean);
  assert.ok(lines.length > 5, text);
  assert.ok(lines.every((l) => l.length <= 78), text);
});

const NASTY_TEXT =
  'first\n.\nsecond\n.\r\nMAIL FROM:<evil@example.org>\r\nthird\r.\rfourth\rfifth\0sixth\n' +
  'L'.repeat(50_000) +
  '\ntrailing spaces   \nÜnïcödé ✓ 日本語 8-bit text\r\n\r\n.\n';

test('hostile text survives: dots, bare CR/LF, NUL, a 50 KB line, UTF-8', async () => {
  const raw = await compose(input({ text: NASTY_TEXT }));
  assertWireRules(raw);
  const parsed = await simpleParser(raw);
  assert.is(parsed.text, crlfToLf(NASTY_TEXT));
});

test('hostile HTML survives: a 50 KB single line, dots, bare CR', async () => {
  const html = `<p>${'x'.repeat(50_000)}</p>\n.\n<p>a\rb\r.\r</p>\n`;
  const raw = await compose(input({ text: NASTY_TEXT, html }));
  assertWireRules(raw);
  const parsed = await simpleParser(raw);
  assert.is(parsed.html, crlfToLf(html));
  assert.is(parsed.text, crlfToLf(NASTY_TEXT));
});

test('attachments round-trip: name, type, bytes, inline content-id', async () => {
  const binary = randomBytes(100_000);
  const smuggle = Buffer.from('line\n.\r\nMAIL FROM:<x@evil.example>\r\nbare\rcr\n', 'latin1');
  const logo = randomBytes(300);
  const raw = await compose(
    input({
      html: '<p>Logo: <img src="cid:logo@mailwright"></p>',
      attachments: [
        { filename: 'report.bin', content: binary, contentType: 'application/octet-stream' },
        { filename: 'notes résumé.txt', content: smuggle, contentType: 'text/plain' },
        { filename: 'logo.png', content: logo, contentType: 'image/png', contentId: 'logo@mailwright' },
      ],
    }),
  );
  assertWireRules(raw);
  const parsed = await simpleParser(raw);
  const byName = new Map(parsed.attachments.map((a) => [a.filename, a]));
  const report = byName.get('report.bin');
  assert.ok(report, [...byName.keys()].join(', '));
  assert.is(report.contentType, 'application/octet-stream');
  assert.ok(report.content.equals(binary), 'binary bytes');
  const notes = byName.get('notes résumé.txt');
  assert.ok(notes, [...byName.keys()].join(', '));
  assert.is(notes.contentType, 'text/plain');
  assert.ok(notes.content.equals(smuggle), 'text attachment bytes, bare CR and LF included');
  const inline = byName.get('logo.png');
  assert.ok(inline, [...byName.keys()].join(', '));
  assert.is(inline.contentType, 'image/png');
  assert.is(inline.contentId, '<logo@mailwright>');
  assert.is(inline.contentDisposition, 'inline');
  assert.ok(inline.related, 'inline image sits in multipart/related beside the HTML');
  assert.ok(inline.content.equals(logo), 'inline bytes');
});

test('Bcc never appears in the headers', async () => {
  const raw = await compose(input({ to: [], cc: [] }));
  assert.not.match(headerBlock(raw), /^bcc:/im);
  try {
    await compose(input({ headers: { Bcc: 'hidden@example.net' } }));
    assert.unreachable('a Bcc header was accepted');
  } catch (err) {
    assert.instance(err, ComposeError);
  }
});

const INJECTIONS: Array<[string, Partial<ComposeInput>, string]> = [
  ['subject', { subject: 'hi\r\nBcc: victim@example.net' }, 'subject'],
  ['subject with a lone LF', { subject: 'hi\nX: y' }, 'subject'],
  ['subject with NUL', { subject: 'hi\0' }, 'subject'],
  ['from name', { from: { name: 'a\r\nX: y', address: 'sender@example.com' } }, 'from.name'],
  ['to address', { to: [{ address: 'a@b.example>\r\nRCPT TO:<c@d.example' }] }, 'to[0].address'],
  ['reply-to name', { replyTo: [{ name: 'r\rX: y', address: 'r@example.com' }] }, 'replyTo[0].name'],
  ['header value', { headers: { 'List-Unsubscribe': '<https://x.example/u>\r\nBcc: v@example.net' } }, 'headers["List-Unsubscribe"]'],
  ['header name', { headers: { 'X-A\r\nBcc': 'v@example.net' } }, 'headers["X-A\\r\\nBcc"]'],
  ['header name with a colon', { headers: { 'X-A: b': 'c' } }, 'headers["X-A: b"]'],
  ['message id', { messageId: 'a@b>\r\nX: y' }, 'messageId'],
  ['references', { references: ['ok@example.net', 'bad@example.net\n'] }, 'references[1]'],
  ['attachment filename', { attachments: [{ filename: 'a\r\nX: y.txt', content: Buffer.from('x') }] }, 'attachments[0].filename'],
  ['attachment type', { attachments: [{ filename: 'a.txt', content: Buffer.from('x'), contentType: 'text/plain\r\nX: y' }] }, 'attachments[0].contentType'],
  ['attachment content id', { attachments: [{ filename: 'a.png', content: Buffer.from('x'), contentId: 'c\r\nX: y' }] }, 'attachments[0].contentId'],
];

for (const [what, over, field] of INJECTIONS) {
  test(`CR/LF/NUL in ${what} throws ComposeError naming ${field}`, async () => {
    try {
      await compose(input(over));
      assert.unreachable('compose accepted it');
    } catch (err) {
      assert.instance(err, ComposeError);
      assert.is((err as ComposeError).name, 'ComposeError');
      assert.is((err as ComposeError).field, field);
      assert.match((err as ComposeError).message, field);
    }
  });
}

test('a header compose owns cannot be smuggled in through headers', async () => {
  for (const name of ['Subject', 'from', 'Content-Type', 'MIME-Version', 'DKIM-Signature', 'Message-ID']) {
    try {
      await compose(input({ headers: { [name]: 'x' } }));
      assert.unreachable(`${name} accepted`);
    } catch (err) {
      assert.instance(err, ComposeError, name);
    }
  }
});

test('a header line that cannot be folded under 998 octets is refused, naming the header', async () => {
  try {
    await compose(input({ headers: { 'List-Unsubscribe': `<https://box.example.com/u/${'a'.repeat(1200)}>` } }));
    assert.unreachable('an unfoldable 1200-octet header was accepted');
  } catch (err) {
    assert.instance(err, ComposeError);
    assert.is((err as ComposeError).field, 'header List-Unsubscribe');
  }
});

test('assertWireSafe: CRLF lines up to 998 octets pass; bare CR, bare LF and 999 octets throw', () => {
  assertWireSafe(Buffer.from(`Subject: x\r\n\r\n${'a'.repeat(998)}\r\n.\r\nend`));
  const bad: Array<[string, string]> = [
    ['bare LF in body', 'Subject: x\r\n\r\nfoo\nbar\r\n'],
    ['bare CR in body', 'Subject: x\r\n\r\nfoo\rbar\r\n'],
    ['CR at the very end', 'Subject: x\r\n\r\nfoo\r'],
    ['LF first', '\nSubject: x\r\n\r\n'],
    ['bare LF in a header', 'Subject: x\nBcc: y\r\n\r\nbody\r\n'],
    ['999-octet line', `Subject: x\r\n\r\n${'a'.repeat(999)}\r\n`],
    ['999-octet last line', `Subject: x\r\n\r\n${'a'.repeat(999)}`],
  ];
  for (const [what, raw] of bad) {
    assert.throws(() => assertWireSafe(Buffer.from(raw, 'latin1')), (err: unknown) => err instanceof ComposeError, what);
  }
});

test.run();
