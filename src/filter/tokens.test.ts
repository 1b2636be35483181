// The tokenizer as a table: what each part of a message turns into, the prefixes that keep sources apart, GTUBE,
// and the bounds on hostile input. Messages go through the project's parser (mail/parse.ts), as received mail does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseMessage } from '../mail/parse.ts';
import { describeToken, GTUBE, MAX_TOKENS, MAX_WORDS_CHARS, messageTokens } from './tokens.ts';

const mail = (head: string, body: string) => Buffer.from(`${head.trim().replace(/\n/g, '\r\n')}\r\n\r\n${body.replace(/\n/g, '\r\n')}`);
const tokensOf = async (head: string, body: string) => messageTokens(await parseMessage(mail(head, body)));

const PLAIN = `From: Alice Smith <alice@mail.example.com>
To: bob@example.org
Subject: Lunch on Friday?
Date: Mon, 2 Sep 2002 10:00:00 +0000
Message-ID: <1@mail.example.com>
Content-Type: text/plain; charset=us-ascii`;

const cases: Array<{ name: string; head: string; body: string; has: string[]; lacks?: string[] }> = [
  {
    name: 'body words are lower-cased and prefixless; subject words carry s:',
    head: PLAIN,
    body: 'Shall we meet at the Bistro? FREE parking!',
    has: ['shall', 'meet', 'the', 'bistro', 'free', 'parking!', 's:lunch', 's:friday'],
    lacks: ['s:shall', 'lunch', 'we', 'at'],
  },
  {
    name: 'sender: domain, its registrable part, name words; no Reply-To, no mailer',
    head: PLAIN,
    body: 'hi',
    has: ['from:mail.example.com', 'from:@example.com', 'fromname:alice', 'fromname:smith', 'mailer:none', 'msgid:from-domain', 'ct:text/plain', 'charset:us-ascii'],
    lacks: ['replyto:differs', 'date:none', 'to:none'],
  },
  {
    name: 'a Reply-To in another domain, a mailer, a bare sender, digits in the local part',
    head: `From: offers12345@deals.example.net
Reply-To: claims@other.example.co.uk
X-Mailer: Microsoft Outlook Express 6.00.2600.0000
Subject: YOU HAVE WON $1,000,000!!!
Content-Type: text/html; charset="iso-8859-1"`,
    body: '<html><body><font size=5>Click <a href="http://www.winner.example.co.uk/claim?id=1">here</a></font><img src="http://img.example.com/x.gif"></body></html>',
    has: ['replyto:differs', 'replyto:@example.co.uk', 'mailer:microsoft outlook express #', 'fromname:none', 'from:digits', 's:all-caps', 's:!', 's:$', 'ct:text/html', 'charset:iso-8859-1', 'msgid:none', 'date:none', 'to:none', 'html', 'tag:font', 'tag:img', 'url:www.winner.example.co.uk', 'url:@example.co.uk', 'url:http', 'links:1', 'images:1', 'click', 'here'],
  },
  {
    name: 'links in text: host and registrable domain, IP literals, user names hiding the host',
    head: PLAIN,
    body: 'See https://docs.example.com/a and http://10.0.0.1/login and http://www.bank.example@evil.example/ and www.plain.example',
    has: ['url:docs.example.com', 'url:@example.com', 'url:ip', 'url:userinfo', 'url:evil.example', 'url:www.plain.example', 'links:4-7'],
    lacks: ['url:www.bank.example'],
  },
  {
    name: 'replies and lists: In-Reply-To, References, List-Id, Precedence',
    head: `From: dev@lists.example.org
Subject: Re: [dev] build broken
In-Reply-To: <a@b>
References: <a@b>
List-Id: Developers <dev.lists.example.org>
Precedence: bulk`,
    body: 'fixed in trunk',
    has: ['s:reply', 'hdr:in-reply-to:yes', 'hdr:references:yes', 'hdr:list-id:yes', 'list:dev.lists.example.org', 'hdr:precedence:bulk', 's:dev', 's:build', 's:broken'],
  },
  {
    name: 'long runs count by first letter and length (SpamBayes skip tokens); one-letter words are dropped',
    head: PLAIN,
    body: 'a x9 abcdefghijklmnopqrstuvwxyzabcdef ok',
    has: ['skip:a30'],
    lacks: ['a', 'x9', 'abcdefghijklmnopqrstuvwxyzabcdef'],
  },
  {
    name: 'quotes and dashes around a word are dropped, inside it they stay',
    head: PLAIN,
    body: "'quoted' -dashed- don't e-mail",
    has: ['quoted', 'dashed', "don't", 'e-mail'],
    lacks: ["'quoted'", '-dashed-'],
  },
  {
    name: 'attachments: each type and the count',
    head: `From: a@example.com
Subject: files
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b"`,
    body: '--b\nContent-Type: text/plain\n\nsee attached\n--b\nContent-Type: application/pdf; name="a.pdf"\nContent-Disposition: attachment; filename="a.pdf"\nContent-Transfer-Encoding: base64\n\nJVBERi0=\n--b--\n',
    has: ['ct:multipart/mixed', 'att:application/pdf', 'att:count:1', 'hdr:mime-version:yes', 'see', 'attached'],
  },
];

for (const c of cases) {
  test(`tokens: ${c.name}`, async () => {
    const { tokens, gtube } = await tokensOf(c.head, c.body);
    for (const t of c.has) assert.ok(tokens.includes(t), `expected ${t} in ${JSON.stringify(tokens)}`);
    for (const t of c.lacks ?? []) assert.not.ok(tokens.includes(t), `did not expect ${t}`);
    assert.is(gtube, false);
    assert.is(new Set(tokens).size, tokens.length, 'each token once');
  });
}

test('tokens: Received, Delivered-To and X-Spam-* fields make no token', async () => {
  const { tokens } = await tokensOf(`Received: from evil.example by mx.example.org
Delivered-To: bob@example.org
X-Spam-Status: Yes, score=99
X-Spam-Flag: YES
${PLAIN}`, 'hello there');
  assert.not.ok(tokens.some((t) => /evil|spam-status|yes, score|delivered/i.test(t)), JSON.stringify(tokens));
});

test('GTUBE in the body, the HTML or the subject marks the message; a broken GTUBE does not', async () => {
  assert.ok((await tokensOf(PLAIN, `test\n${GTUBE}\n`)).gtube);
  assert.ok((await tokensOf(PLAIN.replace('Lunch on Friday?', GTUBE), 'x')).gtube);
  assert.ok((await tokensOf(PLAIN.replace('text/plain', 'text/html'), `<p>${GTUBE}</p>`)).gtube);
  assert.not.ok((await tokensOf(PLAIN, GTUBE.slice(0, -3))).gtube);
});

test('hostile input: a huge body yields at most MAX_TOKENS tokens, headers and subject first, words from its start', async () => {
  const words = Array.from({ length: 200_000 }, (_, i) => `w${i.toString(36)}x`).join(' ');
  const { tokens } = await tokensOf(PLAIN, words);
  assert.ok(tokens.length <= MAX_TOKENS);
  assert.ok(tokens.includes('from:mail.example.com') && tokens.includes('s:lunch'));
  // Words come from the first MAX_WORDS_CHARS characters only; a link past them still counts.
  const near = 'w1x';
  const far = `w${(MAX_WORDS_CHARS / 4).toString(36)}x`;
  assert.ok(words.indexOf(far) > MAX_WORDS_CHARS);
  assert.ok(tokens.includes(near) && !tokens.includes(far));
  const linked = await tokensOf(PLAIN, `${words.slice(0, 20_000)} https://late.example/offer`);
  assert.ok(linked.tokens.includes('url:late.example'), 'a link beyond the words read');
});

test('hostile input: HTML with 50,000 links and tags stays bounded; the same link twice counts once', async () => {
  const html = Array.from({ length: 50_000 }, (_, i) => `<a href="http://x${i}.example/">x</a><font>`).join('');
  const { tokens } = await tokensOf(PLAIN.replace('text/plain', 'text/html'), html);
  assert.ok(tokens.length <= MAX_TOKENS);
  assert.ok(tokens.includes('links:16+'));
  assert.ok(tokens.includes('tag:font'));
  const twice = await tokensOf(PLAIN.replace('text/plain', 'text/html'), '<a href="http://a.example/">1</a> <a href="http://a.example/">2</a>');
  assert.ok(twice.tokens.includes('links:1'), JSON.stringify(twice.tokens));
});

test('tokens: a message with nothing in it still has its shape', async () => {
  const { tokens } = messageTokens({ subject: '', text: null, html: null, headers: {}, fromAll: [], replyTo: [], attachments: [] });
  for (const t of ['from:none', 's:none', 'mailer:none', 'msgid:none', 'links:0', 'images:0', 'att:count:0']) assert.ok(tokens.includes(t), t);
});

test('describeToken names each kind in words', () => {
  const table: Array<[string, string]> = [
    ['viagra', 'the word "viagra"'],
    ['s:free', '"free" in the subject'],
    ['url:@example.com', 'a link to example.com'],
    ['url:ip', 'a link to an IP address'],
    ['from:@example.net', 'the sender example.net'],
    ['replyto:differs', 'a Reply-To in another domain than From'],
    ['skip:a30', 'a run of 30+ characters starting "a"'],
    ['charset:gb2312', 'the character set gb2312'],
    ['tag:font', 'HTML <font> tags'],
    ['ct:text/html', 'a text/html message'],
    ['html', 'an HTML body'],
    ['s:!', 'a "!" in the subject'],
    ['hdr:list-unsubscribe:yes', 'a list-unsubscribe field'],
    ['hdr:in-reply-to:no', 'no in-reply-to field'],
    ['hdr:x-priority:1', 'x-priority: 1'],
    ['msgid:other', "a Message-ID from another domain than the sender's"],
    ['mailer:none', 'no X-Mailer field'],
    ['att:count:2-3', '2-3 attachments'],
    ['links:16+', '16+ links'],
    ['future:x', "the message's future:x"],
  ];
  for (const [token, words] of table) assert.is(describeToken(token), words, token);
});

test.run();
