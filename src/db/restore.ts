// Restoring a backup (`mailwright restore`, backup.ts's format) into a data directory, with serve stopped: every
// entry unpacked and checked in a staging folder first, then put in place of what was there, which is kept aside.
import { existsSync, lstatSync } from 'node:fs';
import { mkdir, rename, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ASIDE, BackupError, DB_ENTRY, LIVE_DB, readBackup, STAGING, stamp, syncDir, type Manifest } from './backup.ts';
import { servingProcesses } from './serving.ts';
import { refuseForeign } from './restore-refusals.ts';

/**
 * Puts a backup back into `dataDir` (made if missing, as on a new machine). Refuses while serve runs there, and
 * refuses a file that is not a backup made by `mailwright backup` (restore-refusals.ts), before it changes anything.
 * Everything is unpacked and checked (checksums, then PRAGMA integrity_check) in a staging folder inside the
 * data directory first, so a bad backup changes nothing; then each top-level entry the backup holds replaces
 * the one in place, which is kept as `<name>.before-restore-<time>`. Entries the backup does not hold stay.
 */
export async function restoreBackup(file: string, dataDirIn: string, now = new Date()): Promise<{ restored: string[]; movedAside: string[]; manifest: Manifest }> {
  const dataDir = resolve(dataDirIn);
  const running = servingProcesses(dataDir);
  if (running.length) {
    throw new BackupError(
      `mailwright serve is running on ${dataDir} (pid ${running.join(', ')}): stop it first (systemctl stop mailwright), then run restore again. ` +
        `Nothing was changed.`,
    );
  }
  if (!existsSync(file)) throw new BackupError(`${file} does not exist`);
  await refuseForeign(file); // before anything in the data directory is made or moved
  const created = !existsSync(dataDir);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const time = stamp(now, true);
  const staging = join(dataDir, `${STAGING}${time}-${process.pid}`);
  let manifest: Manifest;
  try {
    await mkdir(staging, { mode: 0o700 });
    manifest = await readBackup(file, staging);
    prepareDatabase(join(staging, DB_ENTRY), file, now.getTime());
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    if (created) await rmdir(dataDir).catch(() => {});
    throw err;
  }

  // The database last: if anything before it fails, the box is still on its old database.
  const names = [...new Set(manifest.entries.map((e) => e.path.split('/')[0]))].sort((a, b) => Number(a === DB_ENTRY) - Number(b === DB_ENTRY));
  // The old WAL goes aside with its database: left in place, SQLite would replay it into the restored one.
  const aside = names.flatMap((name) => (name === DB_ENTRY ? [...LIVE_DB] : [name])).filter((old) => exists(join(dataDir, old)));
  const taken = aside.find((old) => exists(join(dataDir, `${old}${ASIDE}${time}`)));
  if (taken) {
    await rm(staging, { recursive: true, force: true });
    throw new BackupError(`${join(dataDir, `${taken}${ASIDE}${time}`)} exists already; run restore again. Nothing was changed.`);
  }
  const restored: string[] = [];
  const movedAside: string[] = [];
  try {
    for (const name of names) {
      for (const old of aside.filter((a) => a === name || (name === DB_ENTRY && LIVE_DB.has(a)))) {
        await rename(join(dataDir, old), join(dataDir, `${old}${ASIDE}${time}`));
        movedAside.push(`${old}${ASIDE}${time}`);
      }
      await rename(join(staging, name), join(dataDir, name));
      restored.push(name);
    }
    await syncDir(dataDir);
  } catch (err) {
    throw new BackupError(
      `restore stopped half-way (${(err as Error).message}): restored ${restored.join(', ') || 'nothing'}; the files it replaced are kept as ` +
        `*${ASIDE}${time} in ${dataDir}, and the rest of the backup is in ${staging}`,
    );
  }
  await rm(staging, { recursive: true, force: true });
  return { restored, movedAside, manifest };
}

const exists = (path: string) => {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
};

/**
 * Checks the unpacked database and readies it for the box that will open it: claims on the queue were held by
 * processes of the machine the backup came from, none of which runs here, so they are put back (a pid alive
 * here would otherwise keep its recipients for the 30-minute lease); left in rollback-journal mode so that it
 * is one self-contained file until serve opens it (in WAL).
 */
function prepareDatabase(path: string, file: string, now: number): void {
  let db: Database.Database;
  try {
    db = new Database(path, { fileMustExist: true });
  } catch (err) {
    throw new BackupError(`the database in ${file} cannot be opened (${(err as Error).message}); nothing was restored`);
  }
  try {
    let problems: string[];
    try {
      problems = (db.pragma('integrity_check(20)') as Array<{ integrity_check: string }>).map((r) => String(r.integrity_check));
    } catch (err) {
      problems = [(err as Error).message];
    }
    if (problems.length !== 1 || problems[0] !== 'ok') throw new BackupError(`the database in ${file} fails integrity_check (${problems.join('; ')}); nothing was restored`);
    const hasQueue = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'deliveries'").get();
    if (hasQueue) {
      db.prepare("UPDATE deliveries SET state = CASE WHEN attempts > 0 THEN 'deferred' ELSE 'queued' END, next_attempt_at = ?, claimed_at = NULL, claimed_by = NULL, updated_at = ? WHERE state = 'sending'").run(now, now);
    }
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
}
