// The mailbox API for one email, over HTTP against the real app, with mail received over real SMTP sessions
// and sent through the API to the test kit's sink: the email record, its raw bytes, flags and what they teach
// about the sender (seen on the next message that sender sends), deletion with every row, threads, and
// attachment downloads; and that another workspace's key sees none of it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { request, seedWorkspace } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { attachmentDisposition } from '../http/content-disposition.ts';

let s: InboundScene;
let other: string;
let db: Database.Database;
let signer: { sign(raw: string): Promise<Buffer> };

test.before(async () => {
  s = await startInboundScene();
  signer = s.senderDomain('sender.example');
  s.routeTo('dest.example');
  other = (await seedWorkspace(s.t, { workspace: 'other' })).key;
  db = s.readDb();
});
test.after(() => s.stop());

const api = (path: string, opts: { method?: string; body?: unknown; key?: string } = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const bytes = async (path: string, key = s.key) => {
  const res = await fetch(`${s.t.api}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
};
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let n = 0;
interface Part {
  filename: string;
  contentType: string;
  content: Buffer;
  /** The Content-Disposition parameter as written, when not a plain quoted filename. */
  param?: string;
}
/** A MIME message: text and HTML alternatives, then attachments (base64). */
function mime(opts: { from?: string; subject?: string; text?: string; html?: string; headers?: string; attachments?: Part[]; messageId?: string } = {}) {
  const id = opts.messageId ?? `mb${++n}.${Date.now()}@sender.example`;
  const b = `b${n}x`;
  const text = opts.text ?? 'Hello there, a plain message.';
  const parts = [
    `--${b}\r\nContent-Type: multipart/alternative; boundary="${b}alt"\r\n\r\n` +
      `--${b}alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${text}\r\n` +
      (opts.html ? `--${b}alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n${opts.html}\r\n` : '') +
      `--${b}alt--\r\n`,
    ...(opts.attachments ?? []).map(
      (a) =>
        `--${b}\r\nContent-Type: ${a.contentType}\r\nContent-Transfer-Encoding: base64\r\n` +
        `Content-Disposition: attachment; ${a.param ?? `filename="${a.filename}"`}\r\n\r\n${a.content.toString('base64').replace(/.{76}/g, '$&\r\n')}\r\n`,
    ),
  ];
  return {
    id,
    raw:
      `From: ${opts.from ?? 'Alice Example <alice@sender.example>'}\r\nTo: Hello <hello@in.example>\r\nSubject: ${opts.subject ?? `Message ${n}`}\r\n` +
      `Message-ID: <${id}>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n${opts.headers ?? ''}MIME-Version: 1.0\r\n` +
      `Content-Type: multipart/mixed; boundary="${b}"\r\n\r\n${parts.join('')}--${b}--\r\n`,
  };
}

/** Delivers over SMTP and answers the stored email's id. */
async function receive(raw: string | Buffer, from = 'alice@sender.example'): Promise<string> {
  const reply = await s.deliver(raw, { from });
  assert.is(reply.code, 250, reply.text);
  return /queued as (em_\w+)/.exec(reply.text)![1];
}
const row = async (id: string) => (await s.stored('e.id = ?', id))[0];
const learned = (address: string) => db.prepare('SELECT category, important FROM sender_rules WHERE address = ?').get(address) as { category: string | null; important: number | null } | undefined;

test('GET /emails/:id of a received message: every field, authentication verdicts, attachments with sizes', async () => {
  const pdf = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));
  const m = mime({
    subject: 'Quarterly report',
    text: 'The report is attached.',
    html: '<p>The report is <b>attached</b>.</p>',
    headers: 'Cc: Carol <carol@elsewhere.example>\r\nReply-To: Replies <replies@sender.example>\r\n',
    attachments: [{ filename: 'report.pdf', contentType: 'application/pdf', content: pdf }],
  });
  const id = await receive(await signer.sign(m.raw));
  const res = await api(`/emails/${id}`);
  assert.is(res.status, 200);
  const e = res.body;
  assert.is(e.id, id);
  assert.is(e.direction, 'in');
  assert.is(e.status, 'received');
  assert.equal(e.from, { name: 'Alice Example', address: 'alice@sender.example' });
  assert.equal(e.to, [{ name: 'Hello', address: 'hello@in.example' }]);
  assert.equal(e.cc, [{ name: 'Carol', address: 'carol@elsewhere.example' }]);
  assert.equal(e.bcc, []);
  assert.equal(e.replyTo, [{ name: 'Replies', address: 'replies@sender.example' }]);
  assert.is(e.subject, 'Quarterly report');
  assert.is(e.text.trim(), 'The report is attached.');
  assert.is(e.html.trim(), '<p>The report is <b>attached</b>.</p>');
  assert.is(e.snippet, 'The report is attached.');
  assert.match(e.createdAt, ISO);
  assert.ok(Math.abs(Date.parse(e.createdAt) - Date.now()) < 60_000);
  assert.is(e.inboxId, s.inbox.id);
  assert.is(e.threadId, id, 'a message that answers nothing starts its own thread');
  assert.is(e.messageId, m.id);
  assert.is(e.providerMessageId, `<${m.id}>`);
  assert.is(e.inReplyTo, null);
  assert.is(e.domain, 'in.example');
  assert.is(e.readAt, null);
  assert.is(e.archivedAt, null);
  assert.is(e.category, 'primary');
  assert.is(e.important, false);
  assert.is(e.classification, 'Personal mail: no newsletter, bulk or automated signs');
  assert.equal(e.labels, []);
  assert.is(e.isTest, false);
  assert.is(e.authentication.spf.result, 'pass');
  assert.is(e.authentication.dkim.result, 'pass');
  assert.equal(e.authentication.dkim.domains, ['sender.example']);
  assert.is(e.authentication.dmarc.result, 'pass');
  assert.is(e.attachments.length, 1);
  const [a] = e.attachments;
  assert.match(a.id, /^att_[0-9A-Z]{26}$/);
  assert.equal({ ...a, id: '' }, { id: '', filename: 'report.pdf', contentType: 'application/pdf', contentId: null, sizeBytes: 1000, available: true });
  const file = await bytes(`/attachments/${a.id}`);
  assert.equal([file.status, file.body.length], [200, 1000], 'available: the bytes are served');
});

test('GET /emails/:id of a sent message; its raw bytes are the signed message the recipient got', async () => {
  const sent = await s.send({
    from: 'Hello Desk <hello@in.example>',
    to: ['Bob <bob@dest.example>'],
    bcc: ['audit@dest.example'],
    subject: 'Your order',
    text: 'Thanks for your order.',
    html: '<p>Thanks for your order.</p>',
    tags: [{ name: 'kind', value: 'order' }],
    attachments: [{ filename: 'receipt.txt', content: Buffer.from('total: 12 EUR\n').toString('base64'), content_type: 'text/plain' }],
  });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const e = (await api(`/emails/${sent.body.id}`)).body;
  assert.is(e.id, sent.body.id);
  assert.is(e.providerMessageId, sent.body.providerMessageId);
  assert.is(e.threadId, sent.body.threadId);
  assert.is(e.direction, 'out');
  assert.ok(['sent', 'delivered'].includes(e.status), e.status);
  assert.equal(e.from, { name: 'Hello Desk', address: 'hello@in.example' });
  assert.equal(e.to, [{ name: 'Bob', address: 'bob@dest.example' }]);
  assert.equal(e.bcc, [{ name: null, address: 'audit@dest.example' }]);
  assert.is(e.subject, 'Your order');
  assert.is(e.text, 'Thanks for your order.');
  assert.is(e.html, '<p>Thanks for your order.</p>');
  assert.is(e.snippet, 'Thanks for your order.');
  assert.equal(e.tags, [{ name: 'kind', value: 'order' }]);
  assert.is(e.messageClass, 'transactional');
  assert.is(e.inboxId, null);
  assert.is(e.category, null);
  assert.is(e.classification, null);
  assert.is(e.authentication, null);
  assert.equal(e.labels, []);
  assert.equal(
    e.attachments.map((a: Record<string, unknown>) => [a.filename, a.contentType, a.sizeBytes, a.available]),
    [['receipt.txt', 'text/plain', 14, true]],
  );
  const receipt = await bytes(`/attachments/${e.attachments[0].id}`);
  assert.equal([receipt.status, receipt.body.toString()], [200, 'total: 12 EUR\n']);

  const delivered = await eventually(() => s.sink.messages.find((m) => m.rcptTo.includes('bob@dest.example')), 10_000, 'delivery to bob');
  const raw = await eventually(async () => {
    const r = await bytes(`/emails/${e.id}/raw`);
    return r.status === 200 && r;
  });
  assert.is(raw.headers.get('content-type'), 'message/rfc822');
  assert.ok(raw.body.equals(delivered.raw), 'the raw message is what went out');
  assert.match(raw.body.toString(), /^DKIM-Signature: /);

  // Before the queue has signed a sent email there are no raw bytes yet (the state is put back by hand here:
  // the queue signs within milliseconds of the send).
  const rw = new Database(join(s.t.dataDir, 'mailwright.db'));
  // Unsigned is no raw and no signed_at (raw gone but signed_at set is retention's doing: 410, retention.test.ts).
  rw.prepare('UPDATE email_contents SET raw = NULL WHERE email_id = ?').run(e.id);
  rw.prepare('UPDATE emails SET signed_at = NULL WHERE id = ?').run(e.id);
  rw.close();
  const unsigned = await api(`/emails/${e.id}/raw`);
  assert.is(unsigned.status, 409);
  assert.is(unsigned.body.error.code, 'raw_not_ready');
  assert.match(unsigned.body.error.message, /not been composed and signed yet/);
});

test('GET /emails/:id/raw of a received message: the stored bytes, as message/rfc822, as a download', async () => {
  const m = mime({ subject: 'Raw please', text: 'caf\u00e9 \u2603' });
  const id = await receive(m.raw);
  const res = await bytes(`/emails/${id}/raw`);
  assert.is(res.status, 200);
  assert.is(res.headers.get('content-type'), 'message/rfc822');
  assert.is(res.headers.get('x-content-type-options'), 'nosniff');
  assert.is(res.headers.get('content-disposition'), `attachment; filename="${id}.eml"; filename*=UTF-8''${id}.eml`);
  assert.ok(res.body.equals((await row(id)).raw), 'byte for byte what was stored');
  assert.ok(res.body.toString().endsWith(m.raw), 'which is the message as received after our trace fields');
});

test("another workspace's key gets 404 for every route of an email, its thread and its attachment, and changes nothing", async () => {
  const m = mime({ subject: 'Private', attachments: [{ filename: 'secret.txt', contentType: 'text/plain', content: Buffer.from('secret') }] });
  const id = await receive(m.raw);
  const attachment = (await api(`/emails/${id}`)).body.attachments[0].id;
  const answers = [
    await api(`/emails/${id}`, { key: other }),
    await api(`/emails/${id}/raw`, { key: other }),
    await api(`/emails/${id}`, { method: 'PATCH', body: { read: true, category: 'spam' }, key: other }),
    await api(`/emails/${id}`, { method: 'DELETE', key: other }),
    await api(`/threads/${id}`, { key: other }),
    await api(`/attachments/${attachment}`, { key: other }),
  ];
  for (const res of answers) {
    assert.is(res.status, 404);
    assert.is(res.body.error.code, 'not_found');
  }
  const mine = await api(`/emails/${id}`);
  assert.is(mine.status, 200, 'still there');
  assert.is(mine.body.readAt, null);
  assert.is(mine.body.category, 'primary');
  assert.is(learned('alice@sender.example'), undefined, 'nothing learned');
  assert.is((await api('/emails/em_01JZZZZZZZZZZZZZZZZZZZZZZZ')).status, 404);
});

test('PATCH read and archived: set once (true again keeps the time), cleared by false; the answer shape', async () => {
  const id = await receive(mime({ subject: 'Flags' }).raw);
  const keys = ['id', 'readAt', 'archivedAt', 'trashedAt', 'category', 'important', 'classification'];
  const read = await api(`/emails/${id}`, { method: 'PATCH', body: { read: true } });
  assert.is(read.status, 200);
  assert.equal(Object.keys(read.body).sort(), [...keys].sort());
  assert.is(read.body.id, id);
  assert.match(read.body.readAt, ISO);
  assert.ok(Math.abs(Date.parse(read.body.readAt) - Date.now()) < 60_000);
  assert.is(read.body.archivedAt, null);
  assert.is(read.body.category, 'primary');
  assert.is(read.body.important, false);
  assert.is(read.body.classification, 'Personal mail: no newsletter, bulk or automated signs');
  await new Promise((r) => setTimeout(r, 5));
  const again = await api(`/emails/${id}`, { method: 'PATCH', body: { read: true, archived: true } });
  assert.is(again.body.readAt, read.body.readAt, 'the first read time stays');
  assert.match(again.body.archivedAt, ISO);
  const got = (await api(`/emails/${id}`)).body;
  assert.is(got.readAt, read.body.readAt);
  assert.is(got.archivedAt, again.body.archivedAt);
  const cleared = await api(`/emails/${id}`, { method: 'PATCH', body: { read: false, archived: false } });
  assert.is(cleared.body.readAt, null);
  assert.is(cleared.body.archivedAt, null);
  assert.is((await api(`/emails/${id}`)).body.readAt, null);
});

test('PATCH validation: empty, unknown field, bad values, learn alone, category on sent mail, spam and important', async () => {
  const id = await receive(mime({ subject: 'Validation' }).raw);
  const sent = (await s.send({ from: 'hello@in.example', to: ['v@dest.example'], subject: 'Out', text: 'x' })).body.id;
  const cases: Array<[string, unknown, string]> = [
    [id, {}, 'body'],
    [id, { learn: false }, 'body'],
    [id, { read: true, starred: true }, 'body'],
    [id, { read: 'yes' }, 'read'],
    [id, { category: 'promotions' }, 'category'],
    [id, { important: 1 }, 'important'],
    [sent, { category: 'primary' }, 'category'],
    [id, { category: 'spam', important: true }, 'important'],
  ];
  for (const [target, body, path] of cases) {
    const res = await api(`/emails/${target}`, { method: 'PATCH', body });
    assert.is(res.status, 400, JSON.stringify(body));
    assert.is(res.body.error.code, 'validation_error');
    assert.is(res.body.error.errors[0].path, path, JSON.stringify(body));
    assert.ok(res.body.error.message.startsWith(`${path}: `), res.body.error.message);
  }
  assert.match((await api(`/emails/${sent}`, { method: 'PATCH', body: { category: 'spam' } })).body.error.message, /received mail only/);
  assert.is((await api(`/emails/${id}`)).body.category, 'primary', 'nothing changed');
  const flagged = await api(`/emails/${sent}`, { method: 'PATCH', body: { important: true, read: true } });
  assert.is(flagged.status, 200, 'sent mail takes the other fields');
  assert.is(flagged.body.important, true);
  assert.is(flagged.body.category, null);
  assert.is(learned('hello@in.example'), undefined, 'sending teaches nothing about the workspace itself');
  assert.is((await api('/emails/em_01JZZZZZZZZZZZZZZZZZZZZZZZ', { method: 'PATCH', body: { read: true } })).status, 404);
});

test('reporting spam teaches the sender: the next message from that address (any case) lands in spam with the reason', async () => {
  const first = await receive(mime({ from: 'Bob <bob@sender.example>', subject: 'Cheap watches' }).raw, 'bob@sender.example');
  const res = await api(`/emails/${first}`, { method: 'PATCH', body: { category: 'spam' } });
  assert.is(res.status, 200);
  assert.equal(res.body, { id: first, readAt: null, archivedAt: null, trashedAt: null, category: 'spam', important: false, classification: 'You marked this sender as spam' });
  assert.equal(learned('bob@sender.example'), { category: 'spam', important: null });
  const next = await receive(mime({ from: 'Bob <BOB@Sender.Example>', subject: 'More watches' }).raw, 'bob@sender.example');
  assert.is((await row(next)).category, 'spam');
  assert.is((await row(next)).classification, 'You marked this sender as spam');
  const got = (await api(`/emails/${next}`)).body;
  assert.is(got.category, 'spam');
  assert.is(got.classification, 'You marked this sender as spam');
});

test('learn: false changes only this message: the sender\'s next message is not in spam', async () => {
  const first = await receive(mime({ from: 'Carol <carol@sender.example>', subject: 'One-off' }).raw, 'carol@sender.example');
  const res = await api(`/emails/${first}`, { method: 'PATCH', body: { category: 'spam', learn: false } });
  assert.is(res.body.category, 'spam');
  assert.is(res.body.classification, 'You moved this message to Spam');
  assert.is(learned('carol@sender.example'), undefined);
  const next = await receive(mime({ from: 'Carol <carol@sender.example>', subject: 'Hello again' }).raw, 'carol@sender.example');
  assert.is((await row(next)).category, 'primary');
  const moved = await api(`/emails/${next}`, { method: 'PATCH', body: { category: 'updates', learn: false } });
  assert.is(moved.body.classification, 'You moved this message to Updates');
});

test('not spam overrides the automatic spam check for that sender from then on', async () => {
  // A domain of its own whose SPF does not allow the test client, under p=reject: its mail fails DMARC.
  s.senderDomain('strict.example');
  s.dns.set('strict.example', 'TXT', ['v=spf1 ip4:192.0.2.1 -all']);
  const first = await receive(mime({ from: 'Dan <dan@strict.example>', subject: 'Real mail' }).raw, 'dan@strict.example');
  assert.is((await row(first)).category, 'spam');
  const res = await api(`/emails/${first}`, { method: 'PATCH', body: { category: 'primary' } });
  assert.is(res.body.category, 'primary');
  assert.is(res.body.classification, 'You marked this sender as not spam');
  assert.equal(learned('dan@strict.example'), { category: 'primary', important: null });
  const next = await receive(mime({ from: 'Dan <dan@strict.example>', subject: 'More real mail' }).raw, 'dan@strict.example');
  assert.is((await row(next)).category, 'primary');
  assert.match((await row(next)).classification, /^You marked this sender as not spam, overriding: DMARC failed for strict\.example/);
});

test('importance is learned for the sender (and kept apart from the category); learn: false marks one message', async () => {
  const first = await receive(mime({ from: 'Erin <erin@sender.example>', subject: 'Board meeting' }).raw, 'erin@sender.example');
  const res = await api(`/emails/${first}`, { method: 'PATCH', body: { important: true } });
  assert.is(res.body.important, true);
  assert.is(res.body.category, 'primary');
  assert.is(res.body.classification, 'Personal mail: no newsletter, bulk or automated signs; you marked this sender as important');
  assert.equal(learned('erin@sender.example'), { category: null, important: 1 });
  const moved = await api(`/emails/${first}`, { method: 'PATCH', body: { category: 'updates' } });
  assert.is(moved.body.classification, 'You moved this sender to Updates; you marked this sender as important', 'the importance reason stays');
  assert.equal(learned('erin@sender.example'), { category: 'updates', important: 1 }, 'the other column is kept');
  const next = await receive(mime({ from: 'Erin <erin@sender.example>', subject: 'Minutes' }).raw, 'erin@sender.example');
  assert.is((await row(next)).important, 1);
  assert.is((await row(next)).category, 'updates');
  assert.is((await row(next)).classification, 'You moved this sender to Updates; you marked this sender as important');

  const once = await receive(mime({ from: 'Finn <finn@sender.example>', subject: 'Urgent once' }).raw, 'finn@sender.example');
  const one = await api(`/emails/${once}`, { method: 'PATCH', body: { important: true, learn: false } });
  assert.is(one.body.important, true);
  assert.is(one.body.classification, 'Personal mail: no newsletter, bulk or automated signs; you marked this message as important');
  assert.is(learned('finn@sender.example'), undefined);
  const later = await receive(mime({ from: 'Finn <finn@sender.example>', subject: 'Not urgent' }).raw, 'finn@sender.example');
  assert.is((await row(later)).important, 0);
});

test('moving an important message to spam clears important; spam cannot be marked important', async () => {
  const id = await receive(mime({ from: 'Gus <gus@sender.example>', subject: 'Hmm' }).raw, 'gus@sender.example');
  assert.is((await api(`/emails/${id}`, { method: 'PATCH', body: { important: true, learn: false } })).body.important, true);
  const spam = await api(`/emails/${id}`, { method: 'PATCH', body: { category: 'spam', learn: false } });
  assert.is(spam.body.important, false);
  assert.is(spam.body.classification, 'You moved this message to Spam');
  const refused = await api(`/emails/${id}`, { method: 'PATCH', body: { important: true } });
  assert.is(refused.status, 400);
  assert.is(refused.body.error.errors[0].path, 'important');
  assert.is((await api(`/emails/${id}`)).body.important, false);
});

test('DELETE removes the message, its raw bytes, attachments, events and full-text row; again is 404', async () => {
  const word = `zebracorn${Date.now()}`;
  const id = await receive(
    mime({ subject: `Delete me ${word}`, text: `body ${word}`, attachments: [{ filename: 'gone.bin', contentType: 'application/octet-stream', content: Buffer.from('bye') }] }).raw,
  );
  const attachment = (await api(`/emails/${id}`)).body.attachments[0].id;
  const matches = () => db.prepare(`SELECT count(*) FROM email_search WHERE email_search MATCH ?`).pluck().get(word) as number;
  const count = (table: string) => db.prepare(`SELECT count(*) FROM ${table} WHERE email_id = ?`).pluck().get(id) as number;
  assert.is((await api(`/emails?query=${word}`)).body.count, 1, 'found before');
  assert.is(matches(), 1, 'indexed before');
  assert.is(count('email_attachments'), 1);
  assert.is(count('email_contents'), 1);
  assert.ok(count('events') >= 1);

  const res = await api(`/emails/${id}`, { method: 'DELETE' });
  assert.is(res.status, 200);
  assert.equal(res.body, { ok: true });
  assert.is((await api(`/emails/${id}`)).status, 404);
  assert.is((await api(`/emails/${id}/raw`)).status, 404);
  assert.is((await api(`/attachments/${attachment}`)).status, 404);
  const second = await api(`/emails/${id}`, { method: 'DELETE' });
  assert.is(second.status, 404);
  assert.is(second.body.error.code, 'not_found');
  assert.is(matches(), 0, 'the full-text row is gone');
  assert.is(count('email_attachments'), 0);
  assert.is(count('email_contents'), 0, 'raw bytes and bodies are gone');
  assert.is(count('events'), 0);
  assert.is(db.prepare('SELECT count(*) FROM emails WHERE id = ?').pluck().get(id), 0);
});

test('DELETE of a sent email while a delivery is being attempted is 409; afterwards it goes', async () => {
  const sent = (await s.send({ from: 'hello@in.example', to: ['del@dest.example'], subject: 'Soon gone', text: 'x' })).body.id;
  await eventually(async () => (await s.events(sent)).some((e) => e.type === 'delivered'));
  const rw = new Database(join(s.t.dataDir, 'mailwright.db'));
  rw.prepare("UPDATE deliveries SET state = 'sending' WHERE email_id = ?").run(sent);
  const busy = await api(`/emails/${sent}`, { method: 'DELETE' });
  assert.is(busy.status, 409);
  assert.is(busy.body.error.code, 'delivery_in_progress');
  assert.is((await api(`/emails/${sent}`)).status, 200, 'still there');
  rw.prepare("UPDATE deliveries SET state = 'delivered' WHERE email_id = ?").run(sent);
  rw.close();
  const rowid = db.prepare('SELECT search_rowid FROM emails WHERE id = ?').pluck().get(sent) as number | null;
  const indexed = () => db.prepare('SELECT count(*) FROM email_search WHERE rowid = ?').pluck().get(rowid) as number;
  if (rowid !== null) assert.is(indexed(), 1, 'sent mail is indexed');
  assert.is((await api(`/emails/${sent}`, { method: 'DELETE' })).status, 200);
  assert.is(db.prepare('SELECT count(*) FROM deliveries WHERE email_id = ?').pluck().get(sent), 0);
  assert.is(db.prepare('SELECT count(*) FROM email_contents WHERE email_id = ?').pluck().get(sent), 0);
  if (rowid !== null) assert.is(indexed(), 0, "the sent email's full-text row is gone");
});

test('GET /threads/:id: a sent message and the reply to it, oldest first; 404 for another workspace or no thread', async () => {
  const sent = await s.send({ from: 'hello@in.example', to: ['alice@sender.example'], subject: 'Question', text: 'Are you coming?' });
  assert.is(sent.status, 200);
  await new Promise((r) => setTimeout(r, 5));
  const reply = mime({ subject: 'Re: Question', text: 'Yes!', headers: `In-Reply-To: ${sent.body.providerMessageId}\r\nReferences: ${sent.body.providerMessageId}\r\n` });
  const replyId = await receive(reply.raw);
  const res = await api(`/threads/${sent.body.threadId}`);
  assert.is(res.status, 200);
  assert.is(res.body.id, sent.body.threadId);
  assert.is(res.body.count, 2);
  assert.equal(
    res.body.data.map((e: { id: string; direction: string }) => [e.id, e.direction]),
    [
      [sent.body.id, 'out'],
      [replyId, 'in'],
    ],
  );
  assert.ok(res.body.data[0].createdAt <= res.body.data[1].createdAt);
  assert.is(res.body.data[1].threadId, sent.body.threadId);
  assert.is(res.body.data[1].inReplyTo, sent.body.providerMessageId.slice(1, -1));
  assert.is(res.body.data[1].important, true, 'a reply to mail we sent');
  assert.is(res.body.data[0].text, 'Are you coming?');
  assert.is(res.body.data[1].text.trim(), 'Yes!');
  assert.is((await api(`/threads/${sent.body.threadId}`, { key: other })).status, 404);
  assert.is((await api('/threads/em_01JZZZZZZZZZZZZZZZZZZZZZZZ')).status, 404);
});

test('GET /attachments/:id: exact bytes, stored type, a safe download name, nosniff; HTML is never inline', async () => {
  const binary = Buffer.from(Array.from({ length: 2048 }, (_, i) => (i * 7) % 256));
  const html = Buffer.from('<script>alert(1)</script>');
  // RFC 2231: a name with a path, a quote, non-ASCII letters and a right-to-left override ("fdp.exe" shown
  // as "exe.pdf").
  const hostile = `filename*=UTF-8''..%2F..%2Fr%C3%A9sum%C3%A9%22%E2%80%AEfdp.exe`;
  const m = mime({
    subject: 'Files',
    attachments: [
      { filename: 'ignored', contentType: 'application/x-msdownload', content: binary, param: hostile },
      { filename: 'page.html', contentType: 'text/html', content: html },
    ],
  });
  const id = await receive(m.raw);
  const [evil, page] = (await api(`/emails/${id}`)).body.attachments;
  const res = await bytes(`/attachments/${evil.id}`);
  assert.is(res.status, 200);
  assert.ok(res.body.equals(binary), 'the original bytes');
  assert.is(res.headers.get('content-type'), 'application/x-msdownload');
  assert.is(res.headers.get('x-content-type-options'), 'nosniff');
  assert.is(res.headers.get('content-disposition'), `attachment; filename="r_sum_fdp.exe"; filename*=UTF-8''r%C3%A9sum%C3%A9fdp.exe`);
  assert.is(res.headers.get('content-length'), '2048');

  const served = await bytes(`/attachments/${page.id}`);
  assert.ok(served.body.equals(html));
  assert.is(served.headers.get('content-type'), 'text/html', 'the stored type, with no charset added');
  assert.match(served.headers.get('content-disposition')!, /^attachment; /);
  assert.match(served.headers.get('content-security-policy')!, /default-src 'none'/);

  const foreign = await bytes(`/attachments/${evil.id}`, other);
  assert.is(foreign.status, 404);
  assert.is(JSON.parse(foreign.body.toString()).error.code, 'not_found');
  assert.is((await api('/attachments/att_01JZZZZZZZZZZZZZZZZZZZZZZZ')).status, 404);
});

test('the download name: CR, LF, NUL, quotes, path separators and bidi controls never reach the header', () => {
  const cases: Array<[string, string]> = [
    ['a\r\nSet-Cookie: x=1.txt', `attachment; filename="aSet-Cookie: x=1.txt"; filename*=UTF-8''aSet-Cookie%3A%20x%3D1.txt`],
    ['..\\..\\windows\\evil\u0000.bat', `attachment; filename="evil.bat"; filename*=UTF-8''evil.bat`],
    ['/etc/passwd', `attachment; filename="passwd"; filename*=UTF-8''passwd`],
    ['say "hi"\u202e.txt', `attachment; filename="say hi.txt"; filename*=UTF-8''say%20hi.txt`],
    ["100% it's (ok)*.pdf", `attachment; filename="100_ it's (ok)*.pdf"; filename*=UTF-8''100%25%20it%27s%20%28ok%29%2A.pdf`],
    ['\u65e5\u672c.txt', `attachment; filename="__.txt"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.txt`],
    ['\r\n\u202e"/..', `attachment; filename="attachment"; filename*=UTF-8''attachment`],
    ['bad\ud800half.txt', `attachment; filename="bad_half.txt"; filename*=UTF-8''bad%EF%BF%BDhalf.txt`],
  ];
  for (const [name, header] of cases) assert.is(attachmentDisposition(name), header, JSON.stringify(name));
});

test.run();
