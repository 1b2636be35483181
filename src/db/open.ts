// Opens the one SQLite database of the box with the pragmas durability depends on, and proves they took.
// better-sqlite3 is built with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1, so every reopen of a WAL database comes
// back at NORMAL unless we set FULL again: a 250 must never precede an fsync (catalogue F1, DUR-04).
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export type Db = Database.Database;

export const databasePath = (dataDir: string) => join(dataDir, 'mailwright.db');

export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = new Database(databasePath(dataDir));
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  assertPragmas(db);
  cacheStatements(db);
  return db;
}

/**
 * Makes db.prepare() return one compiled statement per SQL text. Callers write SQL where it is used; without
 * this, compiling it again cost about 400 µs of every API send (npm run bench profile). A reused statement is
 * put back to plain row mode, since pluck(), raw() and expand() change the statement itself.
 */
function cacheStatements(db: Db): void {
  const compile = db.prepare.bind(db);
  const cache = new Map<string, Database.Statement>();
  db.prepare = ((source: string) => {
    let statement = cache.get(source);
    if (!statement) {
      statement = compile(source);
      cache.set(source, statement);
    } else if (statement.reader) {
      statement.raw(false);
      statement.pluck(false);
      statement.expand(false);
    }
    return statement;
  }) as Db['prepare'];
}

/** Throws unless the connection is WAL, synchronous FULL or EXTRA, foreign keys on, busy timeout set. */
export function assertPragmas(db: Db): void {
  const journal = String(db.pragma('journal_mode', { simple: true })).toLowerCase();
  const synchronous = Number(db.pragma('synchronous', { simple: true }));
  const foreignKeys = Number(db.pragma('foreign_keys', { simple: true }));
  const busyTimeout = Number(db.pragma('busy_timeout', { simple: true }));
  const wrong: string[] = [];
  if (journal !== 'wal') wrong.push(`journal_mode=${journal} (want wal)`);
  if (synchronous < 2) wrong.push(`synchronous=${synchronous} (want 2 FULL or 3 EXTRA)`);
  if (foreignKeys !== 1) wrong.push(`foreign_keys=${foreignKeys} (want 1)`);
  if (!(busyTimeout > 0)) wrong.push(`busy_timeout=${busyTimeout} (want > 0)`);
  if (wrong.length) throw new Error(`database ${db.name} is not safe to acknowledge mail from: ${wrong.join(', ')}`);
}
