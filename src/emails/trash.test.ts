// The Trash over HTTP against the real app, with mail received over real SMTP and sent through the API:
// PATCH trashed takes an email out of every list, search, thread, count and the mailbox summary and into
// GET /emails?trashed=true, and back out on restore, keeping its raw bytes and events; a scheduled send must be
// canceled first; emptying the Trash and DELETE are permanent; the retention job purges after trash_days on a
// clock the test moves; another workspace's key sees and changes none of it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, seedWorkspace } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { runRetention } from './retention.ts';

let s: InboundScene;
let other: string;
let offset = 0;
const clock = { now: () => Date.now() + offset };
const DAY = 24 * 3600_000;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' }, clock });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
  other = (await seedWorkspace(s.t, { workspace: 'other' })).key;
});
test.after(() => s.stop());

const api = (path: string, opts: { method?: string; body?: unknown; key?: string } = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const patch = (id: string, body: unknown, key = s.key) => api(`/emails/${id}`, { method: 'PATCH', body, key });
const ids = async (query: string, key = s.key) => ((await api(`/emails?${query}`, { key })).body.data as Array<{ id: string }>).map((e) => e.id);
const mailbox = async () => (await api('/labels')).body as { data: Array<{ name: string; totalCount: number; unreadCount: number }>; mailbox: { inboxUnread: number } };

let n = 0;
/** Delivers a message over SMTP and answers the stored email's id. */
async function receive(subject: string, headers = ''): Promise<{ id: string; messageId: string }> {
  const messageId = `trash${++n}.${Date.now()}@sender.example`;
  const reply = await s.deliver(`From: Alice <alice@sender.example>\r\nTo: ${s.inbox.address}\r\nSubject: ${subject}\r\nMessage-ID: <${messageId}>\r\n${headers}\r\nPelican words, number ${n}.\r\n`, {});
  assert.is(reply.code, 250, reply.text);
  return { id: /queued as (em_\w+)/.exec(reply.text)![1], messageId };
}

test('to the Trash: out of every list, search, thread, count and label count; listed with trashed=true; restored exactly', async () => {
  const first = await receive('Pelican invoice');
  const answer = await receive('Re: Pelican invoice', `In-Reply-To: <${first.messageId}>\r\nReferences: <${first.messageId}>\r\n`);
  const labelled = await api(`/emails/${first.id}/labels`, { body: { add: ['Receipts'] } });
  assert.is(labelled.status, 200);
  const threadId = (await api(`/emails/${first.id}`)).body.threadId as string;
  assert.is((await api(`/emails/${answer.id}`)).body.threadId, threadId, 'the answer is in the same thread');
  const before = await mailbox();
  const receipts = () => mailbox().then((m) => m.data.find((l) => l.name === 'Receipts')!);
  assert.equal([(await receipts()).totalCount, (await receipts()).unreadCount], [1, 1]);
  const events = (await api(`/emails/${first.id}/events`)).body.count;
  const lists = ['', 'archived=false', 'direction=in', 'label=Receipts', 'query=pelican', 'query=invoice', 'from=alice', 'unread=true', `inbox_id=${s.inbox.id}`, 'include_spam=true'];
  for (const q of lists) assert.ok((await ids(q)).includes(first.id), `listed before: ${q}`);

  const trashed = await patch(first.id, { trashed: true });
  assert.is(trashed.status, 200, JSON.stringify(trashed.body));
  assert.match(trashed.body.trashedAt, ISO);
  assert.is(trashed.body.id, first.id);
  assert.is(trashed.body.archivedAt, null, 'trashing leaves the other flags alone');
  const record = (await api(`/emails/${first.id}`)).body;
  assert.is(record.trashedAt, trashed.body.trashedAt, 'the email itself still answers, with trashedAt');
  for (const q of lists) assert.not.ok((await ids(q)).includes(first.id), `left out: ${q}`);
  assert.equal(await ids('trashed=true'), [first.id], 'the Trash lists it');
  assert.equal(await ids('trashed=true&query=pelican'), [first.id], 'search within the Trash');
  assert.equal(await ids('trashed=true&label=Receipts'), [first.id]);
  assert.equal(await ids('trashed=false&query=pelican'), [answer.id]);
  assert.match((await api('/emails?trashed=true')).body.data[0].trashedAt, ISO);
  const after = await mailbox();
  assert.is(after.mailbox.inboxUnread, before.mailbox.inboxUnread - 1, 'the mailbox summary leaves it out');
  assert.equal([(await receipts()).totalCount, (await receipts()).unreadCount], [0, 0], 'so do the label counts');
  const thread = await api(`/threads/${threadId}`);
  assert.equal(thread.body.data.map((e: { id: string }) => e.id), [answer.id], 'the thread shows what is not in the Trash');
  assert.equal((await api(`/threads/${threadId}?trashed=true`)).body.data.map((e: { id: string }) => e.id), [first.id], '...and the Trash its own');
  // Trashing is not deleting: the bytes and the history stay.
  assert.is((await api(`/emails/${first.id}/raw`)).status, 200);
  assert.is((await api(`/emails/${first.id}/events`)).body.count, events);
  const again = await patch(first.id, { trashed: true, read: true });
  assert.is(again.body.trashedAt, trashed.body.trashedAt, 'trashing again keeps the first time');
  assert.is((await receipts()).unreadCount, 0, 'reading it in the Trash counts nowhere');
  await patch(first.id, { read: false });

  const restored = await patch(first.id, { trashed: false });
  assert.equal([restored.status, restored.body.trashedAt], [200, null]);
  for (const q of lists) assert.ok((await ids(q)).includes(first.id), `back after restore: ${q}`);
  assert.equal(await ids('trashed=true'), []);
  assert.is((await mailbox()).mailbox.inboxUnread, before.mailbox.inboxUnread);
  assert.equal([(await receipts()).totalCount, (await receipts()).unreadCount], [1, 1]);
  assert.is((await api(`/threads/${threadId}`)).body.count, 2);

  // A whole thread in the Trash: the thread is there, with nothing outside the Trash.
  await patch(first.id, { trashed: true });
  await patch(answer.id, { trashed: true });
  const empty = await api(`/threads/${threadId}`);
  assert.equal([empty.status, empty.body.count, empty.body.data], [200, 0, []]);
  assert.is((await api(`/threads/${threadId}?trashed=true`)).body.count, 2);
  await patch(first.id, { trashed: false });
  await patch(answer.id, { trashed: false });
});

test('bad input is a 400 naming the field and changes nothing', async () => {
  const { id } = await receive('Pelican validation');
  for (const body of [{ trashed: 'yes' }, { trashed: 1 }, { trashed: null }]) {
    const res = await patch(id, body);
    assert.equal([res.status, res.body.error.code], [400, 'validation_error'], JSON.stringify(body));
    assert.match(res.body.error.message, /trashed/);
  }
  const none = await patch(id, { learn: false });
  assert.equal([none.status, none.body.error.code], [400, 'validation_error']);
  assert.match(none.body.error.message, /trashed/, 'the message lists trashed among the fields to give');
  const list = await api('/emails?trashed=maybe');
  assert.equal([list.status, list.body.error.code], [400, 'validation_error']);
  assert.match(list.body.error.message, /trashed/);
  const thread = await api(`/threads/${id}?trashed=1`);
  assert.equal([thread.status, thread.body.error.code], [400, 'validation_error']);
  assert.is((await api(`/emails/${id}`)).body.trashedAt, null);
  assert.equal((await patch('em_01JZZZZZZZZZZZZZZZZZZZZZZZ', { trashed: true })).status, 404);
});

test("another workspace's key: 404 on PATCH, nothing in its Trash, and emptying its own Trash leaves this one's", async () => {
  const { id } = await receive('Pelican private');
  const res = await patch(id, { trashed: true }, other);
  assert.equal([res.status, res.body.error.code], [404, 'not_found']);
  assert.is((await api(`/emails/${id}`)).body.trashedAt, null, 'nothing changed');
  await patch(id, { trashed: true });
  assert.equal(await ids('trashed=true', other), []);
  assert.equal(await ids('trashed=true&query=pelican', other), []);
  assert.is((await api(`/threads/${id}?trashed=true`, { key: other })).status, 404);
  const emptied = await api('/emails/trash/empty', { method: 'POST', key: other });
  assert.equal([emptied.status, emptied.body], [200, { deleted: 0 }]);
  assert.ok((await ids('trashed=true')).includes(id), 'still in this Trash');
  await patch(id, { trashed: false });
});

test('a scheduled send is not trashed until canceled: 409, nothing changes', async () => {
  const at = new Date(Date.now() + 3_600_000).toISOString();
  const sent = await s.send({ from: 'app@sender.test', to: ['later@dest.test'], subject: 'Pelican later', text: 'x', scheduled_at: at });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const refused = await patch(sent.body.id, { trashed: true });
  assert.equal([refused.status, refused.body.error.code], [409, 'email_scheduled']);
  assert.match(refused.body.error.message, /cancel/);
  const still = (await api(`/emails/${sent.body.id}`)).body;
  assert.equal([still.status, still.trashedAt], ['scheduled', null]);
  assert.is((await api(`/emails/${sent.body.id}/cancel`, { method: 'POST', body: {} })).status, 200);
  assert.is((await patch(sent.body.id, { trashed: true })).status, 200);
  assert.equal(await ids('trashed=true&status=canceled'), [sent.body.id]);
});

test('emptying the Trash deletes for good what was in it, received and sent alike; DELETE stays permanent', async () => {
  await api('/emails/trash/empty', { method: 'POST' });
  const kept = await receive('Pelican keeper');
  const gone = await receive('Pelican goner');
  const sent = await s.send({ from: 'app@sender.test', to: ['one@dest.test'], subject: 'Pelican sent', text: 'x' });
  await eventually(async () => (await api(`/emails/${sent.body.id}`)).body.status === 'delivered', 10_000, 'the send delivered');
  const unread = (await mailbox()).mailbox.inboxUnread;
  await patch(gone.id, { trashed: true });
  await patch(sent.body.id, { trashed: true });
  const res = await api('/emails/trash/empty', { method: 'POST' });
  assert.equal([res.status, res.body], [200, { deleted: 2 }]);
  assert.is((await api(`/emails/${gone.id}`)).status, 404);
  assert.is((await api(`/emails/${sent.body.id}`)).status, 404);
  assert.equal(await ids('trashed=true'), []);
  assert.is((await mailbox()).mailbox.inboxUnread, unread - 1, 'the counts were already without it');
  assert.ok((await ids('query=pelican')).includes(kept.id), 'mail outside the Trash stays');
  assert.equal((await api('/emails/trash/empty', { method: 'POST' })).body, { deleted: 0 });

  // DELETE /emails/:id is the permanent delete the API contract names: no Trash in between.
  assert.equal((await api(`/emails/${kept.id}`, { method: 'DELETE' })).body, { ok: true });
  assert.is((await api(`/emails/${kept.id}`)).status, 404);
  assert.equal(await ids('trashed=true'), []);
  assert.is((await patch(kept.id, { trashed: false })).status, 404);
});

test('the retention job deletes mail trashed longer than trash_days (30 by default), oldest first, and nothing else', async () => {
  assert.is(s.t.app.config.trashDays, 30);
  const policy = { mailDays: 0, rawDays: 0, eventsDays: 0, trashDays: s.t.app.config.trashDays };
  const old = await receive('Pelican old trash');
  const recent = await receive('Pelican recent trash');
  const inbox = await receive('Pelican stays');
  await patch(old.id, { trashed: true });
  offset += 20 * DAY;
  await patch(recent.id, { trashed: true });
  assert.equal(await runRetention(s.t.app, policy), { emails: 0, raw: 0, events: 0, trash: 0 }, 'nothing is 30 days in the Trash yet');
  offset += 11 * DAY;
  assert.equal(await runRetention(s.t.app, policy), { emails: 0, raw: 0, events: 0, trash: 1 });
  assert.is((await api(`/emails/${old.id}`)).status, 404);
  assert.equal(await ids('trashed=true'), [recent.id]);
  assert.is((await api(`/emails/${inbox.id}`)).status, 200, 'mail outside the Trash is not retention_mail_days');
  offset += 365 * DAY;
  assert.equal((await runRetention(s.t.app, { ...policy, trashDays: 0 })).trash, 0, 'trash_days = 0 keeps the Trash until emptied');
  assert.equal(await ids('trashed=true'), [recent.id]);
  assert.is((await runRetention(s.t.app, policy)).trash, 1);
  assert.equal(await ids('trashed=true'), []);
});

test.run();
