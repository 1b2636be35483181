// Gives the disk back the pages that deleted and rewritten mail leave free. SQLite keeps a freed page
// in the file for its next write. Under steady mail that is where it goes at once; but after a burst of sends
// (each send's bodies are stored as text and replaced packed when its copy is signed, which frees a page or so),
// a retention purge or a deleted inbox, the file would stay that much larger until new mail filled it. A
// database this release creates is in auto_vacuum=INCREMENTAL mode (open.ts): every few seconds the box counts
// its free pages, and when there are more than 1 MiB of them and 1 % of the file it moves the pages at the end
// of the file into them, a chunk at a time, each chunk a short transaction on the event loop's connection that
// answers nobody (about 2 ms for 256 pages), then checkpoints so the file is cut short. A database created
// before is in auto_vacuum=NONE, which SQLite can change only by rewriting the file: a backup is written in
// INCREMENTAL mode (backup.ts), so `mailwright backup` and `mailwright restore` convert one.
import type { Db } from './open.ts';
import type { GroupCommit } from './group-commit.ts';
import type { Log } from '../log.ts';
import { FullDiskNotice } from './full-disk.ts';

/** How often the free pages are counted: reading the count is reading page 1, which costs nothing. */
export const RECLAIM_EVERY_MS = 10_000;
/** Pages moved per transaction: about 2 ms each, so the writer thread and the queue never wait long for the lock. */
export const RECLAIM_CHUNK_PAGES = 256;
/** Fewer free pages than this (1 MiB of 4 KiB pages), or than 1 % of the file, are left for the next mail to fill. */
export const RECLAIM_MIN_PAGES = 256;

const INCREMENTAL = 2;

/** Whether the database gives free pages back (created by this release, or restored from a backup of it). */
export function givesPagesBack(db: Db): boolean {
  return db.pragma('auto_vacuum', { simple: true }) === INCREMENTAL;
}

/** Bytes of free pages inside the database file (metrics). */
export function freePageBytes(db: Db): number {
  const { free, pageSize } = freePages(db);
  return free * pageSize;
}

/** The database's free pages and whether they are worth giving back now. */
export function freePages(db: Db): { free: number; pageSize: number; worthReclaiming: boolean } {
  const free = db.pragma('freelist_count', { simple: true }) as number;
  const pages = db.pragma('page_count', { simple: true }) as number;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  return { free, pageSize, worthReclaiming: free > RECLAIM_MIN_PAGES && free * 100 > pages && givesPagesBack(db) };
}

/**
 * Gives back every free page, RECLAIM_CHUNK_PAGES at a time with the event loop free in between, if there are
 * enough to be worth it; returns how many. `stopped` is asked between chunks (the box is shutting down).
 */
export async function reclaimFreePages(db: Db, commit: GroupCommit, stopped: () => boolean = () => false): Promise<number> {
  if (!freePages(db).worthReclaiming) return 0;
  let reclaimed = 0;
  for (;;) {
    if (stopped()) break;
    const moved = await commit.runUnacknowledged(() => {
      const before = db.pragma('freelist_count', { simple: true }) as number;
      db.pragma(`incremental_vacuum(${RECLAIM_CHUNK_PAGES})`);
      return before - (db.pragma('freelist_count', { simple: true }) as number);
    });
    reclaimed += moved;
    if (moved < RECLAIM_CHUNK_PAGES) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  // The file is cut to its new end when a checkpoint has copied every frame of the WAL into it.
  if (reclaimed > 0 && !stopped()) db.pragma('wal_checkpoint(PASSIVE)');
  return reclaimed;
}

/** Counts the free pages every RECLAIM_EVERY_MS and gives them back when worth it, logging each time. Returns the stop function. */
export function startReclaiming(db: Db, commit: GroupCommit, log: Log): () => Promise<void> {
  let stopped = false;
  let running: Promise<void> | null = null;
  const fullDisk = new FullDiskNotice(log, 'giving free pages back to the disk');
  const timer = setInterval(() => {
    if (running) return;
    running = reclaimFreePages(db, commit, () => stopped)
      .then(
        (pages) => {
          fullDisk.succeeded();
          if (pages > 0) log.info('free pages given back to the disk', { pages, bytes: pages * (db.pragma('page_size', { simple: true }) as number) });
        },
        (err: unknown) => {
          if (!fullDisk.failed(err)) log.warn('could not give free pages back to the disk; the next look tries again', { err });
        },
      )
      .finally(() => {
        running = null;
      });
  }, RECLAIM_EVERY_MS);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
