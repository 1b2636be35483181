// The in-memory copy of a model's counts that scoring reads (counts-cache.ts), on a real SQLite file: it gives
// the verdicts the SQL read gives, a copy older than its model is never read (the model's version changes with
// every change of its counts, also one rolled back and redone otherwise), and each workspace has its own.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../db/open.ts';
import { migrate } from '../db/migrate.ts';
import { cachedCounts, dropCopies } from './counts-cache.ts';
import { score, tokenHash, train, type SpamClass } from './store.ts';
import { runOn } from '../db/sqlite-query.ts';

const T0 = Date.UTC(2026, 0, 1);
let seq = 0;

function freshDb(dir = mkdtempSync(join(tmpdir(), 'mw-counts-'))): { db: Db; dir: string } {
  const db = openDatabase(dir);
  migrate(db);
  for (const ws of ['ws_a', 'ws_b']) db.prepare('INSERT OR IGNORE INTO workspaces (id, name, created_at) VALUES (?, ?, ?)').run(ws, ws, T0);
  return { db, dir };
}

function learn(db: Db, ws: string, cls: SpamClass, tokens: string[]): void {
  const id = `em_${String(++seq).padStart(26, '0')}`;
  db.prepare("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, created_at) VALUES (?, ?, 'in', 'received', ?, ?, 'a@x.example', ?)").run(id, ws, `${id}@x`, id, T0);
  db.transaction(() => runOn(db, train({ workspaceId: ws, emailId: id, class: cls, tokens, source: 'owner', now: T0 })))();
}

function teach(db: Db, ws: string, n: number): void {
  for (let i = 0; i < n; i++) {
    learn(db, ws, 'spam', ['viagra', 's:free', `spam-${i}`]);
    learn(db, ws, 'ham', ['agenda', 'meeting', `ham-${i}`]);
  }
}

const model = (db: Db, ws: string) => db.prepare('SELECT id, version, tokens FROM spam_filter_models WHERE workspace_id = ?').get(ws) as { id: number; version: number; tokens: number };
const MESSAGE = { tokens: ['viagra', 'agenda', 'unknown'], gtube: false };
const clue = (db: Db, ws: string, token: string) => runOn(db, score(ws, MESSAGE)).clues.find((c) => c.token === token);

test('the copy answers what the table holds, and a model that changed is read from SQL until copied again', () => {
  const { db } = freshDb();
  teach(db, 'ws_a', 60);
  const m = model(db, 'ws_a');
  const rows = runOn(db, cachedCounts(m, [tokenHash('viagra'), tokenHash('agenda'), tokenHash('unknown')]));
  assert.equal(rows, [{ spam: 60, ham: 0 }, { spam: 0, ham: 60 }, undefined]);
  assert.equal(clue(db, 'ws_a', 'viagra'), { token: 'viagra', prob: clue(db, 'ws_a', 'viagra')!.prob, spam: 60, ham: 0 });

  // One more spam: the copy (version of before) is not read; this one is scored from the table.
  learn(db, 'ws_a', 'spam', ['viagra']);
  assert.is.not(model(db, 'ws_a').version, m.version);
  assert.is(runOn(db, cachedCounts(model(db, 'ws_a'), [tokenHash('viagra')])), null, 'copied again at most every REBUILD_MS');
  assert.is(clue(db, 'ws_a', 'viagra')!.spam, 61);
  // A thread with no copy yet copies the model as it stands.
  dropCopies();
  assert.equal(runOn(db, cachedCounts(model(db, 'ws_a'), [tokenHash('viagra')])), [{ spam: 61, ham: 0 }]);
});

test('a change rolled back leaves the version it had; the one redone after it gets a new one', () => {
  const { db } = freshDb();
  teach(db, 'ws_a', 55);
  const before = model(db, 'ws_a').version;
  assert.throws(() =>
    db.transaction(() => {
      learn(db, 'ws_a', 'spam', ['viagra']);
      throw new Error('rolled back');
    })(),
  );
  assert.is(model(db, 'ws_a').version, before);
  learn(db, 'ws_a', 'ham', ['viagra']);
  const after = model(db, 'ws_a').version;
  assert.ok(after !== before && Number.isSafeInteger(after), String(after));
});

test('copies are per workspace: another model\'s counts never answer', () => {
  const { db } = freshDb();
  teach(db, 'ws_a', 60);
  learn(db, 'ws_b', 'ham', ['viagra']);
  learn(db, 'ws_b', 'spam', ['agenda']);
  assert.equal(runOn(db, cachedCounts(model(db, 'ws_b'), [tokenHash('viagra'), tokenHash('agenda')])), [
    { spam: 0, ham: 1 },
    { spam: 1, ham: 0 },
  ]);
  assert.is(clue(db, 'ws_a', 'viagra')!.spam, 60);
});

test.run();
