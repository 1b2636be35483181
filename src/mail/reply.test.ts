// The words of replies and forwards (mail/reply.ts): Re:/Fwd: once, the quote and the forwarded block in text
// and HTML (the original's text escaped, its HTML body kept), and extractReply's edges: no text, nothing
// quoted, and a long text read only from its start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EXTRACT_MAX_CHARS, extractReply, extractedTextOf, forwardedHtml, forwardedText, forwardSubject, quotedHtml, quotedText, replySubject, type Original } from './reply.ts';

const original: Original = {
  from: { name: 'Bob', address: 'bob@sender.example' },
  to: [{ name: null, address: 'hello@in.example' }, { name: 'Dave', address: 'dave@sender.example' }],
  subject: 'Plans',
  date: Date.UTC(2026, 10, 29, 9, 40, 0),
  text: 'Tuesday?\n> earlier words\n',
  html: null,
};

test('subjects: Re: and Fwd: once, whatever the case or a counter', () => {
  assert.equal(['Plans', 'Re: Plans', 'RE: Plans', 're:Plans', 'Re[2]: Plans', 'Fwd: Plans'].map(replySubject), ['Re: Plans', 'Re: Plans', 'RE: Plans', 're:Plans', 'Re[2]: Plans', 'Re: Fwd: Plans']);
  assert.equal(['Plans', 'Fwd: Plans', 'FW: Plans', 'fwd:Plans', 'Re: Plans'].map(forwardSubject), ['Fwd: Plans', 'Fwd: Plans', 'FW: Plans', 'fwd:Plans', 'Fwd: Re: Plans']);
});

test('a reply quotes the original under an attribution line, in text and in a blockquote', () => {
  assert.is(quotedText('Yes.\n\n', original), 'Yes.\n\nOn Sun, 29 Nov 2026 09:40:00 +0000, Bob <bob@sender.example> wrote:\n> Tuesday?\n>> earlier words\n');
  const html = quotedHtml('<p>Yes.</p>', { ...original, text: 'a <b> & c' });
  assert.match(html, /^<p>Yes\.<\/p>\n/);
  assert.match(html, /On Sun, 29 Nov 2026 09:40:00 \+0000, Bob &lt;bob@sender\.example&gt; wrote:/);
  assert.match(html, /<blockquote[^>]*>a &lt;b&gt; &amp; c<\/blockquote>/);
});

test('an HTML-only original is quoted by its words', () => {
  assert.match(quotedText('Ok.', { ...original, text: null, html: '<p>Hello <b>there</b></p>' }), /wrote:\n> Hello there\n$/);
});

test('a forward sets out the original under the forwarded block; its HTML keeps the original body', () => {
  assert.is(
    forwardedText('FYI', original),
    'FYI\n\n---------- Forwarded message ---------\nFrom: Bob <bob@sender.example>\nDate: Sun, 29 Nov 2026 09:40:00 +0000\nSubject: Plans\nTo: hello@in.example, Dave <dave@sender.example>\n\nTuesday?\n> earlier words\n',
  );
  assert.match(forwardedText(undefined, original), /^---------- Forwarded message ---------\n/);
  const html = forwardedHtml('<p>FYI</p>', { ...original, html: '<html><head><style>p{}</style></head><body class="x"><p>Rich</p></body></html>' });
  assert.match(html, /^<p>FYI<\/p>\n<div class="mailwright_forward"><div>---------- Forwarded message ---------<br>\nFrom: Bob &lt;bob@sender\.example&gt;/);
  assert.match(html, /<p>Rich<\/p><\/div>\n$/);
  assert.not.match(html, /<head>|<body/);
});

test('extractReply: null without text, the whole text when nothing is quoted, only the start of a long text', () => {
  assert.is(extractReply(null), null);
  assert.is(extractReply(' \n '), null);
  assert.is(extractReply('Just this.\n'), 'Just this.');
  assert.is(extractReply('Fine by me.\n\nOn Sun, 29 Nov 2026 at 09:40, Bob <bob@sender.example> wrote:\n> Ok?\n'), 'Fine by me.');
  const long = `${'word '.repeat(EXTRACT_MAX_CHARS)}`;
  assert.is(extractReply(long)!.length, long.slice(0, EXTRACT_MAX_CHARS).trim().length);
});

test('extractedTextOf: only mail that answers or forwards is read for quoted history', () => {
  const quoted = 'Fine by me.\n\nOn Sun, 29 Nov 2026 at 09:40, Bob <bob@sender.example> wrote:\n> Ok?\n';
  const mail = (over: Partial<Parameters<typeof extractedTextOf>[0]>) => extractedTextOf({ text: quoted, subject: 'Plans', inReplyTo: null, references: [], ...over });
  assert.is(mail({}), quoted.trim(), 'a new message keeps its text');
  assert.is(mail({ inReplyTo: 'a@b' }), 'Fine by me.');
  assert.is(mail({ references: ['a@b'] }), 'Fine by me.');
  for (const subject of ['Re: Plans', 'AW: Plans', 'Fwd: Plans', 'SV[2]: Plans', 'antw: Plans']) assert.is(mail({ subject }), 'Fine by me.', subject);
  assert.is(mail({ subject: 'Regarding: Plans' }), quoted.trim());
  assert.is(mail({ text: null, inReplyTo: 'a@b' }), null);
});

test.run();
