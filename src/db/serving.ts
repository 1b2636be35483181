// Whether `serve` runs on a data directory, which `restore` must know before it replaces anything. serve makes
// <data_dir>/run/serve-<pid>-<start time>-<random>.pid at start and removes it at stop. A marker file rather than
// a lock: two serve processes may share a data directory (the queue's claims keep them apart), so no lock may be
// exclusive, and SQLite's locks cannot tell an idle serve from no serve. A marker left by kill -9 is recognised
// as stale: its process is gone, or the pid now belongs to a process started at another time.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Log } from '../log.ts';

/** Under the data directory; a backup leaves it out. */
export const RUN_DIR = 'run';

const RETRY_MS = 30_000;
// The name says everything, so the marker is an empty file: one fits on a full disk (it needs an inode and a
// directory entry, no data block), where writing its contents failed with ENOSPC and stopped the start.
const NAME = /^serve-(\d+)-(\d+)-[0-9a-f]{8}\.pid$/;
// What releases before this one wrote: serve-<pid>-<random>.pid holding {"pid", "started"}.
const OLD_NAME = /^serve-\d+-[0-9a-f]{8}\.pid$/;

/**
 * Records that this process serves `dataDir`; returns what removes the record. A marker that cannot be made
 * (a read-only or exhausted filesystem) does not stop serve: the reason is logged once, with the path, and it
 * is tried again every 30 seconds until it is made.
 */
export function markServing(dataDir: string, log: Log, retryMs = RETRY_MS): () => void {
  const dir = join(dataDir, RUN_DIR);
  const marker = join(dir, `serve-${process.pid}-${processStart(process.pid) ?? 0}-${randomBytes(4).toString('hex')}.pid`);
  let made = false;
  let timer: NodeJS.Timeout | null = null;
  const make = () => {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      for (const name of readdirSync(dir)) if (readMarker(dir, name) === null) rmSync(join(dir, name), { force: true });
      closeSync(openSync(marker, 'w', 0o600));
    } catch (err) {
      if (!timer) {
        log.warn(`could not make the serving marker; serving anyway, but 'mailwright restore' cannot tell that serve runs here until it is made (tried again every ${retryMs / 1000} s)`, { path: marker, reason: (err as Error).message });
        timer = setInterval(make, retryMs);
        timer.unref();
      }
      return;
    }
    made = true;
    if (timer) {
      clearInterval(timer);
      timer = null;
      log.info('made the serving marker', { path: marker });
    }
  };
  make();
  return () => {
    if (timer) clearInterval(timer);
    if (made) rmSync(marker, { force: true });
  };
}

/** The pids of the serve processes running on `dataDir`. */
export function servingProcesses(dataDir: string): number[] {
  const dir = join(dataDir, RUN_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => readMarker(dir, name))
    .filter((pid): pid is number => pid !== null);
}

// The pid of a live serve a marker names, or null for a stale or unreadable marker.
function readMarker(dir: string, name: string): number | null {
  let pid: unknown;
  let started: unknown;
  const m = NAME.exec(name);
  if (m) {
    pid = Number(m[1]);
    started = m[2] === '0' ? null : m[2];
  } else if (OLD_NAME.test(name)) {
    try {
      ({ pid, started } = JSON.parse(readFileSync(join(dir, name), 'utf8')));
    } catch {
      return null;
    }
  } else return null;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0 || !processRuns(pid)) return null;
  const now = processStart(pid);
  return started && now && started !== now ? null : pid;
}

/** Whether process `pid` exists on this host: signal 0 checks without touching it (EPERM: it is another user's). */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), where Linux tells it.
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
