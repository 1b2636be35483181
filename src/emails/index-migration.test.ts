// Migration 0027 on a database of the schema before it: emails_workspace dropped, emails_inbox partial (received
// mail only). Every list answers as before, by inbox, by direction and whole, newest first, and a list by inbox
// still walks emails_inbox without sorting.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { listMigrations, migrate } from '../db/migrate.ts';
import { runOn } from '../db/sqlite-query.ts';
import { createWorkspace } from '../account/workspaces.ts';
import { listEmails, planList, type ListParams } from './list.ts';

const T0 = Date.UTC(2026, 10, 20, 9, 0, 0);

test('0027 on a database of the previous schema: the same lists, by inbox through the partial index', () => {
  const db = new Database(':memory:');
  migrate(db, T0, listMigrations().filter((m) => m.version < 27));
  const ws = runOn(db, createWorkspace({ now: () => T0 }, 'box')).id;
  const other = runOn(db, createWorkspace({ now: () => T0 }, 'other box')).id;
  // Received mail in two inboxes, and sends (no inbox) between them, in both workspaces. The inboxes themselves
  // are not this test's: their ids are enough for the lists.
  db.pragma('foreign_keys = OFF');
  const mail: Array<[string, string, 'in' | 'out', string | null]> = [
    ['em_a1', ws, 'in', 'inb_a'], ['em_s1', ws, 'out', null], ['em_b1', ws, 'in', 'inb_b'], ['em_a2', ws, 'in', 'inb_a'],
    ['em_x1', other, 'in', 'inb_x'], ['em_s2', ws, 'out', null], ['em_b2', ws, 'in', 'inb_b'], ['em_s3', other, 'out', null], ['em_a3', ws, 'in', 'inb_a'],
  ];
  mail.forEach(([id, workspace, direction, inbox], i) =>
    db
      .prepare("INSERT INTO emails (id, workspace_id, direction, status, inbox_id, message_id, thread_id, from_address, subject, search_rowid, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'a@example.com', ?, ?, ?)")
      .run(id, workspace, direction, direction === 'in' ? 'received' : 'sent', inbox, `${id}@x`, id, `Mail ${i}`, i + 1, T0 + i * 1000),
  );
  db.pragma('foreign_keys = ON');
  // The lists read trashed_at, for sent mail deliveries.complained_at, and email_contents.extracted_text, which
  // later migrations (trash, delivery_status, extracted_text) add: the columns alone here, and those migrations
  // left out below.
  db.exec('ALTER TABLE emails ADD COLUMN trashed_at INTEGER; ALTER TABLE deliveries ADD COLUMN complained_at INTEGER; ALTER TABLE email_contents ADD COLUMN extracted_text TEXT');
  const lists: Array<Partial<ListParams>> = [{}, { inboxId: 'inb_a' }, { inboxId: 'inb_b' }, { inboxId: 'inb_x' }, { direction: 'out' }, { direction: 'in' }];
  const params = (p: Partial<ListParams>): ListParams => ({ limit: 50, offset: 0, includeSpam: true, ...p });
  const ids = (p: Partial<ListParams>) => runOn(db, listEmails(ws, params(p))).data.map((e) => e.id);
  const before = lists.map(ids);
  assert.equal(before[1], ['em_a3', 'em_a2', 'em_a1'], 'the old schema answers');

  migrate(db, T0, listMigrations().filter((m) => !['trash', 'delivery_status', 'extracted_text'].includes(m.name)));

  assert.equal(lists.map(ids), before);
  assert.equal(ids({ inboxId: 'inb_x' }), [], "another workspace's inbox lists nothing here");
  assert.is(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'emails_workspace'").pluck().get(), 0);
  const plan = runOn(db, planList(ws, params({ inboxId: 'inb_b' })))!;
  const detail = (db.prepare(`EXPLAIN QUERY PLAN ${plan.sql}`).all(...plan.args) as Array<{ detail: string }>).map((r) => r.detail);
  assert.match(detail[0], /^SEARCH e USING INDEX emails_inbox \(workspace_id=\? AND inbox_id=\?\)/, detail.join(' / '));
  assert.not.ok(detail.some((d) => /TEMP B-TREE/.test(d)), detail.join(' / '));
  // Sent mail has no entry in the index; received mail has one each.
  assert.is(db.prepare('SELECT count(*) FROM emails INDEXED BY emails_inbox WHERE workspace_id = ? AND inbox_id IS NOT NULL').pluck().get(ws), 5);
});

test.run();
