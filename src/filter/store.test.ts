// The content filter's state on a real SQLite file opened and migrated as the app does: learning and scoring,
// corrections that move a message between classes, workspace isolation, pruning to the bound, and a model that
// survives a restart and a backup restored elsewhere.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../db/open.ts';
import { migrate } from '../db/migrate.ts';
import { createBackup } from '../db/backup.ts';
import { restoreBackup } from '../db/restore.ts';
import { forget, modelStats, prune, score, tokenHash, train, trainedAs, type SpamClass, type TrainSource } from './store.ts';
import { GTUBE } from './tokens.ts';
import { runOn } from '../db/sqlite-query.ts';
import type { Query } from '../db/query.ts';

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;
let seq = 0;

function freshDb(dir = mkdtempSync(join(tmpdir(), 'mw-filter-'))): { db: Db; dir: string } {
  const db = openDatabase(dir);
  migrate(db);
  for (const ws of ['ws_a', 'ws_b']) db.prepare('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)').run(ws, ws, T0);
  return { db, dir };
}

/** A write in its own transaction, as the writer runs each job in one. */
const inTransaction = <T>(db: Db, q: Query<T>): T => db.transaction(() => runOn(db, q))();

function email(db: Db, workspaceId: string): string {
  const id = `em_${String(++seq).padStart(26, '0')}`;
  db.prepare("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, created_at) VALUES (?, ?, 'in', 'received', ?, ?, 'a@x.example', ?)").run(id, workspaceId, `${id}@x`, id, T0);
  return id;
}

const SPAMMY = ['s:free', 'viagra', 'winner', 'url:@cheap.example', 'click', 'mailer:none'];
const HAMMY = ['s:reply', 'agenda', 'meeting', 'hdr:in-reply-to:yes', 'list:dev.example.org', 'mailer:none'];
/** A message of the class: its class's words plus a few of its own. */
const message = (spam: boolean, i: number) => [...(spam ? SPAMMY : HAMMY), `${spam}-own${i}`, `${spam}-own${i}b`];

function learn(db: Db, ws: string, cls: SpamClass, tokens: string[], source: TrainSource = 'owner', now = T0) {
  const emailId = email(db, ws);
  return { emailId, ...inTransaction(db, train({ workspaceId: ws, emailId, class: cls, tokens, source, now })) };
}

function teach(db: Db, ws: string, n: number, invert = false) {
  for (let i = 0; i < n; i++) {
    learn(db, ws, invert ? 'ham' : 'spam', message(true, i));
    learn(db, ws, invert ? 'spam' : 'ham', message(false, i));
  }
}

const verdictOf = (db: Db, ws: string, tokens: string[], gtube = false) => runOn(db, score(ws, { tokens, gtube }));
const rowCount = (db: Db) => db.prepare('SELECT count(*) FROM spam_filter_tokens').pluck().get() as number;
const counts = (db: Db, ws: string, token: string) =>
  db.prepare('SELECT t.spam, t.ham FROM spam_filter_tokens t JOIN spam_filter_models m ON m.id = t.model_id WHERE m.workspace_id = ? AND t.token = ?').get(ws, tokenHash(token)) as
    | { spam: number; ham: number }
    | undefined;

test('a trained model puts spam in Spam and leaves ham, with the clues that decided', () => {
  const { db } = freshDb();
  teach(db, 'ws_a', 60);
  assert.equal(runOn(db, modelStats('ws_a')), { spam: 60, ham: 60, tokens: 11 + 4 * 60, state: 'trained' });
  const spam = verdictOf(db, 'ws_a', ['s:free', 'viagra', 'winner', 'never-seen']);
  assert.ok(spam.spam && spam.score > 0.99, JSON.stringify(spam));
  assert.equal(spam.clues.map((c) => c.token).sort(), ['s:free', 'viagra', 'winner']);
  assert.equal(spam.clues[0]!.spam, 60);
  const ham = verdictOf(db, 'ws_a', ['agenda', 'meeting', 'hdr:in-reply-to:yes']);
  assert.not.ok(ham.spam);
  assert.ok(ham.score < 0.01);
  // A token in both classes equally (mailer:none) is no clue.
  assert.not.ok(verdictOf(db, 'ws_a', ['mailer:none', 'viagra']).clues.some((c) => c.token === 'mailer:none'));
});

test('workspace isolation: a workspace never scores with, nor teaches, another one\'s tokens', () => {
  const { db } = freshDb();
  teach(db, 'ws_a', 60);
  const fresh = verdictOf(db, 'ws_b', SPAMMY);
  assert.is(fresh.state, 'untrained');
  assert.not.ok(fresh.spam);
  assert.is(fresh.clues.length, 0);
  assert.equal(runOn(db, modelStats('ws_b')), { spam: 0, ham: 0, tokens: 0, state: 'untrained' });
  // B learns the opposite: each workspace keeps its own view of the same words.
  teach(db, 'ws_b', 60, true);
  assert.ok(verdictOf(db, 'ws_a', SPAMMY).spam);
  assert.not.ok(verdictOf(db, 'ws_b', SPAMMY).spam);
  assert.ok(verdictOf(db, 'ws_b', HAMMY).spam);
  // An email of A cannot teach B's model; nothing changes.
  const ofA = email(db, 'ws_a');
  const before = rowCount(db);
  assert.throws(() => inTransaction(db, train({ workspaceId: 'ws_b', emailId: ofA, class: 'spam', tokens: ['x'], source: 'owner', now: T0 })), /not an email of workspace ws_b/);
  assert.is(rowCount(db), before);
  assert.is(runOn(db, trainedAs('ws_b', ofA)), null);
});

test('cold start: a fresh box moves nothing, a learning one only on very strong evidence', () => {
  const { db } = freshDb();
  assert.not.ok(verdictOf(db, 'ws_a', SPAMMY).spam);
  teach(db, 'ws_a', 30);
  const learning = verdictOf(db, 'ws_a', SPAMMY);
  assert.is(learning.state, 'learning');
  assert.is(learning.threshold, 0.99);
  // One spam word against a hammy context stays in the inbox while learning.
  assert.not.ok(verdictOf(db, 'ws_a', ['viagra', 'agenda', 'meeting']).spam);
});

test('GTUBE is spam on a fresh box', () => {
  const { db } = freshDb();
  const v = verdictOf(db, 'ws_a', ['agenda'], true);
  assert.ok(v.spam && v.gtube);
  assert.is(v.score, 1);
  assert.ok(GTUBE.includes('GTUBE'));
});

test('a correction moves a message from one class to the other, counted once', () => {
  const { db } = freshDb();
  const tokens = ['alpha', 'beta', 'shared'];
  learn(db, 'ws_a', 'ham', ['shared', 'other']);
  const { emailId, outcome } = learn(db, 'ws_a', 'spam', tokens, 'auto');
  assert.is(outcome, 'learned');
  assert.equal(counts(db, 'ws_a', 'alpha'), { spam: 1, ham: 0 });
  assert.equal(counts(db, 'ws_a', 'shared'), { spam: 1, ham: 1 });
  // The owner says it is not spam: it leaves the spam counts and joins the ham counts.
  assert.is(inTransaction(db, train({ workspaceId: 'ws_a', emailId, class: 'ham', tokens, source: 'owner', now: T0 })).outcome, 'moved');
  assert.equal(counts(db, 'ws_a', 'alpha'), { spam: 0, ham: 1 });
  assert.equal(counts(db, 'ws_a', 'shared'), { spam: 0, ham: 2 });
  assert.equal(runOn(db, modelStats('ws_a')), { spam: 0, ham: 2, tokens: 4, state: 'untrained' });
  assert.equal(runOn(db, trainedAs('ws_a', emailId)), { class: 'ham', source: 'owner' });
  // Said again: nothing changes. The box's own later opinion does not override the owner.
  assert.is(inTransaction(db, train({ workspaceId: 'ws_a', emailId, class: 'ham', tokens, source: 'owner', now: T0 })).outcome, 'unchanged');
  assert.is(inTransaction(db, train({ workspaceId: 'ws_a', emailId, class: 'spam', tokens, source: 'auto', now: T0 })).outcome, 'kept_owner');
  assert.equal(counts(db, 'ws_a', 'shared'), { spam: 0, ham: 2 });
  // The owner changing their mind is obeyed.
  assert.is(inTransaction(db, train({ workspaceId: 'ws_a', emailId, class: 'spam', tokens, source: 'owner', now: T0 })).outcome, 'moved');
  assert.equal(counts(db, 'ws_a', 'shared'), { spam: 1, ham: 1 });
  assert.equal(runOn(db, modelStats('ws_a')), { spam: 1, ham: 1, tokens: 4, state: 'learning' });
});

test('forget takes an email back; deleting an email or a workspace drops what belongs to it', () => {
  const { db } = freshDb();
  const a = learn(db, 'ws_a', 'spam', ['only-here', 'common']);
  learn(db, 'ws_a', 'spam', ['common']);
  assert.ok(inTransaction(db, forget({ workspaceId: 'ws_a', emailId: a.emailId, tokens: ['only-here', 'common'] })));
  assert.not.ok(inTransaction(db, forget({ workspaceId: 'ws_a', emailId: a.emailId, tokens: ['only-here', 'common'] })));
  assert.is(counts(db, 'ws_a', 'only-here'), undefined, 'a token no longer in any learned message is deleted');
  assert.equal(counts(db, 'ws_a', 'common'), { spam: 1, ham: 0 });
  assert.equal(runOn(db, modelStats('ws_a')), { spam: 1, ham: 0, tokens: 1, state: 'untrained' });
  const b = learn(db, 'ws_a', 'ham', ['x']);
  db.prepare('DELETE FROM emails WHERE id = ?').run(b.emailId);
  assert.is(runOn(db, trainedAs('ws_a', b.emailId)), null);
  assert.equal(counts(db, 'ws_a', 'x'), { spam: 0, ham: 1 }, 'what the model learned stays');
  learn(db, 'ws_b', 'ham', ['y']);
  db.prepare('DELETE FROM workspaces WHERE id = ?').run('ws_a');
  assert.is(db.prepare('SELECT count(*) FROM spam_filter_models').pluck().get(), 1);
  assert.is(rowCount(db), 1);
});

test('prune: rare and stale tokens go first, frequent ones stay, the row count stays true', () => {
  const { db } = freshDb();
  for (let i = 0; i < 40; i++) learn(db, 'ws_a', i % 2 ? 'spam' : 'ham', ['frequent', `old-rare-${i}`], 'owner', T0);
  for (let i = 0; i < 40; i++) learn(db, 'ws_a', 'ham', [`twice-${i % 20}`], 'owner', T0 + 20 * DAY);
  for (let i = 0; i < 40; i++) learn(db, 'ws_a', 'spam', [`new-rare-${i}`], 'owner', T0 + 40 * DAY);
  learn(db, 'ws_b', 'spam', ['old-rare-1'], 'owner', T0);
  assert.is(runOn(db, modelStats('ws_a')).tokens, 1 + 40 + 20 + 40);
  const r = inTransaction(db, prune('ws_a', T0 + 41 * DAY, 70));
  assert.equal(r, { deleted: 31, tokens: 70 });
  assert.is(runOn(db, modelStats('ws_a')).tokens, db.prepare("SELECT count(*) FROM spam_filter_tokens t JOIN spam_filter_models m ON m.id = t.model_id WHERE m.workspace_id = 'ws_a'").pluck().get());
  assert.ok(counts(db, 'ws_a', 'frequent'));
  assert.ok(counts(db, 'ws_a', 'twice-3'));
  assert.ok(counts(db, 'ws_a', 'new-rare-3'), 'recent tokens are kept while stale ones can go');
  assert.is(db.prepare("SELECT count(*) FROM spam_filter_tokens t JOIN spam_filter_models m ON m.id = t.model_id WHERE m.workspace_id = 'ws_a' AND t.spam + t.ham = 1 AND t.seen_day = ?").pluck().get(Math.floor(T0 / DAY)), 9);
  assert.ok(counts(db, 'ws_b', 'old-rare-1'), 'another workspace is not pruned');
  // Past the stale ones, the rarest recent ones go too, never a frequent one.
  assert.equal(inTransaction(db, prune('ws_a', T0 + 41 * DAY, 5)), { deleted: 65, tokens: 5 });
  assert.ok(counts(db, 'ws_a', 'frequent'));
  assert.equal(inTransaction(db, prune('ws_a', T0 + 41 * DAY, 5)), { deleted: 0, tokens: 5 });
});

test('the model survives a restart and a backup restored into another data directory', async () => {
  const { db, dir } = freshDb();
  teach(db, 'ws_a', 60);
  const before = verdictOf(db, 'ws_a', SPAMMY);
  db.close();
  const reopened = openDatabase(dir);
  migrate(reopened);
  assert.equal(verdictOf(reopened, 'ws_a', SPAMMY), before);
  const file = join(mkdtempSync(join(tmpdir(), 'mw-filter-backup-')), 'box.backup');
  await createBackup({ dataDir: dir, file });
  reopened.close();
  const elsewhere = join(mkdtempSync(join(tmpdir(), 'mw-filter-restored-')), 'data');
  await restoreBackup(file, elsewhere);
  const restored = openDatabase(elsewhere);
  assert.equal(verdictOf(restored, 'ws_a', SPAMMY), before);
  assert.equal(runOn(restored, modelStats('ws_a')), { spam: 60, ham: 60, tokens: 11 + 4 * 60, state: 'trained' });
  restored.close();
});

test.run();
