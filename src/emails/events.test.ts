// What every event brings with it (emails/events.ts addEvent, since 0024 dropped the events trigger): its seq, the
// live stream's commit order (0028), never given twice, its id made from it rather than stored, and webhook outbox rows for exactly the endpoints that
// want it, in the same transaction; a workspace without an endpoint gets no outbox row. And addEvent stays the
// only writer of `events`, so no event can miss them. Migration 0028 on a database of the schema before it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase, type Db } from '../db/open.ts';
import { listMigrations, migrate } from '../db/migrate.ts';
import { createWebhook, updateWebhook, webhookById } from '../webhooks/endpoints.ts';
import { runOn } from '../db/sqlite-query.ts';
import { readBoxSecret } from '../db/box-secret.ts';
import { addEvent, eventOf, eventsInOrder, listEvents, newestSeq, seqBefore, type EventType } from './events.ts';
import { idTime, isId, newId } from '../db/ids.ts';

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
  runOn(db, addEvent(clock, { workspaceId, emailId, type, recipient: 'r@dest.example' }));
};
const outbox = (db: Db) => db.prepare('SELECT webhook_id, workspace_id, email_id, type FROM webhook_deliveries ORDER BY id').all() as Array<{ webhook_id: string; workspace_id: string; email_id: string; type: string }>;
const hook = (db: Db, workspaceId: string, events: string[], filters: { inboxId?: string; domainId?: string } = {}) =>
  runOn(db, createWebhook(t, workspaceId, { url: 'https://hooks.example/in', events, inboxId: filters.inboxId ?? null, domainId: filters.domainId ?? null, description: '' }, runOn(db, readBoxSecret()))).webhook;

test('0024 drops the events trigger: the outbox is written by addEvent', () => {
  const db = freshDb();
  assert.equal(db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'").pluck().all(), []);
});

test('a workspace without a webhook endpoint: every event takes the next seq, and no outbox row', () => {
  const db = freshDb();
  const em = email(db, 'ws_a');
  for (const type of ['sent', 'delivered', 'opened'] as const) event(db, 'ws_a', em, type);
  const seqs = db.prepare('SELECT seq, workspace_id, type FROM events ORDER BY seq').all() as Array<{ seq: number; workspace_id: string; type: string }>;
  assert.equal(seqs.map((f) => [f.workspace_id, f.type]), [['ws_a', 'sent'], ['ws_a', 'delivered'], ['ws_a', 'opened']]);
  assert.ok(seqs[0].seq < seqs[1].seq && seqs[1].seq < seqs[2].seq);
  assert.equal(outbox(db), []);
});

test("an event's id is made from its time and seq, not stored: the same at every read, unique, in time order, found again; ids stored before still read", () => {
  const db = freshDb();
  hook(db, 'ws_a', ['*']);
  const em = email(db, 'ws_a');
  for (const type of ['sent', 'delivered'] as const) runOn(db, addEvent(clock, { workspaceId: 'ws_a', emailId: em, type, recipient: 'r@dest.example' }));
  event(db, 'ws_a', em, 'opened');
  assert.equal(db.prepare('SELECT DISTINCT id FROM events').pluck().all(), [''], 'no id stored');
  const listed = runOn(db, listEvents('ws_a', em));
  const ids = listed.map((e) => e.id);
  assert.ok(ids.every((id) => isId('evt', id)), ids.join(' '));
  assert.is(new Set(ids).size, 3, 'two events of one millisecond differ');
  assert.equal(ids.map(idTime), [t - 1, t - 1, t], 'the time each was made, so ids sort by it');
  assert.equal(runOn(db, listEvents('ws_a', em)), listed, 'the same at the next read');
  assert.equal(runOn(db, eventsInOrder('ws_a', 0, runOn(db, newestSeq()), 0)).map((e) => e.event), listed, 'the stream shows the same');
  for (const e of listed) assert.equal(runOn(db, eventOf(em, e.id))?.event, e);
  assert.equal(db.prepare('SELECT event_id FROM webhook_deliveries ORDER BY rowid').pluck().all(), ids, 'the webhook deliveries carry them');
  assert.is(runOn(db, eventOf(em, `${ids[0].slice(0, -1)}${ids[0].endsWith('0') ? '1' : '0'}`)), undefined, 'a made-up id of the same millisecond');
  assert.is(runOn(db, eventOf(em, 'evt_nonsense')), undefined);
  // Another box numbers its events alike, and its ids differ: the seq is keyed under each box's secret.
  const other = freshDb();
  const otherEmail = email(other, 'ws_a');
  t -= 1;
  for (const type of ['sent', 'delivered'] as const) runOn(other, addEvent(clock, { workspaceId: 'ws_a', emailId: otherEmail, type, recipient: 'r@dest.example' }));
  t += 1;
  assert.not.ok(runOn(other, listEvents('ws_a', otherEmail)).some((e) => ids.includes(e.id)));
  // An event stored with its id, as before: shown and found by it.
  const stored = newId('evt', t);
  db.prepare("INSERT INTO events (id, workspace_id, email_id, type, recipient, data, created_at) VALUES (?, 'ws_a', ?, 'clicked', 'r@dest.example', '{}', ?)").run(stored, em, t);
  assert.is(runOn(db, listEvents('ws_a', em))[3].id, stored);
  assert.is(runOn(db, eventOf(em, stored))?.event.type, 'clicked');
});

test('a seq is never given twice: the newest events deleted with their email, the next still comes after them', () => {
  const db = freshDb();
  const keep = email(db, 'ws_a');
  const gone = email(db, 'ws_a');
  event(db, 'ws_a', keep);
  event(db, 'ws_a', gone);
  event(db, 'ws_a', gone, 'delivered');
  const before = runOn(db, newestSeq());
  db.prepare('DELETE FROM emails WHERE id = ?').run(gone);
  assert.is(runOn(db, newestSeq()), before - 2, 'the newest events went with their email');
  event(db, 'ws_a', keep, 'delivered');
  assert.is(runOn(db, newestSeq()), before + 1);
  const found = runOn(db, eventsInOrder('ws_a', 0, runOn(db, newestSeq()), 0));
  assert.equal(found.map((e) => [e.seq, e.event.type]), [[before - 2, 'sent'], [before + 1, 'delivered']]);
  const id = found[1].event.id;
  assert.equal(runOn(db, eventOf(keep, id))?.event, runOn(db, listEvents('ws_a', keep))[1], 'found by its email and id as the list shows it');
  assert.is(runOn(db, eventOf(gone, id)), undefined, 'under another email, no event');
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
  runOn(db, updateWebhook(t, runOn(db, webhookById('ws_a', all.id))!, { enabled: false }));
  runOn(db, updateWebhook(t, runOn(db, webhookById('ws_a', delivered.id))!, { enabled: false }));
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

test('the outbox rows are in the event\'s transaction: rolled back with it', () => {
  const db = freshDb();
  hook(db, 'ws_a', ['*']);
  const em = email(db, 'ws_a');
  assert.throws(() =>
    db.transaction(() => {
      event(db, 'ws_a', em);
      throw new Error('the rest of the transaction failed');
    })(),
  );
  assert.equal([db.prepare('SELECT count(*) FROM events').pluck().get(), outbox(db).length], [0, 0]);
  db.transaction(() => event(db, 'ws_a', em))();
  assert.equal([db.prepare('SELECT count(*) FROM events').pluck().get(), outbox(db).length], [1, 1]);
});

test('addEvent is the only writer of events, so no event misses its deliveries', () => {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [join(dir, e.name)] : []));
  const writers = files(SRC).filter((f) => /INSERT\s+(OR\s+\w+\s+)?INTO\s+events\b/i.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
  assert.equal(writers, ['emails/events.ts']);
});

test('0028: events in the feed keep its number, older ones come before them, the next after every number given', () => {
  const db = openDatabase(mkdtempSync(join(tmpdir(), 'mw-events-')));
  const t0 = t;
  migrate(db, t0, listMigrations().filter((m) => m.version < 28));
  db.prepare('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)').run('ws_a', 'ws_a', t);
  const em = email(db, 'ws_a');
  // Six events in the old schema: the feed (pruned after a day) holds the last four, and its newest row went
  // with nothing left of it but its number (sqlite_sequence), as a stream client may hold it.
  const ids = Array.from({ length: 6 }, (_, i) => `evt_01KQ${String(i).padStart(22, '0')}`);
  ids.forEach((id, i) =>
    db.prepare("INSERT INTO events (id, workspace_id, email_id, type, recipient, data, created_at) VALUES (?, 'ws_a', ?, ?, 'r@dest.example', '{}', ?)").run(id, em, i % 2 ? 'delivered' : 'sent', t0 + i),
  );
  ids.forEach((id, i) => db.prepare('INSERT INTO event_feed (event_id, workspace_id, created_at) VALUES (?, ?, ?)').run(id, 'ws_a', t0 + i));
  db.prepare('INSERT INTO event_feed (event_id, workspace_id, created_at) VALUES (?, ?, ?)').run('evt_gone', 'ws_a', t0 + 7);
  db.prepare('DELETE FROM event_feed WHERE seq <= 2 OR seq = 7').run();
  // As the API showed them before 0028: by id, which was stored.
  const before = (db.prepare('SELECT id, email_id, type, recipient, data, created_at FROM events ORDER BY id').all() as Array<Record<string, string | number>>).map((r) => ({
    id: r.id, emailId: r.email_id, type: r.type, recipient: r.recipient, createdAt: new Date(r.created_at).toISOString(), data: JSON.parse(r.data as string),
  }));
  // An event of an email that is gone, as only a file written with foreign keys off can hold: left behind.
  db.pragma('foreign_keys = OFF');
  db.prepare("INSERT INTO events (id, workspace_id, email_id, type, data, created_at) VALUES ('evt_orphan', 'ws_a', 'em_gone', 'sent', '{}', ?)").run(t0);
  db.pragma('foreign_keys = ON');

  migrate(db, t0);

  const rows = db.prepare('SELECT seq, id FROM events ORDER BY seq').all() as Array<{ seq: number; id: string }>;
  assert.equal(rows, [[-2, ids[0]], [-1, ids[1]], [3, ids[2]], [4, ids[3]], [5, ids[4]], [6, ids[5]]].map(([seq, id]) => ({ seq, id })));
  assert.equal(runOn(db, listEvents('ws_a', em)), before, 'the API shows the same events');
  assert.equal(runOn(db, eventOf(em, ids[4]))?.event, before[4]);
  const names = db.prepare("SELECT name FROM sqlite_schema WHERE tbl_name IN ('events', 'event_feed') ORDER BY name").pluck().all();
  assert.equal(names, ['events', 'events_email', 'events_workspace'], 'no id index, no feed');
  t = t0 + 10;
  event(db, 'ws_a', em, 'opened');
  assert.is(runOn(db, newestSeq()), 8, 'after the number the feed gave last, though its event is gone');
  assert.is(runOn(db, seqBefore('ws_a', t0 + 3)), 3, 'a window from the fourth event (seq 4) is read after seq 3');
  const plan = (db.prepare("EXPLAIN QUERY PLAN SELECT seq FROM events NOT INDEXED WHERE seq > ? AND seq <= ? AND workspace_id = ? AND created_at >= ? ORDER BY seq").all(0, 9, 'ws_a', 0) as Array<{ detail: string }>).map((r) => r.detail);
  assert.match(plan.join(' / '), /USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
  assert.equal(runOn(db, eventsInOrder('ws_a', 4, 8, t0 + 5)).map((e) => e.seq), [6, 8], 'a slice, within the window, in commit order');
});

test('0028 writes the events it copies in seq order, so the new table has full pages', () => {
  const db = openDatabase(mkdtempSync(join(tmpdir(), 'mw-events-')));
  migrate(db, t, listMigrations().filter((m) => m.version < 28));
  db.prepare('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)').run('ws_a', 'ws_a', t);
  const em = email(db, 'ws_a');
  // 6,000 events, the feed holding the last 1,000: both kinds of copy span many pages.
  db.transaction(() => {
    for (let i = 0; i < 6000; i++) {
      const id = `evt_01KQ${String(i).padStart(22, '0')}`;
      db.prepare("INSERT INTO events (id, workspace_id, email_id, type, recipient, data, created_at) VALUES (?, 'ws_a', ?, 'delivered', 'r@dest.example', '{}', ?)").run(id, em, t + i);
      if (i >= 5000) db.prepare('INSERT INTO event_feed (event_id, workspace_id, created_at) VALUES (?, ?, ?)').run(id, 'ws_a', t + i);
    }
  })();
  migrate(db, t);
  const { pages, unused } = db.prepare("SELECT count(*) AS pages, sum(unused) AS unused FROM dbstat WHERE name = 'events' AND pagetype = 'leaf'").get() as { pages: number; unused: number };
  assert.ok(pages > 20, `${pages} leaf pages`);
  assert.ok(unused / (pages * 4096) < 0.1, `${Math.round((100 * unused) / (pages * 4096))} % of the leaves unused`);
});

test.run();
