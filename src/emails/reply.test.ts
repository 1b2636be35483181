// Reply and forward by id over real HTTP and SMTP: mail received at the MX listener is answered with
// POST /emails/:id/reply and /forward, and what reaches the sink is checked as its reader would: From the inbox,
// the right recipients, Re:/Fwd: once, In-Reply-To and References (RFC 5322 3.6.4), the quote or forwarded
// block, the original's files, a DKIM signature that verifies; and the answer is in the original's thread.
import { test } from 'uvu';
import { value } from '../db/query.ts';
import * as assert from 'uvu/assert';
import { simpleParser, type AddressObject } from 'mailparser';
import { eventually } from '../testkit/outbound.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { login, request, seedWorkspace } from '../testkit/app.ts';
import { emailSummary } from '../webhooks/payload.ts';
import { runRetention } from './retention.ts';

let s: InboundScene;

test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  s.routeTo('sender.example');
  const named = await api(`/inboxes/${s.inbox.id}`, { method: 'PATCH', body: { name: 'Hello Team' } });
  assert.is(named.status, 200, JSON.stringify(named.body));
});
test.after(() => s.stop());

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const addresses = (a: AddressObject | AddressObject[] | undefined) => (a ? (Array.isArray(a) ? a : [a]).flatMap((o) => o.value.map((v) => v.address)) : []);

/** A message to the scene's inbox over SMTP, written as given (CRLF added); answers the stored email's id. */
async function received(head: string, body: string, opts: { to?: string[] } = {}): Promise<string> {
  const reply = await s.deliver(`${head.trim()}\n\n${body}`, { to: opts.to ?? [s.inbox.address] });
  const id = reply.code === 250 ? /queued as (em_\w+)/.exec(reply.text)?.[1] : undefined;
  if (!id) throw new Error(`not received: ${reply.code} ${reply.text}`);
  return id;
}

/** The message the sink got for the sent email `id` (found by its Message-ID), parsed, with its raw bytes. */
async function delivered(id: string) {
  const email = (await api(`/emails/${id}`)).body;
  const m = await eventually(() => s.sink.messages.find((x) => x.raw.toString('latin1').includes(email.messageId)), 15_000, `delivery of ${id}`);
  return { m, parsed: await simpleParser(m.raw), email };
}

test('reply: to the sender, from the inbox, Re: once, threading headers, the quote, DKIM, in the thread', async () => {
  const id = await received(
    'From: Bob <bob@sender.example>\nTo: Hello <hello@in.example>, dave@sender.example\nCc: carol@sender.example\nSubject: Plans\nMessage-ID: <plans-2@sender.example>\nIn-Reply-To: <plans-1@sender.example>\nReferences: <plans-0@sender.example> <plans-1@sender.example>',
    'Shall we meet on Tuesday?\n',
  );
  const original = (await api(`/emails/${id}`)).body;
  const res = await api(`/emails/${id}/reply`, { body: { text: 'Tuesday works.' } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body).sort(), ['id', 'providerMessageId', 'threadId']);
  assert.is(res.body.threadId, original.threadId, 'the reply joins the original thread');

  const { m, parsed } = await delivered(res.body.id);
  assert.equal(m.rcptTo, ['bob@sender.example'], 'only the sender, without reply_all');
  assert.equal(parsed.from?.value[0], { address: 'hello@in.example', name: 'Hello Team' });
  assert.equal(addresses(parsed.to), ['bob@sender.example']);
  assert.equal(addresses(parsed.cc), []);
  assert.is(parsed.subject, 'Re: Plans');
  assert.is(parsed.inReplyTo, '<plans-2@sender.example>');
  assert.equal(parsed.references, ['<plans-0@sender.example>', '<plans-1@sender.example>', '<plans-2@sender.example>']);
  assert.match(parsed.text ?? '', /^Tuesday works\.\n\nOn .+, Bob <bob@sender\.example> wrote:\n> Shall we meet on Tuesday\?/);
  const dkim = await s.dkim(m.raw);
  assert.equal([dkim.status, dkim.signingDomain], ['pass', 'in.example']);
  assert.ok(dkim.signedHeaders.includes('in-reply-to') && dkim.signedHeaders.includes('references'), `threading headers are signed: ${dkim.signedHeaders}`);

  const thread = (await api(`/threads/${original.threadId}`)).body;
  assert.equal(thread.data.map((e: { id: string }) => e.id), [id, res.body.id]);
  const sent = (await api(`/emails/${res.body.id}`)).body;
  assert.equal([sent.direction, sent.inReplyTo, sent.inboxId === null, sent.extractedText], ['out', 'plans-2@sender.example', true, null]);
});

test('References: the original\'s In-Reply-To when it has no References (RFC 5322 3.6.4)', async () => {
  const id = await received('From: Bob <bob@sender.example>\nTo: hello@in.example\nSubject: Short chain\nMessage-ID: <chain-2@sender.example>\nIn-Reply-To: <chain-1@sender.example>', 'Hi.\n');
  const res = await api(`/emails/${id}/reply`, { body: { text: 'Ok.' } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const { parsed } = await delivered(res.body.id);
  assert.equal(parsed.references, ['<chain-1@sender.example>', '<chain-2@sender.example>']);
});

test('reply_all: To the Reply-To, Cc the other recipients less the inbox, html quoted in a blockquote, files, no Re: Re:', async () => {
  const id = await received(
    'From: Bob <bob@sender.example>\nReply-To: Team List <list@sender.example>\nTo: hello@in.example, dave@sender.example\nCc: carol@sender.example, HELLO@in.example\nSubject: RE: Budget\nMessage-ID: <budget@sender.example>',
    'The budget is <attached>.\n',
  );
  const note = { filename: 'notes.txt', content: Buffer.from('my notes').toString('base64'), content_type: 'text/plain' };
  const res = await api(`/emails/${id}/reply`, { body: { reply_all: true, html: '<p>Thanks &amp; noted.</p>', cc: ['erin@sender.example'], bcc: 'boss@sender.example', attachments: [note] } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const { m, parsed } = await delivered(res.body.id);
  assert.equal(addresses(parsed.to), ['list@sender.example']);
  assert.equal(addresses(parsed.cc), ['dave@sender.example', 'carol@sender.example', 'erin@sender.example']);
  assert.equal([...m.rcptTo].sort(), ['boss@sender.example', 'carol@sender.example', 'dave@sender.example', 'erin@sender.example', 'list@sender.example']);
  assert.not.match(m.raw.toString('latin1'), /^Bcc:/im, 'Bcc stays in the envelope');
  assert.is(parsed.subject, 'RE: Budget', 'an existing RE: is kept, not doubled');
  assert.equal([parsed.references].flat(), ['<budget@sender.example>']);
  const html = typeof parsed.html === 'string' ? parsed.html : '';
  assert.match(html, /<p>Thanks &amp; noted\.<\/p>/);
  assert.match(html, /<blockquote[^>]*>The budget is &lt;attached&gt;\./, 'the original is quoted, escaped');
  assert.match(html, /On .+, Bob &lt;bob@sender\.example&gt; wrote:/);
  assert.equal(parsed.attachments.map((a) => [a.filename, a.content.toString()]), [['notes.txt', 'my notes']], 'the reply carries its own files only');
  assert.equal((await s.dkim(m.raw)).status, 'pass');
});

test('forward: to the given address, Fwd:, the forwarded block, the original files again (after retention too), in the thread', async () => {
  const pdf = Buffer.from('%PDF-1.4 figures for the quarter\n');
  const id = await received(
    'From: Bob <bob@sender.example>\nTo: hello@in.example\nSubject: Figures\nMessage-ID: <figures@sender.example>\nDate: Sun, 29 Nov 2026 09:00:00 +0000\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="b1"',
    `--b1\nContent-Type: text/plain; charset=utf-8\n\nThe figures are attached.\n--b1\nContent-Type: application/pdf; name="q3.pdf"\nContent-Disposition: attachment; filename="q3.pdf"\nContent-Transfer-Encoding: base64\n\n${pdf.toString('base64')}\n--b1--\n`,
  );
  const original = (await api(`/emails/${id}`)).body;
  const res = await api(`/emails/${id}/forward`, { body: { to: ['Frank <frank@sender.example>'], text: 'FYI, see below.' } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.threadId, original.threadId);
  const { m, parsed } = await delivered(res.body.id);
  assert.equal(m.rcptTo, ['frank@sender.example']);
  assert.equal(parsed.from?.value[0], { address: 'hello@in.example', name: 'Hello Team' });
  assert.is(parsed.subject, 'Fwd: Figures');
  assert.match(
    parsed.text ?? '',
    /^FYI, see below\.\n\n---------- Forwarded message ---------\nFrom: Bob <bob@sender\.example>\nDate: .+\nSubject: Figures\nTo: hello@in\.example\n\nThe figures are attached\./,
  );
  assert.equal(parsed.attachments.map((a) => [a.filename, a.contentType, a.content.toString()]), [['q3.pdf', 'application/pdf', pdf.toString()]]);
  assert.equal((await s.dkim(m.raw)).status, 'pass');
  const thread = (await api(`/threads/${original.threadId}`)).body;
  assert.ok(thread.data.some((e: { id: string }) => e.id === res.body.id), 'the forward is in the thread');

  // Retention dropped the original's raw bytes: its files are kept, so a forward still carries them.
  const later = { ...s.t.app, clock: { now: () => Date.now() + 40 * 24 * 3600_000 } };
  assert.ok((await runRetention(later, { mailDays: 0, rawDays: 10, eventsDays: 0 })).raw >= 1);
  assert.equal((await api(`/emails/${id}/raw`)).body.error?.code, 'raw_expired');
  // Without a note: the block alone.
  const bare = await api(`/emails/${id}/forward`, { body: { to: 'gina@sender.example' } });
  assert.is(bare.status, 200, JSON.stringify(bare.body));
  const again = await delivered(bare.body.id);
  assert.match(again.parsed.text ?? '', /^---------- Forwarded message ---------\n/);
  assert.is(again.parsed.attachments.length, 1);
});

test('reply to sent mail: to its recipients again, from its own From, in its thread; idempotent', async () => {
  const sent = await s.send({ from: 'Hello Team <hello@in.example>', to: ['ivan@sender.example'], subject: 'Invoice', text: 'Here it is.' });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const headers = { 'Idempotency-Key': 'reply-to-invoice-1' };
  const res = await api(`/emails/${sent.body.id}/reply`, { body: { text: 'One more thing.' }, headers });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.threadId, sent.body.threadId);
  const replay = await api(`/emails/${sent.body.id}/reply`, { body: { text: 'One more thing.' }, headers });
  assert.equal([replay.status, replay.body, replay.headers.get('idempotent-replayed')], [200, res.body, 'true']);
  const { m, parsed } = await delivered(res.body.id);
  assert.equal(m.rcptTo, ['ivan@sender.example']);
  assert.is(parsed.subject, 'Re: Invoice');
  assert.is(parsed.inReplyTo, sent.body.providerMessageId);
});

test('draft: the reply kept as a composer draft, not sent; sent from the draft it threads; only full access', async () => {
  const id = await received('From: "Lovelace, Ada" <ada@sender.example>\nTo: hello@in.example\nSubject: Budget\nMessage-ID: <budget-1@sender.example>', 'Is the budget final?\n');
  const before = s.sink.messages.length;
  const res = await api(`/emails/${id}/reply`, { body: { text: 'Nearly: Friday.', draft: true } });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.match(res.body.id, /^dr_/);
  const draft = (await api(`/drafts/${res.body.id}`)).body;
  assert.equal([draft.from, draft.to, draft.subject, draft.inReplyTo], ['Hello Team <hello@in.example>', ['"Lovelace, Ada" <ada@sender.example>'], 'Re: Budget', id]);
  assert.match(draft.text, /^Nearly: Friday\.\n\nOn .+, "?Lovelace, Ada"? <ada@sender\.example> wrote:\n> Is the budget final\?/);
  const bad = await api(`/emails/${id}/reply`, { body: { text: 'x', draft: true, scheduled_at: '2030-01-01T00:00:00Z' } });
  assert.equal([bad.status, bad.body.error.code, bad.body.error.message.split(':')[0]], [400, 'validation_error', 'scheduled_at']);
  await new Promise((r) => setTimeout(r, 300));
  assert.is(s.sink.messages.length, before, 'a draft sends nothing');

  const sent = await api(`/drafts/${res.body.id}/send`, { method: 'POST', body: {} });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const { parsed } = await delivered(sent.body.id);
  assert.is(parsed.inReplyTo, '<budget-1@sender.example>');
  assert.is((await api(`/emails/${sent.body.id}`)).body.threadId, (await api(`/emails/${id}`)).body.threadId);

  const cookie = await login(s.t, s.email);
  const made = await request(`${s.t.api}/keys`, { body: { name: 'inbox', permission: 'inbox_access', inbox_ids: [s.inbox.id] }, cookie, headers: { origin: s.t.url } });
  const scoped = await request(`${s.t.api}/emails/${id}/reply`, { key: made.body.key, body: { text: 'x', draft: true } });
  assert.equal([scoped.status, scoped.body.error.code], [403, 'insufficient_scope']);
  assert.match(scoped.body.error.message, /full_access/);
});

test('forward as a draft: the forwarded block and the original files on the draft, recipients left to the sender; within a draft\'s limits', async () => {
  const file = (name: string, text: string) => `--b1\nContent-Type: text/plain; name="${name}"\nContent-Disposition: attachment; filename="${name}"\n\n${text}\n`;
  const head = (subject: string) => `From: Bob <bob@sender.example>\nTo: hello@in.example\nSubject: ${subject}\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="b1"`;
  const id = await received(head('Minutes'), `--b1\nContent-Type: text/plain\n\nThe minutes are attached.\n${file('minutes.txt', 'We met.')}--b1--\n`);
  const res = await api(`/emails/${id}/forward`, { body: { draft: true } });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.equal([res.body.subject, res.body.to, res.body.from], ['Fwd: Minutes', undefined, 'Hello Team <hello@in.example>']);
  assert.match(res.body.text, /^---------- Forwarded message ---------\nFrom: Bob <bob@sender\.example>\n/);
  assert.equal(res.body.attachments.map((a: { filename: string; sizeBytes: number }) => [a.filename, a.sizeBytes]), [['minutes.txt', 7]]);

  const addressed = await api(`/drafts/${res.body.id}`, { method: 'PUT', body: { from: res.body.from, to: ['hal@sender.example'], subject: res.body.subject, text: `Have a look.\n${res.body.text}`, in_reply_to: res.body.inReplyTo } });
  assert.is(addressed.status, 200, JSON.stringify(addressed.body));
  const sent = await api(`/drafts/${res.body.id}/send`, { method: 'POST', body: {} });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const { parsed } = await delivered(sent.body.id);
  assert.equal(parsed.attachments.map((a) => [a.filename, a.content.toString()]), [['minutes.txt', 'We met.']]);

  const crowded = await received(head('Eleven files'), `--b1\nContent-Type: text/plain\n\nMany.\n${Array.from({ length: 11 }, (_, i) => file(`f${i}.txt`, 'x')).join('')}--b1--\n`);
  const before = (await api('/drafts')).body.count;
  const refused = await api(`/emails/${crowded}/forward`, { body: { draft: true } });
  assert.equal([refused.status, refused.body.error?.code], [400, 'limit_exceeded']);
  assert.is((await api('/drafts')).body.count, before, 'no draft is left behind');
});

test('errors: unknown or foreign email 404, bad bodies 400 naming the field, no inbox 409; nothing is sent', async () => {
  const id = await received('From: Bob <bob@sender.example>\nTo: hello@in.example\nSubject: Errors\nMessage-ID: <errors@sender.example>', 'Hi.\n');
  const count = async () => Number(await s.t.app.store.read(value<number>("SELECT count(*) FROM emails WHERE direction = 'out'")));
  const before = await count();
  const expect = async (path: string, body: unknown, status: number, code: string, message: RegExp, key = s.key) => {
    const res = await api(path, { body, key });
    assert.equal([res.status, res.body.error?.code], [status, code], `${path} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
    assert.match(res.body.error.message, message);
  };
  await expect('/emails/em_01JZZZZZZZZZZZZZZZZZZZZZZZ/reply', { text: 'x' }, 404, 'not_found', /Email not found/);
  const other = await seedWorkspace(s.t, { workspace: 'other' });
  await expect(`/emails/${id}/reply`, { text: 'x' }, 404, 'not_found', /Email not found/, other.key);
  await expect(`/emails/${id}/forward`, { to: 'x@sender.example' }, 404, 'not_found', /Email not found/, other.key);
  await expect(`/emails/${id}/reply`, {}, 400, 'validation_error', /^text: give text, html or both/);
  await expect(`/emails/${id}/reply`, { text: 'x', reply_all: 'yes' }, 400, 'validation_error', /^reply_all: /);
  await expect(`/emails/${id}/reply`, { text: 'x', to: ['x@sender.example'] }, 400, 'validation_error', /to/);
  await expect(`/emails/${id}/reply`, { text: 'x', cc: ['not an address'] }, 400, 'validation_error', /^cc\.0: /);
  await expect(`/emails/${id}/reply`, { text: 'x', headers: { 'In-Reply-To': '<x@y>' } }, 400, 'validation_error', /^headers\.In-Reply-To: is set by the box/);
  await expect(`/emails/${id}/forward`, { text: 'x' }, 400, 'validation_error', /^to: /);
  await expect(`/emails/${id}/forward`, { to: [] }, 400, 'validation_error', /^to: needs at least one recipient/);
  await expect(`/emails/${id}/forward`, { to: 'x@sender.example', attachments: [{ filename: 'a.txt', content: '***' }] }, 400, 'validation_error', /^attachments\.0\.content: must be base64/);
  const bad = await api(`/emails/${id}/reply`, { body: '{"text":', headers: { 'content-type': 'application/json' } });
  assert.equal([bad.status, bad.body.error?.code], [400, 'invalid_json']);
  const get = await api(`/emails/${id}/forward`);
  assert.equal([get.status, get.headers.get('allow')], [405, 'POST']);

  // The inbox it came to is gone: nothing to send from.
  const inbox = await s.createInbox(s.domain.id, 'temporary');
  const lone = await received('From: Bob <bob@sender.example>\nTo: temporary@in.example\nSubject: Lone\nMessage-ID: <lone@sender.example>', 'Hi.\n', { to: [inbox.address] });
  assert.is((await api(`/inboxes/${inbox.id}`, { method: 'DELETE' })).status, 200);
  await expect(`/emails/${lone}/reply`, { text: 'x' }, 409, 'no_inbox', /came to no inbox/);
  assert.is(await count(), before, 'no email was sent');
});

test("a stranger's subject and names never break a header; no address to reply to is 409", async () => {
  const subject = `=?utf-8?B?${Buffer.from('Line one\r\nBcc: everyone@sender.example').toString('base64')}?=`;
  const name = `=?utf-8?B?${Buffer.from('Bob\nBcc: x@y').toString('base64')}?=`;
  const id = await received(`From: ${name} <bob@sender.example>\nTo: hello@in.example\nSubject: ${subject}\nMessage-ID: <crlf@sender.example>`, 'Hi.\n');
  const res = await api(`/emails/${id}/reply`, { body: { text: 'Hello.' } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const { m, parsed } = await delivered(res.body.id);
  assert.is(parsed.subject, 'Re: Line one Bcc: everyone@sender.example');
  assert.equal(m.rcptTo, ['bob@sender.example']);
  const head = m.raw.toString('latin1').split('\r\n\r\n')[0];
  assert.not.match(head, /^Bcc:/im, 'no header of the stranger\'s making');
  assert.match(parsed.text ?? '', /, Bob Bcc: x@y <bob@sender\.example> wrote:\n/, 'the attribution on one line');

  const reply = await s.deliver('From: undisclosed-recipients:;\nTo: hello@in.example\nSubject: Nobody\nMessage-ID: <nobody@sender.example>\n\nHi.\n', { from: '' });
  const nobody = /queued as (em_\w+)/.exec(reply.text)?.[1];
  assert.ok(nobody, `${reply.code} ${reply.text}`);
  const refused = await api(`/emails/${nobody}/reply`, { body: { text: 'x' } });
  assert.equal([refused.status, refused.body.error?.code], [409, 'no_reply_address'], JSON.stringify(refused.body));
  const forwarded = await api(`/emails/${nobody}/forward`, { body: { to: 'kim@sender.example' } });
  assert.is(forwarded.status, 200, 'a forward needs no address of the original');
});

const GMAIL = `Sounds good, see you Tuesday.

Alice

On Sun, Nov 29, 2026 at 9:40 AM Hello Team <hello@in.example> wrote:

> Shall we meet on Tuesday?
>
> --
> Hello Team
`;

const OUTLOOK = `Thanks, I will send the figures tomorrow.

Best regards,
Carol

________________________________
From: Hello Team <hello@in.example>
Sent: Sunday, November 29, 2026 9:40 AM
To: Carol <carol@sender.example>
Subject: Figures

Could you send the figures?
`;

const APPLE = `Yes, the meeting works for me.

Sent from my iPhone

> On 29 Nov 2026, at 09:40, Hello Team <hello@in.example> wrote:
>
> Does the meeting work for you?
`;

test('extractedText: the new text of Gmail, Outlook and Apple Mail replies, on the record, the list and not on sent mail', async () => {
  const cases: Array<[string, string, string]> = [
    ['Gmail', GMAIL, 'Sounds good, see you Tuesday.\n\nAlice'],
    ['Outlook', OUTLOOK, 'Thanks, I will send the figures tomorrow.'],
    ['Apple Mail', APPLE, 'Yes, the meeting works for me.'],
    ['no quote', 'Just one line, nothing quoted.\n', 'Just one line, nothing quoted.'],
  ];
  for (const [shape, body, expected] of cases) {
    const id = await received(`From: Bob <bob@sender.example>\nTo: hello@in.example\nSubject: Re: ${shape}\nMessage-ID: <${shape.replace(/\W/g, '')}@sender.example>`, body);
    const email = (await api(`/emails/${id}`)).body;
    assert.is(email.extractedText, expected, shape);
    assert.is(email.text.trim(), body.trim(), `${shape}: text stays whole`);
    const list = (await api(`/emails?query=${encodeURIComponent(shape.split(' ')[0])}&direction=in`)).body;
    const row = list.data.find((e: { id: string }) => e.id === id);
    assert.ok(row, `${shape} is listed`);
    assert.is(row.extractedText, expected, `${shape} in the list`);
    // What the email.received webhook and the live stream carry.
    const workspaceId = (await s.t.app.store.read(value<string>('SELECT workspace_id FROM emails WHERE id = ?', id)))!;
    assert.is((await s.t.app.store.read(emailSummary(s.t.app.config.publicUrl, workspaceId, id, true)))?.extractedText, expected, `${shape} in the webhook`);
  }
  const out = (await api('/emails?direction=out&limit=1')).body.data[0];
  assert.is(out.extractedText, null, 'sent mail has none');
});

test.run();
