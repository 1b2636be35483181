// What every event brings with it (emails/events.ts addEvent, since 0024 dropped the events trigger): its row in
// the live stream's feed, in commit order, and webhook outbox rows for exactly the endpoints that want it, in the
// same transaction; a workspace without an endpoint gets no outbox row. And addEvent stays the only writer of
// `events`, so no event can miss them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase, type Db } from '../db/open.ts';
import { migrate } from '../db/migrate.ts';
import { createWebhook, updateWebhook, webhookById } from '../webhooks/endpoints.ts';
import { addEvent, type EventType } from './events.ts';

const SRC = fileURLToPath(new URL('..', import.meta.url));
let t = 1_800_000_000_000;
const clock = { now: () => t };

function freshDb(): Db {
  const db = openDatabase(mkdtempSync(join(tmpdir(), 'mw-events-')));
  migrate(db);
  for (const ws of ['ws_a', 'ws_b']) {
    db.prepare('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)').run(ws, ws, t);
    db.prepare("INSERT INTO domains (id, workspace_id, name, return_path, status, created_at) VALUES (?, ?, ?, ?, 'verified', ?)").run(`dom_${ws}`, ws, `${ws}.example`, `bounces.${ws}.example`, t);
    db.prepare('INSERT INTO inboxes (id, workspace_id, domain_id, local_part, address, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(`inb_${ws}`, ws, `dom_${ws}`, 'hello', `hello@${ws}.example`, t);
  }
  return db;
}

let emails = 0;
function email(db: Db, workspaceId: string, opts: { inboxId?: string | null; domainId?: string | null } = {}): string {
  const id = `em_${String(++emails).padStart(26, '0')}`;
  db.prepare("INSERT INTO emails (id, workspace_id, direction, status, domain_id, inbox_id, message_id, thread_id, from_address, created_at) VALUES (?, ?, 'out', 'sent', ?, ?, ?, ?, 'a@x.example', ?)").run(
    id, workspaceId, opts.domainId ?? null, opts.inboxId ?? null, `${id}@x.example`, id, t,
  );
  return id;
}

const event = (db: Db, workspaceId: string, emailId: string, type: EventType = 'sent') => {
  t += 1;
  addEvent(db, clock, { workspaceId, emailId, type, recipient: 'r@dest.example' });
};
const outbox = (db: Db) => db.prepare('SELECT webhook_id, workspace_id, email_id, type FROM webhook_deliveries ORDER BY id').all() as Array<{ webhook_id: string; workspace_id: string; email_id: string; type: string }>;
const hook = (db: Db, workspaceId: string, events: string[], filters: { inboxId?: string; domainId?: string } = {}) =>
  createWebhook(db, t, workspaceId, { url: 'https://hooks.example/in', events, inboxId: filters.inboxId ?? null, domainId: filters.domainId ?? null, description: '' }).webhook;

test('0024 drops the events trigger: the feed and the outbox are written by addEvent', () => {
  const db = freshDb();
  assert.equal(db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'").pluck().all(), []);
});

test('a workspace without a webhook endpoint: every event gets its feed row, in order, and no outbox row', () => {
  const db = freshDb();
  const em = email(db, 'ws_a');
  for (const type of ['sent', 'delivered', 'opened'] as const) event(db, 'ws_a', em, type);
  const feed = db.prepare('SELECT f.seq, f.workspace_id, e.type FROM event_feed f JOIN events e ON e.id = f.event_id ORDER BY f.seq').all() as Array<{ seq: number; workspace_id: string; type: string }>;
  assert.equal(feed.map((f) => [f.workspace_id, f.type]), [['ws_a', 'sent'], ['ws_a', 'delivered'], ['ws_a', 'opened']]);
  assert.ok(feed[0].seq < feed[1].seq && feed[1].seq < feed[2].seq);
  assert.equal(outbox(db), []);
});

test('an endpoint created later gets the events emitted after it, of the types it asked for; disabled or in another workspace, none', () => {
  const db = freshDb();
  const em = email(db, 'ws_a');
  event(db, 'ws_a', em, 'sent');
  const delivered = hook(db, 'ws_a', ['email.delivered']);
  const all = hook(db, 'ws_a', ['*']);
  const elsewhere = hook(db, 'ws_b', ['*']);
  event(db, 'ws_a', em, 'delivered');
  event(db, 'ws_a', em, 'opened');
  assert.equal(outbox(db).map((d) => [d.webhook_id, d.type]).sort(), [
    [all.id, 'email.delivered'],
    [all.id, 'email.opened'],
    [delivered.id, 'email.delivered'],
  ].sort(), 'nothing for the event before the endpoints existed, nothing for ws_b');
  updateWebhook(db, t, webhookById(db, 'ws_a', all.id)!, { enabled: false });
  updateWebhook(db, t, webhookById(db, 'ws_a', delivered.id)!, { enabled: false });
  event(db, 'ws_a', em, 'delivered');
  assert.is(outbox(db).length, 3, 'disabled endpoints get nothing');
  const other = email(db, 'ws_b');
  event(db, 'ws_b', other, 'sent');
  assert.equal(outbox(db).filter((d) => d.webhook_id === elsewhere.id).map((d) => [d.workspace_id, d.email_id, d.type]), [['ws_b', other, 'email.sent']]);
});

test('inbox and domain filters pick the events of their own mail', () => {
  const db = freshDb();
  db.prepare("INSERT INTO domains (id, workspace_id, name, return_path, status, created_at) VALUES ('dom_other', 'ws_a', 'other.example', 'bounces.other.example', 'verified', ?)").run(t);
  const byInbox = hook(db, 'ws_a', ['email.received'], { inboxId: 'inb_ws_a' });
  const byDomain = hook(db, 'ws_a', ['email.sent'], { domainId: 'dom_other' });
  const inInbox = email(db, 'ws_a', { inboxId: 'inb_ws_a' });
  const elsewhere = email(db, 'ws_a');
  const fromOther = email(db, 'ws_a', { domainId: 'dom_other' });
  event(db, 'ws_a', inInbox, 'received');
  event(db, 'ws_a', elsewhere, 'received');
  event(db, 'ws_a', elsewhere, 'sent');
  event(db, 'ws_a', fromOther, 'sent');
  assert.equal(outbox(db).map((d) => [d.webhook_id, d.email_id]), [[byInbox.id, inInbox], [byDomain.id, fromOther]]);
});

test('the feed and outbox rows are in the event\'s transaction: rolled back with it', () => {
  const db = freshDb();
  hook(db, 'ws_a', ['*']);
  const em = email(db, 'ws_a');
  assert.throws(() =>
    db.transaction(() => {
      event(db, 'ws_a', em);
      throw new Error('the rest of the transaction failed');
    })(),
  );
  assert.equal([db.prepare('SELECT count(*) FROM events').pluck().get(), db.prepare('SELECT count(*) FROM event_feed').pluck().get(), outbox(db).length], [0, 0, 0]);
  db.transaction(() => event(db, 'ws_a', em))();
  assert.equal([db.prepare('SELECT count(*) FROM events').pluck().get(), db.prepare('SELECT count(*) FROM event_feed').pluck().get(), outbox(db).length], [1, 1, 1]);
});

test('addEvent is the only writer of events, so no event misses its feed row or its deliveries', () => {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [join(dir, e.name)] : []));
  const writers = files(SRC).filter((f) => /INSERT\s+(OR\s+\w+\s+)?INTO\s+events\b/i.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
  assert.equal(writers, ['emails/events.ts']);
});

test.run();
