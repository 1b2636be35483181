// Opens the one SQLite database of the box with the pragmas durability depends on, and proves they took.
// better-sqlite3 is built with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1, so every reopen of a WAL database comes
// back at NORMAL unless we set FULL again: a 250 must never precede an fsync (catalogue F1, DUR-04).
// Before that, the data directory is made private, or refused when others can write it (SEC-01).
import Database from 'better-sqlite3';
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export type Db = Database.Database;

export const databasePath = (dataDir: string) => join(dataDir, 'mailwright.db');

export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = databasePath(dataDir);
  // Created 0600 whatever the umask: SQLite gives the -wal and -shm files the mode of the database file.
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const db = new Database(file);
  try {
    // The first that reads the file: one whose header is damaged fails here with SQLITE_NOTADB.
    db.pragma('busy_timeout = 5000');
    // Only a database without pages can take it; it then gives free pages back to the disk (free-pages.ts).
    if (db.pragma('page_count', { simple: true }) === 0) db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    assertPragmas(db);
  } catch (err) {
    db.close();
    throw err;
  }
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

/** The data directory (or a folder in it) can be written by others: files may have been planted, so it is not used. */
export class DataDirRefused extends Error {
  override name = 'DataDirRefused';
}

/**
 * Makes the data directory private before anything opens it: the directory and its folders 0700, its files
 * 0600 (owner bits kept), symlinks left alone and not followed. A directory others can write is refused,
 * not fixed, since someone may already have planted files in it (as ssh refuses loose key modes).
 */
export function secureDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // The data directory itself may be a symlink the operator made (to another disk): that one is followed.
  privatise(dataDir, statSync(dataDir).mode, true, 'the data directory');
}

function privatise(path: string, mode: number, directory: boolean, what = 'the folder'): void {
  if (directory && (mode & 0o022) !== 0) {
    throw new DataDirRefused(
      `${what} ${path} can be written by ${mode & 0o002 ? 'every user' : 'its group'} (mode ${octal(mode)}): refusing to use it, ` +
        `since anyone could have planted files in it. Check what it holds, then make it private (chmod 700 ${path}) and start again.`,
    );
  }
  const wanted = directory ? 0o700 : mode & 0o700;
  if ((mode & 0o7777) !== wanted) {
    try {
      chmodSync(path, wanted);
    } catch (err) {
      throw new DataDirRefused(`cannot make ${path} private (chmod ${octal(wanted)}: ${(err as NodeJS.ErrnoException).code}): the data directory must belong to the user mailwright runs as.`);
    }
  }
  if (!directory) return;
  for (const name of readdirSync(path)) {
    const child = join(path, name);
    let stat;
    try {
      stat = lstatSync(child);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // gone meanwhile (a -wal at close)
      throw err;
    }
    if (stat.isDirectory()) privatise(child, stat.mode, true);
    else if (stat.isFile()) privatise(child, stat.mode, false);
  }
}

const octal = (mode: number) => `0${(mode & 0o7777).toString(8)}`;
