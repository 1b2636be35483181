// What `mailwright restore` refuses before it changes anything in the data directory: anything but a backup file
// (a folder, a bare SQLite database), and a backup made by hand from a live data directory: one that holds the
// database's -wal, -shm or -journal, serve's markers or restore's own leftovers, or whose database is in WAL mode.
// Restoring one of those stopped half-way, or silently lost the commits still in a -wal file it left behind.
import { existsSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { BackupError, DB_ENTRY, neverCarried, readManifest } from './backup.ts';

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const nothingChanged = 'Nothing was changed.';
// What to do instead, for everything refused here: `mailwright backup` reads a database together with its -wal.
const remake =
  "Make a backup with 'mailwright backup' instead, on the data directory the files came from (serve may run) or on an empty folder " +
  'holding them (mailwright.db with its mailwright.db-wal and mailwright.db-shm, and the rest): ' +
  `MAILWRIGHT_DATA_DIR=<folder> mailwright backup FILE.backup; then restore FILE.backup. ${nothingChanged}`;

/** Throws a BackupError naming the file and what to do when `file` is not a backup restore may unpack. */
export async function refuseForeign(file: string): Promise<void> {
  if (statSync(file).isDirectory()) {
    throw new BackupError(`${file} is a folder; restore takes one file made by 'mailwright backup'. ${remake}`);
  }
  if ((await readAt(file, 0, SQLITE_MAGIC.length)).equals(SQLITE_MAGIC)) {
    const beside = ['-wal', '-shm', '-journal'].map((s) => `${file}${s}`).filter((f) => existsSync(f));
    throw new BackupError(
      `${file} is an SQLite database${beside.length ? ` (with ${beside.join(', ')} beside it)` : ''}, not a Mailwright backup; ` +
        `restore takes one file made by 'mailwright backup'. ${remake}`,
    );
  }
  const { manifest, dataStart } = await readManifest(file);
  for (const entry of manifest.entries.slice(1)) {
    const what = neverCarried(entry.path);
    if (what) {
      throw new BackupError(`${file} holds ${entry.path}, ${what}, which no backup made by 'mailwright backup' holds: it was put together by hand. ${remake}`);
    }
  }
  // Bytes 18 and 19 of the header are 2 in WAL mode (sqlite.org/fileformat2.html, 1.3). A snapshot made by
  // `mailwright backup` is in rollback mode; one in WAL mode is a copy of a live file, whose latest commits may
  // sit in a -wal file the backup does not hold.
  const db = manifest.entries[0];
  if (db.type === 'file' && db.size >= 100) {
    const header = await readAt(file, dataStart, 20);
    if (header.subarray(0, SQLITE_MAGIC.length).equals(SQLITE_MAGIC) && header[18] === 2 && header[19] === 2) {
      throw new BackupError(
        `the ${DB_ENTRY} in ${file} is in WAL mode: a copy of a live database file, not a snapshot made by 'mailwright backup', ` +
          `and commits still in its -wal file would be missing. ${remake}`,
      );
    }
  }
}

async function readAt(file: string, position: number, length: number): Promise<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await fh.read(buffer, 0, length, position);
    return buffer.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}
