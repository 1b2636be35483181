// Labels and filing rules over real HTTP and SMTP: the label list and its counts, names, colours,
// rules on new sent and received mail, buckets by rule, by hand and by reply, the 10-label cap, the dry run
// against applying to stored mail, applying over 10,000 stored messages through a restart while mail keeps
// arriving, the mailbox summary, deleting a label, and workspace isolation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../config/config.ts';
import { startApp, type RunningApp } from '../app.ts';
import { createLog } from '../log.ts';
import { request, seedWorkspace, TEST_STORE } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { storeReceivedEmail } from '../emails/store.ts';
import { runOn } from '../db/sqlite-query.ts';
import { get, value, type Query } from '../db/query.ts';
import { openPool, readOn } from '../db/postgres.ts';
import { parseMessage } from '../mail/parse.ts';
import { packMail } from '../mail/packing.ts';

let s: InboundScene;
let other: Awaited<ReturnType<typeof seedWorkspace>>;
let api: string;
let running: RunningApp | null = null;

test.before(async () => {
  s = await startInboundScene();
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
  other = await seedWorkspace(s.t, { workspace: 'other' });
  api = s.t.api;
});
test.after(async () => {
  await running?.stop();
  await s.stop();
});

const call = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${api}${path}`, { key: s.key, ...opts });
const receive = (subject: string, extra = '', from = 'alice@sender.example') => s.deliver(`From: ${from}\r\nTo: ${s.inbox.address}\r\nSubject: ${subject}\r\n${extra}\r\nbody of ${subject}\r\n`, { from });
const emailBySubject = async (subject: string) => (await call(`/emails?query=${encodeURIComponent(`"${subject}"`)}&include_spam=true`)).body.data.find((e: any) => e.subject === subject);
const labelIds = async (id: string) => (await call(`/emails/${id}`)).body.labels.map((l: any) => l.id);

test('labels: created with hierarchy names and colours, listed with counts and the mailbox, found by id or name', async () => {
  const made = await call('/labels', { body: { name: ' Clients /  Acme ', color: '#AABBCC' } });
  assert.is(made.status, 201, JSON.stringify(made.body));
  assert.equal({ ...made.body, id: undefined }, { id: undefined, name: 'Clients/Acme', color: '#aabbcc', skipInbox: false, totalCount: 0, unreadCount: 0, rules: [] });
  const plain = await call('/labels', { body: { name: 'Receipts' } });
  assert.match(plain.body.color, /^#[0-9a-f]{6}$/, 'a colour from the palette');
  for (const [body, path] of [
    [{ name: 'a//b' }, 'name'],
    [{ name: '/a' }, 'name'],
    [{ name: 'a,b' }, 'name'],
    [{ name: '' }, 'name'],
    [{ name: 'x', color: 'red' }, 'color'],
    [{ name: 'x', color: '#12345' }, 'color'],
  ] as const) {
    const res = await call('/labels', { body });
    assert.equal([res.status, res.body.error.errors?.[0]?.path], [400, path], JSON.stringify(body));
  }
  assert.equal([(await call('/labels', { body: { name: 'RECEIPTS' } })).body.error.code], ['label_exists']);
  assert.is((await call(`/labels/${made.body.id}`)).body.name, 'Clients/Acme');
  assert.is((await call(`/labels/${encodeURIComponent('clients/acme')}`)).body.id, made.body.id);
  const list = await call('/labels');
  assert.equal(Object.keys(list.body.mailbox).sort(), ['importantUnread', 'inboxUnread', 'resortPending', 'spamTotal', 'updatesUnread']);
  assert.is(list.body.count, list.body.data.length);
  // Another workspace's label id is 404 on every route.
  for (const [method, path, body] of [['GET', '', undefined], ['PATCH', '', { name: 'x' }], ['DELETE', '', undefined], ['POST', '/rules', { subject: 'y' }]] as const) {
    const res = await request(`${api}/labels/${made.body.id}${path}`, { method, key: other.key, body });
    assert.is(res.status, 404, `${method} ${path}`);
  }
});

test('rules file new received and sent mail in the transaction that stores it; every condition must match', async () => {
  const label = (await call('/labels', { body: { name: 'Invoices', rules: [{ direction: 'in', from: 'ALICE@', subject: 'invoice' }] } })).body;
  assert.equal(label.rules.map((r: any) => [r.direction, r.from, r.subject, r.inboxId]), [['in', 'alice@', 'invoice', null]]);
  const out = (await call('/labels', { body: { name: 'Outgoing', rules: [{ direction: 'out', to: 'dest.test' }] } })).body;
  const either = (await call('/labels', { body: { name: 'Any direction', rules: [{ subject: 'quarterly' }] } })).body;
  const scoped = (await call('/labels', { body: { name: 'Hello inbox', rules: [{ inbox_id: s.inbox.id }] } })).body;
  assert.equal((await call(`/labels/${label.id}/rules`, { body: { skip_inbox: true } })).body.error.code, 'validation_error', 'a rule needs a condition');
  const foreign = await call(`/labels/${label.id}/rules`, { body: { inbox_id: 'inb_01ARZ3NDEKTSV4RRFFQ69G5FAV' } });
  assert.equal([foreign.status, foreign.body.error.errors[0].path], [400, 'inbox_id']);

  assert.is((await receive('Your INVOICE 42')).code, 250);
  assert.is((await receive('invoice from bob', '', 'bob@sender.example')).code, 250);
  assert.is((await receive('Quarterly report')).code, 250);
  const invoice = await emailBySubject('Your INVOICE 42');
  assert.ok((await labelIds(invoice.id)).includes(label.id), 'from and subject both match');
  assert.ok((await labelIds(invoice.id)).includes(scoped.id), 'the inbox rule matches');
  assert.not.ok((await labelIds((await emailBySubject('invoice from bob')).id)).includes(label.id), 'from does not match');
  assert.ok((await labelIds((await emailBySubject('Quarterly report')).id)).includes(either.id));

  const sent = await call('/emails', { body: { from: 'app@sender.test', to: 'carol@dest.test', subject: 'quarterly numbers', text: 'x' } });
  const sentLabels = await labelIds(sent.body.id);
  assert.ok(sentLabels.includes(out.id) && sentLabels.includes(either.id), JSON.stringify(sentLabels));
  assert.not.ok(sentLabels.includes(label.id), 'an `in` rule never files sent mail');
  assert.is((await call(`/labels/${label.id}`)).body.totalCount, 1);
});

test('buckets: by rule, by hand and by reply, received mail leaves the inbox and stays under its label', async () => {
  const byRule = (await call('/labels', { body: { name: 'Newsletters', rules: [{ subject: 'weekly digest', skip_inbox: true }] } })).body;
  assert.is((await receive('Your weekly digest')).code, 250);
  const digest = await emailBySubject('Your weekly digest');
  assert.ok((await call(`/emails/${digest.id}`)).body.archivedAt);
  const inbox = (await call('/emails?archived=false')).body.data.map((e: any) => e.id);
  assert.not.ok(inbox.includes(digest.id), 'not in the inbox view');
  assert.ok((await call(`/emails?label=${byRule.id}`)).body.data.some((e: any) => e.id === digest.id), 'found under its label');

  const bucket = (await call('/labels', { body: { name: 'Later', skip_inbox: true } })).body;
  assert.is((await receive('read me later')).code, 250);
  const later = await emailBySubject('read me later');
  assert.is((await call(`/emails/${later.id}`)).body.archivedAt, null);
  await call(`/emails/${later.id}/labels`, { body: { add: [bucket.id] } });
  assert.ok((await call(`/emails/${later.id}`)).body.archivedAt, 'archived by hand-labelling');

  const sent = await call('/emails', { body: { from: 'app@sender.test', to: 'carol@dest.test', subject: 'project kickoff', text: 'x', labels: [bucket.id] } });
  const messageId = sent.body.providerMessageId;
  assert.is((await receive('Re: project kickoff', `In-Reply-To: ${messageId}\r\n`)).code, 250);
  const reply = await emailBySubject('Re: project kickoff');
  assert.ok((await labelIds(reply.id)).includes(bucket.id), 'the reply joins the bucket');
  assert.ok((await call(`/emails/${reply.id}`)).body.archivedAt, 'and leaves the inbox');
});

test('the mailbox summary follows reads, archives, spam marks and deletes; label counts follow too', async () => {
  const mailbox = async () => (await call('/labels')).body.mailbox;
  const label = (await call('/labels', { body: { name: 'Counted', rules: [{ subject: 'counted' }] } })).body;
  const before = await mailbox();
  assert.is((await receive('counted one')).code, 250);
  assert.is((await receive('counted two', 'List-Unsubscribe: <mailto:u@sender.example>\r\nPrecedence: bulk\r\n')).code, 250);
  const one = await emailBySubject('counted one');
  const two = await emailBySubject('counted two');
  let now = await mailbox();
  assert.is(now.inboxUnread, before.inboxUnread + 2);
  assert.equal([(await call(`/labels/${label.id}`)).body.totalCount, (await call(`/labels/${label.id}`)).body.unreadCount], [2, 2]);
  await call(`/emails/${one.id}`, { method: 'PATCH', body: { read: true } });
  assert.is((await mailbox()).inboxUnread, before.inboxUnread + 1);
  assert.is((await call(`/labels/${label.id}`)).body.unreadCount, 1);
  await call(`/emails/${two.id}`, { method: 'PATCH', body: { category: 'spam', learn: false } });
  now = await mailbox();
  assert.equal([now.inboxUnread, now.spamTotal], [before.inboxUnread, before.spamTotal + 1]);
  await call(`/emails/${two.id}`, { method: 'DELETE' });
  now = await mailbox();
  assert.is(now.spamTotal, before.spamTotal);
  assert.equal([(await call(`/labels/${label.id}`)).body.totalCount, (await call(`/labels/${label.id}`)).body.unreadCount], [1, 0]);
  await call(`/emails/${one.id}`, { method: 'PATCH', body: { read: false, archived: true } });
  assert.is((await mailbox()).inboxUnread, before.inboxUnread);
});

test('rename keeps the emails, deleting a label keeps them without it, and turning a label into a bucket archives its mail', async () => {
  const label = (await call('/labels', { body: { name: 'Temp', rules: [{ subject: 'temporary' }] } })).body;
  assert.is((await receive('temporary thing')).code, 250);
  const email = await emailBySubject('temporary thing');
  const renamed = await call(`/labels/${label.id}`, { method: 'PATCH', body: { name: 'Temp/Renamed', color: '#112233' } });
  assert.equal(renamed.body, { id: label.id, name: 'Temp/Renamed', color: '#112233', skipInbox: false });
  assert.ok((await labelIds(email.id)).includes(label.id));
  const bucket = await call(`/labels/${label.id}`, { method: 'PATCH', body: { skip_inbox: true } });
  assert.is(bucket.body.skipInbox, true);
  await eventually(async () => (await call(`/emails/${email.id}`)).body.archivedAt, 10_000, 'the bucket archives its mail');
  assert.equal((await call(`/labels/${label.id}`, { method: 'DELETE' })).body, { ok: true });
  assert.is((await call(`/labels/${label.id}`)).status, 404);
  const after = await call(`/emails/${email.id}`);
  assert.is(after.status, 200, 'the email stays');
  assert.not.ok(after.body.labels.some((l: any) => l.id === label.id));
});

test('the dry run counts what applying then files; the 10-label cap is respected', async () => {
  for (let i = 0; i < 5; i++) assert.is((await receive(`dryrun item ${i}`)).code, 250);
  const label = (await call('/labels', { body: { name: 'Dry' } })).body;
  const dry = await call(`/labels/${label.id}/rules`, { body: { subject: 'dryrun', dry_run: true } });
  assert.equal([dry.status, dry.body.dryRun, dry.body.count, dry.body.emails.length], [200, true, 5, 5]);
  assert.is(dry.body.emails[0].subject, 'dryrun item 4', 'newest first');
  assert.equal((await call(`/labels/${label.id}`)).body.rules, [], 'a dry run stores nothing');
  // One of them already carries 10 labels: applying skips it.
  const full = await emailBySubject('dryrun item 0');
  await call(`/emails/${full.id}/labels`, { body: { add: Array.from({ length: 10 - full.labels.length }, (_, i) => `filler ${i}`) } });
  assert.is((await call(`/labels/${label.id}/rules`, { body: { subject: 'dryrun', apply_to_existing: true } })).status, 201);
  await eventually(async () => (await call('/labels')).body.mailbox.resortPending === 0 && (await call(`/labels/${label.id}`)).body.totalCount === 4, 10_000, 'applied');
  assert.not.ok((await labelIds(full.id)).includes(label.id), 'never an 11th label');
});

/** A read of the store while no app runs on it: the data directory's file, or the PostgreSQL database. */
async function readStopped<T>(q: Query<T>): Promise<T> {
  if (TEST_STORE === 'sqlite') return runOn(s.readDb(), q);
  const pool = openPool(s.t.env.MAILWRIGHT_DATABASE_URL!, { max: 1 });
  try {
    return await readOn(pool, q);
  } finally {
    await pool.end();
  }
}

test('applying a rule to 10,000 stored messages goes on through a restart while mail arrives: nothing missed, nothing twice', async () => {
  const { store } = s.t.app;
  const inbox = (await store.read(get<{ id: string; workspace_id: string; address: string; domain_id: string }>('SELECT * FROM inboxes WHERE id = ?', s.inbox.id)))!;
  const parsed = await parseMessage(Buffer.from('From: bulk@sender.example\r\nSubject: stored\r\n\r\nx\r\n'));
  await store.write(function* () {
    for (let i = 0; i < 10_000; i++) {
      yield* storeReceivedEmail(s.t.app.clock, {
        workspaceId: inbox.workspace_id, inboxId: inbox.id, inboxAddress: inbox.address, domainId: inbox.domain_id, domain: s.domain.name,
        parsed: { ...parsed, subject: i % 2 ? `bulk odd ${i}` : `bulk even ${i}`, messageId: `bulk-${i}@sender.example` },
        stored: packMail(Buffer.from('x'), parsed.text, parsed.html), envelopeFrom: 'bulk@sender.example', authentication: {}, verdict: { category: 'primary', important: false, classification: 'test' }, threadId: null,
      });
    }
  });
  const label = (await call('/labels', { body: { name: 'Bulk odd' } })).body;
  assert.is((await call(`/labels/${label.id}/rules`, { body: { subject: 'bulk odd', apply_to_existing: true } })).status, 201);
  // Stop at once and start again on the same data directory, walking 200 at a time.
  await s.t.running.stop();
  const left = await readStopped(value<number>('SELECT total - done FROM label_resorts'));
  running = await startApp(loadConfig(s.t.env), { log: createLog({ level: 'error', write: () => {} }), resortBatch: 200 });
  api = `http://127.0.0.1:${running.http.port}/api/v1`;
  s.t.smtpPort = running.smtp.port;
  for (let i = 0; i < 3; i++) assert.is((await receive(`bulk odd arriving ${i}`)).code, 250);
  await eventually(async () => (await call('/labels')).body.mailbox.resortPending === 0, 30_000, 'the resort finished');
  const filedOf = async (subjects: string) =>
    Number(await running!.app.store.read(value(`SELECT count(*) FROM emails e, json_each(e.labels_json) j WHERE j.value = ? AND e.subject LIKE '${subjects}%'`, label.id)));
  assert.is(await filedOf('bulk odd'), 5_003, `every odd one once (the walk had ${left ?? 0} left when it stopped)`);
  assert.is(await filedOf('bulk even'), 0);
  assert.is((await call(`/labels/${label.id}`)).body.totalCount, 5_003, 'the count agrees');
});

test.run();
