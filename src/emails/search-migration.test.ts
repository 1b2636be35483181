// Migration 0025 on a database made by the schema before it: emails indexed the old way (time-ordered rowids,
// FTS5's prefix index), then migrated. Every search finds what it found before, rowids are dense in the old
// order, `after` and `before` still bound correctly (search_clock), a label walk resumes at the same email, a
// deleted email stays gone, and mail indexed after the migration is searched alongside.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { listMigrations, migrate } from '../db/migrate.ts';
import { runOn } from '../db/sqlite-query.ts';
import { createWorkspace } from '../account/workspaces.ts';
import { ensureLabels } from '../labels/labels.ts';
import { indexEmail, nextSearchRowid, participantsText } from './search-index.ts';
import { parseSearchQuery } from './search-query.ts';
import { listEmails, type ListParams } from './list.ts';

const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);
const MIN = 60_000;
const LETTERS: Array<{ subject: string; body: string; from: string; at: number }> = [
  { subject: 'Quarterly report', body: 'The quarterly numbers are in; see the attached report.', from: 'alice@example.com', at: T0 },
  { subject: 'Lunch at the café', body: 'Shall we meet at the Café Zoë? It is naïve to expect sun.', from: 'bob@example.org', at: T0 + 30_000 },
  { subject: 'Reporting line', body: 'Reports are due Friday. Function follows form.', from: 'carol@example.net', at: T0 + 5 * MIN },
  // The clock stepped back 20 seconds.
  { subject: 'Fun and games', body: 'A funny thing happened on the way to the forum.', from: 'dave@example.com', at: T0 + 5 * MIN - 20_000 },
  { subject: 'Invoice 1042', body: 'Your invoice for the quarterly subscription. Thank you for your order.', from: 'billing@shop.example', at: T0 + 90 * MIN },
  { subject: 'Deleted one', body: 'zebracrossing unique words', from: 'eve@example.com', at: T0 + 91 * MIN },
  { subject: 'Travel plans', body: 'Flights to Zürich booked; the hotel is near the station.', from: 'frank@example.org', at: T0 + 3 * 60 * MIN },
];
const QUERIES = ['report', 'quarterly', 'rep*', 'repor*', 'fun*', 'func*', 'cafe', 'caf*', 'zoe', 'zur*', '"quarterly numbers"', '"the quarterly num"*', 'invoice 1042', 'zebracrossing', 'zeb*', 'fri*', 'example', 'alice'];

function oldDatabase() {
  const db = new Database(':memory:');
  migrate(db, T0, listMigrations().filter((m) => m.version < 25));
  const ws = runOn(db, createWorkspace({ now: () => T0 }, 'old box'));
  const ids: string[] = [];
  let newest = 0;
  LETTERS.forEach((l, i) => {
    // The previous release's rowid: arrival ms * 1024, or one past the newest.
    const rowid = Math.max(l.at * 1024, newest + 1);
    newest = rowid;
    const id = `em_old${i}`;
    db.prepare(
      "INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, to_json, subject, preview, search_rowid, created_at) VALUES (?, ?, 'in', 'received', ?, ?, ?, ?, ?, ?, ?, ?)",
    ).run(id, ws.id, `${id}@x`, id, l.from, JSON.stringify([{ address: 'me@box.example' }]), l.subject, l.body.slice(0, 50), rowid, l.at);
    // The body as text, as stored before packing (list.ts reads it to check a long prefix).
    db.prepare('INSERT INTO email_contents (email_id, text_body) VALUES (?, ?)').run(id, l.body);
    db.prepare('INSERT INTO email_search (rowid, subject, body, participants, attachments) VALUES (?, ?, ?, ?, ?)').run(
      rowid, l.subject, l.body, participantsText({ address: l.from }, [{ address: 'me@box.example' }]), i === 4 ? 'invoice-1042.pdf' : '',
    );
    ids.push(id);
  });
  // A deleted email: its index row and its email row gone.
  const gone = db.prepare("SELECT search_rowid FROM emails WHERE id = 'em_old5'").pluck().get() as number;
  db.prepare('DELETE FROM email_search WHERE rowid = ?').run(gone);
  db.prepare("DELETE FROM emails WHERE id = 'em_old5'").run();
  return { db, ws: ws.id, ids };
}

const params = (p: Partial<ListParams>): ListParams => ({ limit: 50, offset: 0, includeSpam: true, ...p });
const found = (db: Database.Database, ws: string, p: Partial<ListParams>) => runOn(db, listEmails(ws, params(p))).data.map((e) => e.id);

test('0025 on a database of the previous schema: same answers, dense rowids, time bounds, resort cursors', () => {
  const { db, ws } = oldDatabase();
  // What FTS5 answered with the old index (its prefix index included), newest first.
  const exact = db.prepare('SELECT e.id FROM email_search CROSS JOIN emails e ON e.search_rowid = email_search.rowid WHERE email_search MATCH ? ORDER BY email_search.rowid DESC').pluck();
  const before = new Map(QUERIES.map((q) => [q, exact.all(parseSearchQuery(q).match)]));
  assert.equal(before.get('rep*'), ['em_old2', 'em_old0'], 'the old index answers');
  const label = runOn(db, ensureLabels({ now: () => T0 }, ws, ['Work']))[0];
  // A label walk that has done the two newest emails: it goes on below the third newest.
  const third = db.prepare('SELECT search_rowid FROM emails ORDER BY search_rowid DESC LIMIT 1 OFFSET 2').pluck().get() as number;
  db.prepare("INSERT INTO label_resorts (id, workspace_id, label_id, cursor, total, created_at) VALUES ('lrs_1', ?, ?, ?, 6, ?)").run(ws, label.id, third, T0);
  const below = db.prepare('SELECT id FROM emails WHERE search_rowid < ? ORDER BY search_rowid').pluck().all(third);

  migrate(db, T0);

  assert.equal(db.prepare('SELECT id, search_rowid FROM emails ORDER BY search_rowid').all(), ['em_old0', 'em_old1', 'em_old2', 'em_old3', 'em_old4', 'em_old6'].map((id, i) => ({ id, search_rowid: i + 1 })));
  assert.equal(db.prepare("SELECT count(*) FROM sqlite_schema WHERE sql LIKE '%prefix =%' OR sql LIKE '%prefix=%'").pluck().get(), 0, 'no FTS5 prefix index');
  for (const q of QUERIES) assert.equal(found(db, ws, { search: parseSearchQuery(q) }), before.get(q), q);
  assert.equal(found(db, ws, { search: parseSearchQuery('zebracrossing') }), [], 'a deleted email stays out of the index');
  assert.equal(exact.all('"f61" *'), ['em_old0'], 'the old prefix index held the role tokens (alice@ is 616c...)');
  assert.equal(found(db, ws, { search: parseSearchQuery('f61*') }), [], 'role tokens are no words a prefix finds');
  const cursor = db.prepare("SELECT cursor FROM label_resorts WHERE id = 'lrs_1'").pluck().get() as number;
  assert.equal(db.prepare('SELECT id FROM emails WHERE search_rowid < ? ORDER BY search_rowid').pluck().all(cursor), below, 'the resort goes on at the same email');

  // after and before, on both plans (a search and a plain list), exactly the creation-time filter.
  const all = ['em_old6', 'em_old4', 'em_old3', 'em_old2', 'em_old1', 'em_old0'];
  const at = new Map(db.prepare('SELECT id, created_at FROM emails').all().map((r: any) => [r.id, r.created_at as number]));
  for (const bound of [T0 - MIN, T0, T0 + 1, T0 + 5 * MIN - 20_000, T0 + 5 * MIN, T0 + 90 * MIN, T0 + 200 * MIN, T0 + 1000 * MIN]) {
    for (const search of [undefined, parseSearchQuery('the')]) {
      const matches = search ? all.filter((id) => id !== 'em_old2') : all;
      assert.equal(found(db, ws, { after: bound, search }), matches.filter((id) => at.get(id)! >= bound), `after ${bound - T0}`);
      assert.equal(found(db, ws, { before: bound, search }), matches.filter((id) => at.get(id)! < bound), `before ${bound - T0}`);
    }
  }

  // Mail indexed from now on continues the numbering and is found with the old.
  const now = T0 + 24 * 60 * MIN;
  const rowid = runOn(db, nextSearchRowid(now));
  assert.is(rowid, 7);
  db.prepare("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, subject, search_rowid, created_at) VALUES ('em_new', ?, 'in', 'received', 'new@x', 'em_new', 'zoe@example.com', 'Quarterly café', ?, ?)").run(ws, rowid, now);
  db.prepare("INSERT INTO email_contents (email_id, text_body) VALUES ('em_new', 'Reporting from Zürich.')").run();
  runOn(db, indexEmail(rowid, { workspaceId: ws, subject: 'Quarterly café', body: 'Reporting from Zürich.', from: { address: 'zoe@example.com' }, recipients: [], attachments: [] }));
  assert.equal(found(db, ws, { search: parseSearchQuery('zur*') }), ['em_new', 'em_old6']);
  assert.equal(found(db, ws, { search: parseSearchQuery('quarterly rep*') }), ['em_new', 'em_old0']);
  assert.equal(found(db, ws, { search: parseSearchQuery('caf*'), after: now }), ['em_new']);
  assert.equal(found(db, ws, { search: parseSearchQuery('caf*'), before: now }), ['em_old1']);
});

test.run();
