import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { assertPragmas, databasePath, openDatabase } from './open.ts';
import { migrate, listMigrations } from './migrate.ts';
import { GroupCommit } from './group-commit.ts';
import { isId, newId } from './ids.ts';
import { openStore } from '../start/store.ts';
import { loadConfig } from '../config/config.ts';
import { createLog } from '../log.ts';
import { systemClock } from '../clock.ts';
import { testEnv } from '../testkit/app.ts';

const freshDir = () => mkdtempSync(join(tmpdir(), 'mw-db-'));

test('every open, including reopens of a WAL database, is WAL with synchronous=FULL', () => {
  const dir = freshDir();
  for (let i = 0; i < 3; i++) {
    const db = openDatabase(dir);
    assert.is(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.is(db.pragma('synchronous', { simple: true }), 2);
    assert.is(db.pragma('foreign_keys', { simple: true }), 1);
    assert.ok(Number(db.pragma('busy_timeout', { simple: true })) > 0);
    db.close();
  }
});

test('the guard refuses a connection that fell back to NORMAL (what better-sqlite3 does on reopen)', () => {
  const dir = freshDir();
  openDatabase(dir).close();
  const raw = new Database(databasePath(dir));
  assert.is(raw.pragma('synchronous', { simple: true }), 1, 'better-sqlite3 reopens WAL at NORMAL: the reason for the guard');
  assert.throws(() => assertPragmas(raw), /synchronous=1/);
  raw.close();
});

test('prepare() reuses compiled statements, each back in plain row mode', () => {
  const db = openDatabase(freshDir());
  db.exec("CREATE TABLE t (a, b); INSERT INTO t VALUES (1, 'x')");
  const sql = 'SELECT a, b FROM t';
  assert.ok(db.prepare(sql) === db.prepare(sql), 'compiled once');
  assert.is(db.prepare(sql).pluck().get(), 1);
  assert.equal(db.prepare(sql).get(), { a: 1, b: 'x' }, 'pluck() of an earlier use does not stick');
  assert.equal(db.prepare(sql).raw().get(), [1, 'x']);
  assert.equal(db.prepare(sql).get(), { a: 1, b: 'x' });
  assert.is(db.prepare("INSERT INTO t VALUES (2, 'y')").run().changes, 1);
  assert.is(db.prepare("INSERT INTO t VALUES (2, 'y')").run().changes, 1, 'writers are reused too');
});

test('migrations apply once, in order, and a newer schema is refused', () => {
  const db = openDatabase(freshDir());
  const all = listMigrations().map((m) => m.version);
  assert.equal(migrate(db), all);
  assert.equal(migrate(db), []);
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
  for (const t of ['workspaces', 'users', 'sessions', 'api_keys', 'idempotency_keys']) assert.ok(tables.includes(t), t);
  db.prepare('INSERT INTO schema_migrations VALUES (9999, ?, 0)').run('future');
  assert.throws(() => migrate(db), /newer than this release/);
});

test('serve announces the migrations of an upgrade (a rebuild of the search index takes minutes), not those of a new data directory', () => {
  const config = (dir: string) => loadConfig(testEnv(dir));
  const lines: string[] = [];
  const log = createLog({ level: 'info', write: (line) => lines.push(line) });
  const fresh = freshDir();
  openStore(config(fresh), systemClock, log).close();
  assert.is(lines.filter((l) => l.includes('migrat')).length, 0, 'a new box says nothing');

  const older = freshDir();
  const db = openDatabase(older);
  migrate(db, Date.now(), listMigrations().filter((m) => m.version < 25));
  db.close();
  openStore(config(older), systemClock, log).close();
  const said = lines.map((l) => JSON.parse(l) as { msg: string; version?: number; name?: string; versions?: number[] });
  const applying = said.filter((l) => l.msg === 'applying schema migration');
  assert.equal(applying.map((l) => l.version), listMigrations().filter((m) => m.version >= 25).map((m) => m.version));
  assert.is(applying[0].name, 'compact_search_index');
  assert.equal(said.find((l) => l.msg === 'schema migrated')?.versions, applying.map((l) => l.version));
});

test('a failing migration leaves nothing behind', () => {
  const db = openDatabase(freshDir());
  const broken = [{ version: 1, name: 'broken', sql: 'CREATE TABLE a (x); CREATE TABLE a (y);' }];
  assert.throws(() => migrate(db, 0, broken));
  assert.is(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'a'").pluck().get(), 0);
  assert.is(db.prepare('SELECT count(*) FROM schema_migrations').pluck().get(), 0);
});

test('ids: prefix + 26 ULID characters, sortable by creation, monotonic within a millisecond', () => {
  const ids = Array.from({ length: 1000 }, () => newId('em', 1_700_000_000_000));
  assert.ok(ids.every((id) => isId('em', id) && id.length === 3 + 26));
  assert.equal([...ids].sort(), ids);
  assert.is(new Set(ids).size, ids.length);
  assert.ok(newId('em', 1_700_000_000_000) < newId('em', 1_700_000_000_001));
  const earlier = newId('key', 1_600_000_000_000);
  assert.ok(isId('key', earlier));
  assert.not.ok(isId('em', 'em_notanid'));
  assert.not.ok(isId('em', earlier));
});

test('group commit: concurrent writers share one commit, each settles after it, a failing writer fails alone', async () => {
  const dir = freshDir();
  const db = openDatabase(dir);
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  const gc = new GroupCommit(db, { windowMs: 5 });
  const reader = openDatabase(dir);
  const insert = db.prepare('INSERT INTO t (n) VALUES (?)');

  const results = await Promise.allSettled(
    Array.from({ length: 50 }, (_, i) =>
      gc.run(() => {
        if (i === 7) {
          insert.run(1000);
          throw new Error('writer 7 fails');
        }
        insert.run(i);
        return i;
      }).then((value) => {
        // Settled only after COMMIT: a separate connection already sees the row.
        assert.is(reader.prepare('SELECT count(*) FROM t WHERE n = ?').pluck().get(value), 1);
        return value;
      }),
    ),
  );
  assert.is(results.filter((r) => r.status === 'fulfilled').length, 49);
  assert.match(String((results[7] as PromiseRejectedResult).reason), /writer 7 fails/);
  assert.is(reader.prepare('SELECT count(*) FROM t').pluck().get(), 49, 'the failing writer rolled back only itself');
  assert.is(gc.stats.jobs, 50, 'every writer rode in a commit, the failed one included');
  assert.ok(gc.stats.commits < 5, `50 writers should share a handful of commits, took ${gc.stats.commits}`);
});

test('group commit: a batch that cannot commit rejects every writer in it', async () => {
  const db = openDatabase(freshDir());
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  db.exec('CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)');
  const gc = new GroupCommit(db, { windowMs: 1 });
  // A deferred foreign key fails only at COMMIT, so the whole batch fails together.
  const a = gc.run(() => db.prepare('INSERT INTO t VALUES (1)').run());
  const b = gc.run(() => db.prepare('INSERT INTO child VALUES (42)').run());
  const [ra, rb] = await Promise.allSettled([a, b]);
  assert.is(ra.status, 'rejected');
  assert.is(rb.status, 'rejected');
  assert.is(db.prepare('SELECT count(*) FROM t').pluck().get(), 0);
});

test('group commit: a batch of only unacknowledged writes commits at NORMAL; any acknowledged writer makes it FULL; FULL comes back', async () => {
  const db = openDatabase(freshDir());
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  const gc = new GroupCommit(db);
  const level = () => db.pragma('synchronous', { simple: true });
  // Both ride one batch (same turn of the event loop): each sees the level its batch commits at.
  assert.equal(await Promise.all([gc.runUnacknowledged(level), gc.runUnacknowledged(level)]), [1, 1]);
  assert.is(level(), 2, 'FULL again after the relaxed commit');
  assert.equal(await Promise.all([gc.runUnacknowledged(level), gc.run(level)]), [2, 2], 'an acknowledged writer in the batch: FULL for all');
  const failed = await Promise.allSettled([
    gc.runUnacknowledged(() => db.prepare('INSERT INTO t VALUES (1)').run()),
    gc.runUnacknowledged(() => {
      throw new Error('this writer fails alone');
    }),
  ]);
  assert.equal(failed.map((r) => r.status), ['fulfilled', 'rejected']);
  assert.is(level(), 2);
  assert.is(db.prepare('SELECT count(*) FROM t').pluck().get(), 1);
});

test('group commit: while another connection holds the write lock, the event loop keeps running and the batch commits after it', async () => {
  const dir = freshDir();
  const db = openDatabase(dir);
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  const other = openDatabase(dir); // the writer thread's connection, say
  const gc = new GroupCommit(db);
  other.exec('BEGIN IMMEDIATE');
  other.exec('INSERT INTO t VALUES (1)');
  let committed = false;
  const write = gc.run(() => db.prepare('INSERT INTO t VALUES (2)').run()).then(() => (committed = true));
  // SQLite's own busy handler would have slept inside the event loop until the lock came free.
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(performance.now() - started < 500, 'a timer ran while the batch waited for the lock');
  assert.is(committed, false, 'nothing commits while the other connection holds the lock');
  assert.is(db.pragma('busy_timeout', { simple: true }), 5000, 'the connection keeps its busy timeout for other writes');
  other.exec('COMMIT');
  await write;
  assert.is(db.prepare('SELECT count(*) FROM t').pluck().get(), 2);
  assert.is(gc.stats.commits, 1);
});

test('group commit, rerunnable work: a batch runs each job once; when one fails, the batch is undone and run again, and only that one fails', async () => {
  const db = openDatabase(freshDir());
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  const gc = new GroupCommit(db, { rerunnable: true });
  const runs = new Map<number, number>();
  const insert = (n: number) => () => {
    runs.set(n, (runs.get(n) ?? 0) + 1);
    db.prepare('INSERT INTO t VALUES (?)').run(n);
    return n;
  };
  assert.equal(await Promise.all([gc.run(insert(1)), gc.run(insert(2))]), [1, 2]);
  assert.equal([...runs.values()], [1, 1], 'no failure: every job ran once');
  runs.clear();
  const outcomes = await Promise.allSettled([gc.run(insert(3)), gc.run(insert(1)), gc.run(insert(4))]);
  assert.equal(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled'], 'the duplicate key fails alone');
  assert.equal(db.prepare('SELECT n FROM t ORDER BY n').pluck().all(), [1, 2, 3, 4]);
  assert.is(runs.get(3), 2, 'the batch ran again after the failure');
  assert.is(gc.stats.commits, 2);
});

test('group commit: when no transaction can begin, every waiting writer is rejected and nothing is thrown', async () => {
  const dir = freshDir();
  const db = openDatabase(dir);
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  db.pragma('busy_timeout = 100');
  const other = openDatabase(dir);
  other.exec('BEGIN IMMEDIATE');
  const gc = new GroupCommit(db);
  const writes = Promise.allSettled([gc.run(() => 1), gc.run(() => 2)]);
  gc.flush(); // shutdown's flush waits for the lock, here past the busy timeout
  const outcomes = await writes;
  assert.equal(outcomes.map((o) => o.status), ['rejected', 'rejected']);
  assert.is(((outcomes[0] as PromiseRejectedResult).reason as { code?: string }).code, 'SQLITE_BUSY');
  other.exec('ROLLBACK');
});

test.run();
