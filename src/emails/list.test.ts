// GET /emails over HTTP against the real app, with mail received over real SMTP sessions and sent through the
// API: newest first; every parameter alone and with others; comma lists; labels by name and id; the spam rules;
// full-text search with hostile input (never a 500); pagination with limit, offset and hasMore; workspace
// isolation; and that no statement the list runs sorts its matches (EXPLAIN QUERY PLAN).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, seedWorkspace, sqliteOnly } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { planList } from './list.ts';
import { runOn } from '../db/sqlite-query.ts';
import { parseListParams } from './search-routes.ts';

let s: InboundScene;
let otherKey: string;
let support: { id: string; address: string };
let second: { domain: { id: string; name: string }; inbox: { id: string; address: string } };

interface Item {
  id: string;
  direction: string;
  status: string;
  from: { name: string | null; address: string };
  to: Array<{ name: string | null; address: string }>;
  subject: string;
  snippet: string;
  createdAt: string;
  inboxId: string | null;
  threadId: string;
  category: string | null;
  important: boolean;
  readAt: string | null;
  archivedAt: string | null;
  labels: unknown[];
  attachmentCount: number;
  delivery: { state: string; counts: Record<string, number> } | null;
}

/** The emails seeded before the tests, by name. */
const E: Record<string, string> = {};

const api = (path: string, opts: { method?: string; body?: unknown; key?: string } = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });

async function list(params: Record<string, string> | string, key = s.key): Promise<{ data: Item[]; count: number; hasMore: boolean }> {
  const qs = typeof params === 'string' ? params : new URLSearchParams(params).toString();
  const res = await request(`${s.t.api}/emails?${qs}`, { key });
  assert.is(res.status, 200, `GET /emails?${qs}: ${JSON.stringify(res.body)}`);
  assert.is(res.body.count, res.body.data.length);
  return res.body;
}
/** The seeded names a list holds, in its order. */
async function names(params: Record<string, string> | string, key = s.key): Promise<string[]> {
  const byId = new Map(Object.entries(E).map(([name, id]) => [id, name]));
  const qs = `${typeof params === 'string' ? params : new URLSearchParams(params).toString()}&limit=100`;
  return (await list(qs, key)).data.map((e) => byId.get(e.id) ?? e.id);
}
async function invalid(qs: string, param: string) {
  const res = await request(`${s.t.api}/emails?${qs}`, { key: s.key });
  assert.is(res.status, 400, `${qs.slice(0, 60)}: ${JSON.stringify(res.body).slice(0, 200)}`);
  assert.is(res.body.error.code, 'validation_error');
  assert.match(res.body.error.message, new RegExp(`^${param}: `), qs.slice(0, 60));
  assert.is(res.body.error.errors[0].path, param);
}

let n = 0;
function mail(opts: { from: string; to?: string; subject: string; text: string; headers?: string; attachment?: string }) {
  const b = `b${++n}`;
  const body = opts.attachment
    ? `Content-Type: multipart/mixed; boundary="${b}"\r\n\r\n--${b}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${opts.text}\r\n` +
      `--${b}\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename="${opts.attachment}"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--${b}--\r\n`
    : `Content-Type: text/plain; charset=utf-8\r\n\r\n${opts.text}\r\n`;
  return (
    `From: ${opts.from}\r\nTo: ${opts.to ?? 'Hello <hello@in.example>'}\r\nSubject: ${opts.subject}\r\nMessage-ID: <l${n}.${Date.now()}@sender.example>\r\n` +
    `Date: Sat, 21 Nov 2026 10:00:00 +0000\r\n${opts.headers ?? ''}MIME-Version: 1.0\r\n${body}`
  );
}
async function receive(name: string, raw: string, opts: { from?: string; to?: string[] } = {}) {
  const reply = await s.deliver(raw, { from: opts.from ?? 'alice@sender.example', to: opts.to });
  assert.is(reply.code, 250, reply.text);
  E[name] = /queued as (em_\w+)/.exec(reply.text)![1];
}
async function send(name: string, body: Record<string, unknown>) {
  const res = await s.send({ from: 'Hello Desk <hello@in.example>', ...(body.html ? {} : { text: 'Sent from the desk.' }), ...body });
  assert.is(res.status, 200, JSON.stringify(res.body));
  E[name] = res.body.id;
}
const patch = async (name: string, body: Record<string, unknown>) => assert.is((await api(`/emails/${E[name]}`, { method: 'PATCH', body: { learn: false, ...body } })).status, 200);

test.before(async () => {
  s = await startInboundScene();
  s.senderDomain('sender.example');
  s.routeTo('dest.example');
  s.routeTo('sender.example');
  otherKey = (await seedWorkspace(s.t, { workspace: 'other' })).key;
  support = await s.createInbox(s.domain.id, 'support');
  const d2 = await s.inboundDomain('in2.example');
  second = { domain: d2, inbox: await s.createInbox(d2.id, 'team') };

  // Oldest first; each name below is an email the tests look for.
  await receive('report', mail({ from: 'Alice Liddell <alice@sender.example>', subject: 'Quarterly report draft', text: 'Please find the quarterly numbers attached. The budget grew a lot.', attachment: 'q3-report.pdf' }));
  await receive('lunch', mail({ from: 'Bob Builder <bob@sender.example>', subject: 'Lunch on Friday?', text: 'Shall we meet at the café near the station at noon?' }), { from: 'bob@sender.example' });
  await receive('newsletter', mail({ from: 'Sender News <news@sender.example>', subject: 'Weekly digest', text: 'This week: the budget, the café, and more.', headers: 'List-Unsubscribe: <mailto:unsub@sender.example>\r\n' }), { from: 'news@sender.example' });
  await receive('junk', mail({ from: 'Prize Desk <prizes@sender.example>', subject: 'You won a prize', text: 'Claim your prize budget now.' }), { from: 'prizes@sender.example' });
  await receive('ticket', mail({ from: 'Carol Danvers <carol@sender.example>', to: 'Support <support@in.example>', subject: 'Printer on fire', text: 'The printer on floor 3 is on fire again.' }), { from: 'carol@sender.example', to: [support.address] });
  await receive('team', mail({ from: 'Dave <dave@sender.example>', to: 'Team <team@in2.example>', subject: 'Offsite agenda', text: 'Agenda for the offsite: budget review, hiking.' }), { from: 'dave@sender.example', to: [second.inbox.address] });
  await send('invoice', { to: ['Carol Customer <carol.customer@dest.example>'], subject: 'Invoice 1001', text: 'Your invoice 1001 is attached. Total: 12 EUR.', labels: ['Invoices'], attachments: [{ filename: 'invoice-1001.pdf', content: 'JVBERi0xLjQK' }] });
  await send('receipt', { to: ['dan@dest.example'], cc: ['Erin Auditor <erin@dest.example>'], subject: 'Receipt for your trip', html: '<p>Your <b>travel</b> receipt, thank you.</p>', labels: ['receipts', 'Travel'] });
  await send('reply', { from: 'Support Desk <support@in.example>', to: ['carol@sender.example'], subject: 'Re: Printer on fire', text: 'We sent a technician with an extinguisher.' });

  await patch('junk', { category: 'spam' });
  await patch('lunch', { archived: true, read: true });
  await patch('report', { important: true });
  await patch('newsletter', { read: true });
});
test.after(() => s.stop());

const ALL_NEWEST_FIRST = ['reply', 'receipt', 'invoice', 'team', 'ticket', 'newsletter', 'lunch', 'report'];

test('without parameters: sent and received mail, newest first, spam left out; the summary record', async () => {
  assert.equal(await names({}), ALL_NEWEST_FIRST);
  const { data, count, hasMore } = await list({});
  assert.is(count, 8);
  assert.is(hasMore, false);
  const times = data.map((e) => Date.parse(e.createdAt));
  assert.equal(times, [...times].sort((a, b) => b - a));
  const report = data.find((e) => e.id === E.report)!;
  assert.equal(report, {
    id: E.report,
    threadId: E.report,
    direction: 'in',
    status: 'received',
    scheduledAt: null,
    from: { name: 'Alice Liddell', address: 'alice@sender.example' },
    to: [{ name: 'Hello', address: 'hello@in.example' }],
    subject: 'Quarterly report draft',
    snippet: 'Please find the quarterly numbers attached. The budget grew a lot.',
    createdAt: report.createdAt,
    inboxId: s.inbox.id,
    domain: 'in.example',
    category: 'primary',
    important: true,
    readAt: null,
    archivedAt: null,
    trashedAt: null,
    labels: [],
    attachmentCount: 1,
    delivery: null,
    extractedText: 'Please find the quarterly numbers attached. The budget grew a lot.',
  });
  assert.match(report.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const invoice = data.find((e) => e.id === E.invoice)!;
  assert.is(invoice.direction, 'out');
  assert.equal(invoice.from, { name: 'Hello Desk', address: 'hello@in.example' });
  assert.equal(invoice.to, [{ name: 'Carol Customer', address: 'carol.customer@dest.example' }]);
  assert.is(invoice.snippet, 'Your invoice 1001 is attached. Total: 12 EUR.');
  assert.is(invoice.attachmentCount, 1);
  assert.is(invoice.category, null);
  // Sent mail: where its one recipient stands (emails/delivery.ts), whatever the queue has reached by now.
  assert.ok(['queued', 'sending', 'delivered'].includes(invoice.delivery!.state), invoice.delivery!.state);
  assert.equal(invoice.delivery!.counts, { [invoice.delivery!.state]: 1 });
  assert.is(data.find((e) => e.id === E.receipt)!.snippet, 'Your travel receipt, thank you.', 'HTML-only mail: its words');
});

test('direction and status', async () => {
  assert.equal(await names({ direction: 'in' }), ['team', 'ticket', 'newsletter', 'lunch', 'report']);
  assert.equal(await names({ direction: 'out' }), ['reply', 'receipt', 'invoice']);
  assert.equal(await names({ status: 'received', domain: 'in2.example' }), ['team']);
  assert.equal(await names({ status: 'received' }), ['team', 'ticket', 'newsletter', 'lunch', 'report']);
  await eventually(async () => (await names({ status: 'delivered' })).includes('invoice'), 20_000, 'the invoice delivered');
  assert.ok(!(await names({ status: 'delivered' })).some((name) => !['reply', 'receipt', 'invoice'].includes(name)));
  await invalid('direction=sideways', 'direction');
  await invalid('status=lost', 'status');
  await invalid('direction=in&direction=out', 'direction');
});

test('domain: names (any case), dom_ ids, comma lists; invalid is a 400 naming domain', async () => {
  assert.equal(await names({ domain: 'in2.example' }), ['team']);
  assert.equal(await names({ domain: 'IN2.Example.' }), ['team']);
  assert.equal(await names({ domain: second.domain.id }), ['team']);
  assert.equal(await names({ domain: `in.example, ${second.domain.id}` }), ALL_NEWEST_FIRST);
  assert.equal(await names({ domain: 'nowhere.example' }), []);
  assert.equal(await names({ domain: 'dom_01ARZ3NDEKTSV4RRFFQ69G5FAV' }), []);
  await invalid('domain=not%20a%20domain', 'domain');
  await invalid('domain=dom_nope', 'domain');
  await invalid('domain=,', 'domain');
  await invalid(`domain=${Array.from({ length: 21 }, (_, i) => `d${i}.example`).join(',')}`, 'domain');
});

test('inbox_id', async () => {
  assert.equal(await names({ inbox_id: support.id }), ['ticket']);
  assert.equal(await names({ inbox_id: s.inbox.id }), ['newsletter', 'lunch', 'report']);
  assert.equal(await names({ inbox_id: 'inb_01ARZ3NDEKTSV4RRFFQ69G5FAV' }), []);
  await invalid('inbox_id=hello', 'inbox_id');
});

test('label: names without regard to case, ids, comma lists (any matches)', async () => {
  assert.equal(await names({ label: 'invoices' }), ['invoice']);
  assert.equal(await names({ label: 'TRAVEL' }), ['receipt']);
  assert.equal(await names({ label: 'Invoices,receipts' }), ['receipt', 'invoice']);
  assert.equal(await names({ label: 'invoices,nosuchlabel' }), ['invoice']);
  assert.equal(await names({ label: 'nosuchlabel' }), []);
  const travel = (await api(`/emails/${E.receipt}`)).body.labels.find((l: { name: string }) => l.name === 'Travel');
  assert.match(travel.id, /^lbl_[0-9A-Z]{26}$/);
  assert.equal(await names({ label: travel.id }), ['receipt']);
  assert.equal(await names({ label: `${travel.id},invoices` }), ['receipt', 'invoice']);
  assert.equal(await names({ label: 'lbl_01ARZ3NDEKTSV4RRFFQ69G5FAV' }), [], 'an id of no label');
  assert.equal(await names({ label: 'lbl_01ARZ3NDEKTSV4RRFFQ69G5FAV,invoices' }), ['invoice']);
  assert.equal(await names('label=invoices&label=travel'), ['receipt', 'invoice'], 'a repeated parameter is a list too');
  await invalid(`label=${'x'.repeat(101)}`, 'label');
  await invalid('label=a%01b', 'label');
});

test('archived=false is the Inbox: received, not archived, not spam; archived=true the archive', async () => {
  assert.equal(await names({ archived: 'false' }), ['team', 'ticket', 'newsletter', 'report']);
  assert.equal(await names({ archived: 'true' }), ['lunch']);
  assert.equal(await names({ archived: 'false', include_spam: 'true' }), ['team', 'ticket', 'junk', 'newsletter', 'report']);
  assert.equal(await names({ archived: 'false', direction: 'out' }), []);
  await invalid('archived=yes', 'archived');
});

test('spam: left out unless category=spam or include_spam=true; category lists', async () => {
  assert.ok(!(await names({})).includes('junk'));
  assert.equal(await names({ category: 'spam' }), ['junk']);
  assert.equal(await names({ category: 'spam', include_spam: 'false' }), ['junk']);
  assert.equal(await names({ include_spam: 'true' }), ['reply', 'receipt', 'invoice', 'team', 'ticket', 'junk', 'newsletter', 'lunch', 'report']);
  assert.equal(await names({ include_spam: 'false' }), ALL_NEWEST_FIRST);
  assert.equal(await names({ category: 'updates' }), ['newsletter']);
  assert.equal(await names({ category: 'primary,spam' }), ['team', 'ticket', 'junk', 'lunch', 'report']);
  assert.equal(await names({ category: 'primary, updates', include_spam: 'true' }), ['team', 'ticket', 'newsletter', 'lunch', 'report']);
  await invalid('category=promotions', 'category');
  await invalid('category=primary,junk', 'category');
  await invalid('include_spam=1', 'include_spam');
});

test('important and unread', async () => {
  assert.equal(await names({ important: 'true' }), ['report']);
  assert.ok((await names({ important: 'false' })).includes('lunch'));
  assert.ok(!(await names({ important: 'false' })).includes('report'));
  assert.equal(await names({ unread: 'true' }), ['team', 'ticket', 'report']);
  assert.equal(await names({ unread: 'true', include_spam: 'true' }), ['team', 'ticket', 'junk', 'report']);
  assert.equal(await names({ unread: 'false' }), ['reply', 'receipt', 'invoice', 'newsletter', 'lunch'], 'read mail, and sent mail, which is never unread');
  assert.equal(await names({ unread: 'true', archived: 'false', important: 'true' }), ['report']);
  await invalid('important=TRUE', 'important');
  assert.is((await list('unread=')).count, 8, 'an empty value counts as not given');
});

test('from: a case-insensitive part of the address or display name', async () => {
  assert.equal(await names({ from: 'alice@sender.example' }), ['report']);
  assert.equal(await names({ from: 'LIDDELL' }), ['report']);
  assert.equal(await names({ from: 'lice@send' }), ['report'], 'inside the address');
  assert.equal(await names({ from: 'Desk' }), ['reply', 'receipt', 'invoice'], 'sent mail by display name');
  assert.equal(await names({ from: 'support@in.example' }), ['reply']);
  assert.equal(await names({ from: 'sender.example' }), ['team', 'ticket', 'newsletter', 'lunch', 'report']);
  assert.equal(await names({ from: 'sender.example', include_spam: 'true' }), ['team', 'ticket', 'junk', 'newsletter', 'lunch', 'report']);
  assert.equal(await names({ from: 'bo' }), ['lunch'], 'two letters');
  assert.equal(await names({ from: 'nobody@nowhere.example' }), []);
  assert.equal(await names({ from: 'carol.customer' }), [], 'a recipient is not a sender');
  assert.equal(await names({ from: '%' }), [], '% is a character, not a wildcard');
  assert.equal(await names({ from: '_' }), []);
  assert.equal(await names({ from: 'e' }), ALL_NEWEST_FIRST, 'a vague value');
  await invalid(`from=${'x'.repeat(321)}`, 'from');
  await invalid('from=a%0Ab', 'from');
});

test('to: a part of any recipient (To, Cc, Bcc)', async () => {
  assert.equal(await names({ to: 'carol.customer@dest.example' }), ['invoice']);
  assert.equal(await names({ to: 'Customer' }), ['invoice']);
  assert.equal(await names({ to: 'erin' }), ['receipt'], 'a Cc recipient');
  assert.equal(await names({ to: 'dest.example' }), ['receipt', 'invoice']);
  assert.equal(await names({ to: 'support@in.example' }), ['ticket']);
  assert.equal(await names({ to: 'team@in2' }), ['team']);
  assert.equal(await names({ to: 'hello@in.example' }), ['newsletter', 'lunch', 'report']);
  assert.equal(await names({ to: 'alice' }), [], 'a sender is not a recipient');
  assert.equal(await names({ to: 'carol', from: 'support' }), ['reply']);
});

test('after and before: ISO 8601 timestamps or dates, on the creation time', async () => {
  const all = (await list({ include_spam: 'true' })).data;
  const at = (name: string) => all.find((e) => e.id === E[name])!.createdAt;
  const newer = (t: string) => all.filter((e) => e.createdAt >= t && e.category !== 'spam').map((e) => e.id);
  const older = (t: string) => all.filter((e) => e.createdAt < t && e.category !== 'spam').map((e) => e.id);
  const ids = async (params: Record<string, string>) => (await list({ ...params, limit: '100' })).data.map((e) => e.id);
  assert.equal(await ids({ after: at('ticket') }), newer(at('ticket')));
  assert.ok((await ids({ after: at('ticket') })).includes(E.ticket), 'after is inclusive');
  assert.equal(await ids({ before: at('ticket') }), older(at('ticket')));
  assert.ok(!(await ids({ before: at('ticket') })).includes(E.ticket), 'before is exclusive');
  assert.equal(await ids({ after: at('lunch'), before: at('invoice') }), newer(at('lunch')).filter((id) => older(at('invoice')).includes(id)));
  const today = new Date().toISOString().slice(0, 10);
  assert.is((await ids({ after: today })).length, 8, 'a date is midnight UTC');
  assert.is((await ids({ before: today })).length, 0);
  assert.is((await ids({ after: '2000-01-01T00:00:00+02:00', before: '2999-12-31' })).length, 8);
  const t = Date.parse(at('ticket'));
  const local = new Date(t + 2 * 3600_000).toISOString().replace('Z', '+02:00');
  assert.equal(await ids({ after: local }), newer(at('ticket')), 'an offset is honoured');
  assert.is((await ids({ after: at('invoice'), before: at('lunch') })).length, 0);
  for (const bad of ['yesterday', '2026-13-01', '2026-02-30', '2026-01-01T25:00', '1700000000000', '2026-01-01T00:00:00+25:00']) await invalid(`after=${encodeURIComponent(bad)}`, 'after');
  await invalid('before=soon', 'before');
});

test('query: subjects, bodies, participants and attachment names; terms ANDed; phrases; prefixes; diacritics', async () => {
  assert.equal(await names({ query: 'quarterly' }), ['report'], 'a subject and body word');
  assert.equal(await names({ query: 'budget' }), ['team', 'newsletter', 'report'], 'spam still left out');
  assert.equal(await names({ query: 'budget', include_spam: 'true' }), ['team', 'junk', 'newsletter', 'report']);
  assert.equal(await names({ query: 'budget quarterly' }), ['report']);
  assert.equal(await names({ query: 'liddell' }), ['report'], 'a participant name');
  assert.equal(await names({ query: 'carol.customer@dest.example' }), ['invoice'], 'a recipient address');
  assert.equal(await names({ query: 'invoice-1001.pdf' }), ['invoice'], 'an attachment name');
  assert.equal(await names({ query: 'q3-report.pdf' }), ['report']);
  assert.equal(await names({ query: '"near the station"' }), ['lunch']);
  assert.equal(await names({ query: '"the station near"' }), []);
  assert.equal(await names({ query: 'cafe' }), ['newsletter', 'lunch'], 'café, without its accent');
  assert.equal(await names({ query: 'quart*' }), ['report']);
  assert.equal(await names({ query: 'extinguish*' }), ['reply']);
  assert.equal(await names({ query: 'TRAVEL' }), ['receipt'], 'words of HTML-only mail');
  assert.equal(await names({ query: 'zebra' }), []);
  assert.equal(await names({ query: '   ' }), ALL_NEWEST_FIRST, 'a blank query is no query');
});

test('query with filters: from, archived, category, direction, dates, labels', async () => {
  assert.equal(await names({ query: 'budget', from: 'dave' }), ['team']);
  assert.equal(await names({ query: 'budget', archived: 'false', domain: 'in.example' }), ['newsletter', 'report']);
  assert.equal(await names({ query: 'cafe', category: 'updates' }), ['newsletter']);
  assert.equal(await names({ query: 'cafe', archived: 'true' }), ['lunch']);
  assert.equal(await names({ query: 'invoice', direction: 'out', label: 'invoices' }), ['invoice']);
  assert.equal(await names({ query: 'printer', to: 'support', inbox_id: support.id }), ['ticket']);
  assert.equal(await names({ query: 'fire', direction: 'in' }), ['ticket']);
  assert.equal(await names({ query: 'fire', after: new Date(Date.now() + 3600_000).toISOString() }), []);
});

test('a prefix longer than 3 letters: walked by its first 3 and checked on every field, or answered by FTS5 alone', async () => {
  assert.equal(await names({ query: 'quarte*' }), ['report']);
  assert.equal(await names({ query: 'QUARTERL*' }), ['report']);
  assert.equal(await names({ query: 'statio*' }), ['lunch'], 'a body word');
  assert.equal(await names({ query: 'liddel*' }), ['report'], 'a participant');
  assert.equal(await names({ query: 'q3-repo*' }), ['report'], 'an attachment name: q3, then a word starting with repo');
  assert.equal(await names({ query: 'invoice-10*' }), [], 'a last word of 2 letters is a word, not a prefix');
  assert.equal(await names({ query: '"the quarterly numb"*' }), ['report'], 'a phrase whose last word is a prefix');
  assert.equal(await names({ query: '"quarterly the numb"*' }), []);
  assert.equal(await names({ query: 'quartz*' }), [], 'shares quar* but no word');
  assert.equal(await names({ query: 'budg* quarte*' }), ['report']);
  // 150 emails whose words share "plu" but not "pluto", two with "plutonium" among them: the walk gives up
  // and FTS5 answers; "plumb*" fills its page from the walk.
  const marker = `prefixmarker${Date.now()}`;
  for (let batch = 0; batch < 2; batch++) {
    const emails = Array.from({ length: 75 }, (_, i) => ({
      from: 'Hello Desk <hello@in.example>',
      to: ['dan@dest.example'],
      subject: `${marker} ${batch * 75 + i}`,
      text: batch === 0 && i < 2 ? 'A plutonium sample, plumbing aside.' : 'The plumbing and the plums.',
    }));
    assert.is((await api('/emails/batch', { body: { emails } })).body.successful, 75);
  }
  const pluto = await list({ query: 'pluto*' });
  assert.equal(pluto.data.map((e) => e.subject), [`${marker} 1`, `${marker} 0`]);
  assert.is(pluto.hasMore, false);
  assert.match(pluto.data[0].snippet, /plutonium/);
  const plumb = await list({ query: `plumb* ${marker}` });
  assert.is(plumb.count, 50);
  assert.is(plumb.hasMore, true);
  assert.equal(plumb.data.map((e) => e.subject), Array.from({ length: 50 }, (_, i) => `${marker} ${149 - i}`));
  const page3 = await list({ query: `plumb* ${marker}`, offset: '100' });
  assert.equal(page3.data.map((e) => e.subject), Array.from({ length: 50 }, (_, i) => `${marker} ${49 - i}`));
  assert.is(page3.hasMore, false);
  assert.is((await list({ query: `plums* ${marker}`, limit: '100' })).count, 100, 'plums, not plumbing');
  const byLabel = await list({ query: 'pluton*', direction: 'out', to: 'dan@dest' });
  assert.is(byLabel.count, 2);
});

test('snippets of a search: the text around the first match', async () => {
  const [lunch] = (await list({ query: 'station' })).data;
  assert.is(lunch.id, E.lunch);
  assert.match(lunch.snippet, /station/);
  const long = `${'filler words go here and there. '.repeat(20)}The unicorn budget is approved. ${'more filler text follows here. '.repeat(20)}`;
  await send('long', { to: ['dan@dest.example'], subject: 'Long one', text: long });
  const [found] = (await list({ query: 'unicorn' })).data;
  assert.is(found.id, E.long);
  assert.match(found.snippet, /^….*The unicorn budget is approved\..*…$/);
  assert.ok(found.snippet.length <= 170, found.snippet);
  const [plain] = (await list({ direction: 'out', limit: '1' })).data;
  assert.is(plain.snippet, long.replace(/\s+/g, ' ').trim().slice(0, 200), 'a list that is no search shows the preview');
  // Deleting waits out the delivery attempt (409 while it runs).
  await eventually(async () => (await api(`/emails/${E.long}`, { method: 'DELETE' })).status === 200, 20_000, 'the long email deleted');
  delete E.long;
  assert.equal(await names({ query: 'unicorn' }), [], 'a deleted email is not found');
});

test('hostile query strings: never a 500, never SQLite text; literal results', async () => {
  const hostile = [
    '"foo', 'foo"', 'NEAR(', 'NEAR(a b, -1)', 'a AND', 'OR', 'NOT x', '*', 'a*', '^a', 'subject:x', 'nosuchcol:x', '{subject body}:x', 'multi-agent',
    "who's", '(', ')', 'a:b', '-', 'x -y', ':', '\u0000', 'a\u0000b', '🎉', '"quarterly', 'quarterly)', '(quarterly', 'NOT quarterly', 'quarterly OR',
    'subject:quarterly', 'q*', '**', "'; DROP TABLE emails; --", '%', '_', '\\', 'x'.repeat(1000), 'x '.repeat(32),
  ];
  for (const q of hostile) {
    const res = await request(`${s.t.api}/emails?query=${encodeURIComponent(q)}`, { key: s.key });
    assert.is(res.status, 200, `${JSON.stringify(q.slice(0, 40))}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    assert.not.match(JSON.stringify(res.body), /sqlite|fts5|syntax/i);
  }
  assert.equal(await names({ query: '"quarterly' }), ['report']);
  assert.equal(await names({ query: '(quarterly' }), ['report']);
  assert.equal(await names({ query: 'quarterly)' }), ['report']);
  assert.equal(await names({ query: 'budget -quarterly' }), ['team', 'newsletter'], '-word leaves out what has the word');
  assert.equal(await names({ query: 'report:quarterly' }), [], 'the words "report quarterly" side by side');
  assert.equal(await names({ query: '*' }), [], 'nothing searchable matches nothing');
  for (const q of ['x'.repeat(1001), 'x'.repeat(10 * 1024), 'x '.repeat(33), Array.from({ length: 500 }, (_, i) => `w${i}`).join(' OR '), `${'('.repeat(2000)}x${')'.repeat(2000)}`]) {
    await invalid(`query=${encodeURIComponent(q)}`, 'query');
  }
  // 5,000 OR terms make a URL over the HTTP server's 16 KiB header limit: refused before the app sees it.
  const huge = await request(`${s.t.api}/emails?query=${encodeURIComponent(Array.from({ length: 5000 }, (_, i) => `w${i}`).join(' OR '))}`, { key: s.key });
  assert.is(huge.status, 431);
});

test('pagination: limit, offset and hasMore over a search and over a list', async () => {
  const marker = `pagemarker${Date.now()}`;
  for (let batch = 0; batch < 2; batch++) {
    const emails = Array.from({ length: 60 }, (_, i) => ({ from: 'Hello Desk <hello@in.example>', to: ['dan@dest.example'], subject: `${marker} ${batch * 60 + i}`, text: 'paging', labels: [marker] }));
    const res = await api('/emails/batch', { body: { emails } });
    assert.is(res.status, 200);
    assert.is(res.body.successful, 60);
  }
  for (const filter of [{ query: marker }, { label: marker }] as Array<Record<string, string>>) {
    const p1 = await list({ ...filter });
    assert.is(p1.count, 50, 'limit defaults to 50');
    assert.is(p1.hasMore, true);
    const p2 = await list({ ...filter, offset: '50' });
    assert.is(p2.count, 50);
    assert.is(p2.hasMore, true);
    const p3 = await list({ ...filter, offset: '100', limit: '50' });
    assert.is(p3.count, 20);
    assert.is(p3.hasMore, false);
    const subjects = [...p1.data, ...p2.data, ...p3.data].map((e) => Number(e.subject.split(' ')[1]));
    assert.equal(subjects, Array.from({ length: 120 }, (_, i) => 119 - i), 'newest first, no gaps, no repeats');
    const exact = await list({ ...filter, limit: '20', offset: '100' });
    assert.is(exact.count, 20);
    assert.is(exact.hasMore, false);
    const big = await list({ ...filter, limit: '100' });
    assert.is(big.count, 100);
    assert.is(big.hasMore, true);
    assert.is((await list({ ...filter, offset: '500' })).count, 0);
  }
  await invalid('limit=0', 'limit');
  await invalid('limit=101', 'limit');
  await invalid('limit=ten', 'limit');
  await invalid('offset=-1', 'offset');
});

test("workspace isolation: another workspace's key sees none of it, whatever the filters", async () => {
  for (const params of <Array<Record<string, string>>>[{}, { query: 'quarterly' }, { archived: 'false' }, { from: 'alice' }, { to: 'carol' }, { label: 'invoices' }, { domain: 'in.example' }, { inbox_id: s.inbox.id }, { include_spam: 'true' }]) {
    const res = await list(params, otherKey);
    assert.is(res.count, 0, JSON.stringify(params));
  }
  const own = await request(`${s.t.api}/emails`, {});
  assert.is(own.status, 401);
});

// SQLite's plans (EXPLAIN QUERY PLAN): PostgreSQL's planner chooses by its statistics.
sqliteOnly(test)('no statement the list runs sorts its matches, whatever the combination of parameters', async () => {
  const db = s.t.app.db;
  const workspaceId = (db.prepare('SELECT workspace_id FROM emails WHERE id = ?').get(E.report) as { workspace_id: string }).workspace_id;
  const one: Array<Record<string, string>> = [
    {}, { direction: 'in' }, { direction: 'out' }, { status: 'received' }, { domain: 'in.example' }, { domain: `in.example,${second.domain.id}` }, { inbox_id: s.inbox.id },
    { label: 'invoices' }, { label: 'invoices,travel' }, { archived: 'false' }, { archived: 'true' }, { category: 'updates' }, { category: 'spam' }, { category: 'primary,updates' },
    { important: 'true' }, { include_spam: 'true' }, { from: 'alice' }, { from: 'e' }, { from: 'bo' }, { to: 'carol' }, { unread: 'true' }, { unread: 'false' },
    { after: '2020-01-01' }, { before: '2999-01-01' }, { query: 'budget' }, { query: 'quart*' }, { query: '"near the"' }, { offset: '50' },
    { trashed: 'true' }, { trashed: 'false' },
  ];
  const combos = [...one, ...one.flatMap((a, i) => one.slice(i + 1).map((b) => ({ ...a, ...b }))), { archived: 'false', unread: 'true', important: 'true', category: 'primary', inbox_id: s.inbox.id, query: 'budget', from: 'alice', after: '2020-01-01', before: '2999-01-01' }];
  for (const params of combos) {
    const plan = runOn(db, planList(workspaceId, parseListParams(params)));
    if (!plan) continue;
    const detail = (db.prepare(`EXPLAIN QUERY PLAN ${plan.sql}`).all(...plan.args) as Array<{ detail: string }>).map((r) => r.detail);
    const where = JSON.stringify(params);
    assert.ok(!detail.some((d) => /TEMP B-TREE/.test(d)), `${where} sorts: ${detail.join(' / ')}`);
    if (plan.kind === 'search') assert.match(detail[0], /^SCAN email_search VIRTUAL TABLE INDEX/, `${where}: ${detail.join(' / ')}`);
    else assert.match(detail[0], /^SEARCH e USING INDEX emails_(newest|inbox_view|labelled|inbox|trash) \(workspace_id=\?/, `${where}: ${detail.join(' / ')}`);
    // The Inbox view and the Trash walk their own partial indexes, not every email of the workspace.
    if (plan.kind === 'index' && params.trashed === 'true' && !params.inbox_id && !params.label) assert.match(detail[0], /INDEX emails_trash /, `${where}: ${detail.join(' / ')}`);
    const spam = params.include_spam === 'true' || params.category?.includes('spam');
    if (plan.kind === 'index' && params.archived === 'false' && params.trashed !== 'true' && !spam && !params.inbox_id && !params.label) assert.match(detail[0], /INDEX emails_inbox_view /, `${where}: ${detail.join(' / ')}`);
  }
});

test.run();
