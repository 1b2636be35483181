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
  return db;
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
