// What a sysadmin may hand `mailwright restore` besides a backup it made: a backup put together by hand from a
// live data directory (with the database's -wal and -shm, serve's markers, restore's leftovers, or the database
// file alone, still in WAL mode), the database file itself, or a copied data directory. Each is refused with a
// message naming the file before the data directory changes at all (its files, their bytes and modes, and the
// folder itself, whose time would change if a staging folder came and went); the way the message names works.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli, sqliteOnly, startTestApp, tempDir, TEST_STORE, testEnv } from '../testkit/app.ts';
import { createWorkspace } from '../account/workspaces.ts';
import { BackupError } from './backup.ts';
import { restoreBackup } from './restore.ts';
import { runOn } from './sqlite-query.ts';

const cleanup: string[] = [];
test.after(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});
const dirForTest = (label?: string) => {
  const dir = tempDir(label);
  cleanup.push(dir);
  return dir;
};

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Every file's bytes and mode, every folder, and the data directory's own time: all a restore could change. */
function fingerprint(dir: string): string {
  const entries = readdirSync(dir, { recursive: true })
    .map(String)
    .sort()
    .map((name) => {
      const stat = statSync(join(dir, name));
      return `${name} ${(stat.mode & 0o7777).toString(8)} ${stat.isDirectory() ? 'dir' : sha(readFileSync(join(dir, name)))}`;
    });
  return [`. ${statSync(dir).mtimeMs}`, ...entries].join('\n');
}

/** A backup in the documented format (docs/operations.md, Backup and restore), as a script of the sysadmin's would write it. */
function pack(file: string, entries: Array<{ path: string; bytes: Buffer }>): string {
  const manifest = Buffer.from(
    JSON.stringify({ format: 'mailwright-backup', version: 1, created: new Date().toISOString(), hostname: 'old-box', entries: entries.map((e) => ({ path: e.path, type: 'file', size: e.bytes.length, sha256: sha(e.bytes) })) }),
  );
  const body = Buffer.concat([Buffer.from(`MAILWRIGHT-BACKUP 1 ${manifest.length}\n`), manifest, ...entries.map((e) => e.bytes)]);
  writeFileSync(file, Buffer.concat([body, Buffer.from(`SHA256 ${sha(body)}\n`)]));
  return file;
}

// uvu's assert has no rejects().
async function refused(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
  } catch (err) {
    assert.instance(err, BackupError);
    return (err as Error).message;
  }
  assert.unreachable('should have been refused');
  return '';
}

// A hot copy (cp -a while serve runs) of a box whose latest commit is only in its WAL; and the box to restore into.
let copied = '';
let target = '';
let env: Record<string, string> = {};
let files: Record<'db' | 'wal' | 'shm' | 'key', Buffer>;

test.before(async () => {
  if (TEST_STORE !== 'sqlite') return; // every test here is of SQLite's file
  const source = await startTestApp();
  try {
    const { db, clock } = source.app;
    runOn(db, createWorkspace(clock, 'checkpointed'));
    db.pragma('wal_checkpoint(TRUNCATE)');
    runOn(db, createWorkspace(clock, 'only-in-wal'));
    copied = dirForTest('mailwright-copy-');
    cpSync(source.dataDir, copied, { recursive: true });
  } finally {
    await source.stop();
  }
  const read = (name: string) => readFileSync(join(copied, name));
  files = { db: read('mailwright.db'), wal: read('mailwright.db-wal'), shm: read('mailwright.db-shm'), key: read('tls/self-signed.key') };
  assert.equal([files.db[18], files.db[19]], [2, 2], 'the copied database is in WAL mode');
  // Without its WAL the copy lacks the last commit: what restoring it alone would silently lose.
  const alone = join(dirForTest(), 'mailwright.db');
  copyFileSync(join(copied, 'mailwright.db'), alone);
  const db = new Database(alone, { readonly: true });
  try {
    assert.equal(db.prepare('SELECT name FROM workspaces ORDER BY name').pluck().all(), ['checkpointed', 'default']);
  } finally {
    db.close();
  }

  const t = await startTestApp();
  await t.running.stop(); // the data directory stays, as a box's does
  target = t.dataDir;
  cleanup.push(target);
  env = testEnv(target);
});

sqliteOnly(test)('a hand-made backup holding the live -wal and -shm is refused, naming the file, and the data directory is unchanged', async () => {
  const before = fingerprint(target);
  const file = pack(join(dirForTest(), 'by-hand.backup'), [
    { path: 'mailwright.db', bytes: files.db },
    { path: 'mailwright.db-wal', bytes: files.wal },
    { path: 'mailwright.db-shm', bytes: files.shm },
    { path: 'tls/self-signed.key', bytes: files.key },
  ]);
  const r = await runCli(['restore', file], env);
  assert.is(r.code, 1);
  assert.match(r.stderr, /by-hand\.backup holds mailwright\.db-wal, a file of a live database beside the database .* Nothing was changed\.\n$/);
  assert.match(r.stderr, /MAILWRIGHT_DATA_DIR=<folder> mailwright backup FILE\.backup/);
  assert.is(fingerprint(target), before);
});

sqliteOnly(test)('a hand-made backup holding a -shm, a -journal, serve markers or restore leftovers is refused; the data directory is unchanged', async () => {
  const before = fingerprint(target);
  const dir = dirForTest();
  for (const [path, why] of [
    ['mailwright.db-shm', /a file of a live database/],
    ['mailwright.db-journal', /a file of a live database/],
    ['run/serve-1-1-00000000.pid', /serve's markers/],
    ['.restore-20250101T000000000Z-1/mailwright.db', /staging folder/],
    ['tls/self-signed.key.before-restore-20250101T000000000Z', /moved aside/],
    ['tls/.self-signed.key.0011aabbccdd.tmp-backup', /temporary file/],
  ] as const) {
    const file = pack(join(dir, 'odd.backup'), [{ path: 'mailwright.db', bytes: files.db }, { path, bytes: Buffer.from('x') }]);
    const message = await refused(() => restoreBackup(file, target));
    assert.ok(message.includes(`odd.backup holds ${path}, `), message);
    assert.match(message, why);
    assert.is(fingerprint(target), before, path);
  }
});

sqliteOnly(test)('a hand-made backup of the live database file alone (WAL mode, its last commits in a -wal it lacks) is refused', async () => {
  const before = fingerprint(target);
  const file = pack(join(dirForTest(), 'db-only.backup'), [{ path: 'mailwright.db', bytes: files.db }, { path: 'tls/self-signed.key', bytes: files.key }]);
  const r = await runCli(['restore', file], env);
  assert.is(r.code, 1);
  assert.match(r.stderr, /the mailwright\.db in \S+db-only\.backup is in WAL mode: a copy of a live database file, not a snapshot made by 'mailwright backup', and commits still in its -wal file would be missing/);
  assert.is(fingerprint(target), before);
});

sqliteOnly(test)('the database file itself, or a copied data directory, is refused; the backup the message asks for restores every commit', async () => {
  const before = fingerprint(target);
  const asFile = await runCli(['restore', join(copied, 'mailwright.db')], env);
  assert.is(asFile.code, 1);
  assert.ok(asFile.stderr.includes(`${join(copied, 'mailwright.db')} is an SQLite database (with ${join(copied, 'mailwright.db-wal')}, ${join(copied, 'mailwright.db-shm')} beside it), not a Mailwright backup`), asFile.stderr);
  const asFolder = await runCli(['restore', copied], env);
  assert.is(asFolder.code, 1);
  assert.match(asFolder.stderr, /is a folder; restore takes one file made by 'mailwright backup'/);
  const fresh = join(dirForTest(), 'new-box');
  assert.match(await refused(() => restoreBackup(copied, fresh)), /is a folder/);
  assert.equal(readdirSync(join(fresh, '..')), [], 'no data directory made for a refused restore');
  assert.is(fingerprint(target), before);

  // What the message says: a backup of a folder holding the files, made by `mailwright backup`.
  const folder = join(dirForTest(), 'files');
  mkdirSync(folder, { mode: 0o700 });
  for (const name of ['mailwright.db', 'mailwright.db-wal', 'mailwright.db-shm']) copyFileSync(join(copied, name), join(folder, name));
  const made = join(dirForTest(), 'made.backup');
  const backup = await runCli(['backup', made], { ...env, MAILWRIGHT_DATA_DIR: folder });
  assert.is(backup.code, 0, backup.stderr);
  const restored = await runCli(['restore', made], env);
  assert.is(restored.code, 0, restored.stderr);
  const db = new Database(join(target, 'mailwright.db'), { readonly: true });
  try {
    assert.equal(db.prepare('SELECT name FROM workspaces ORDER BY name').pluck().all(), ['checkpointed', 'default', 'only-in-wal'], 'the commit that was only in the WAL is there');
  } finally {
    db.close();
  }
});

test.run();
