// Whether `serve` runs on a data directory, which `restore` must know before it replaces anything. serve writes
// <data_dir>/run/serve-<pid>-<random>.pid at start and removes it at stop. A marker file rather than a lock:
// two serve processes may share a data directory (the queue's claims keep them apart), so no lock may be
// exclusive, and SQLite's locks cannot tell an idle serve from no serve. A marker left by kill -9 is
// recognised as stale: its process is gone, or the pid now belongs to a process started at another time.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Under the data directory; a backup leaves it out. */
export const RUN_DIR = 'run';

/** Records that this process serves `dataDir`; returns what removes the record. */
export function markServing(dataDir: string): () => void {
  const dir = join(dataDir, RUN_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const name of readdirSync(dir)) if (readMarker(join(dir, name)) === null) rmSync(join(dir, name), { force: true });
  const marker = join(dir, `serve-${process.pid}-${randomBytes(4).toString('hex')}.pid`);
  writeFileSync(marker, `${JSON.stringify({ pid: process.pid, started: processStart(process.pid) })}\n`, { mode: 0o600 });
  return () => rmSync(marker, { force: true });
}

/** The pids of the serve processes running on `dataDir`. */
export function servingProcesses(dataDir: string): number[] {
  const dir = join(dataDir, RUN_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => readMarker(join(dir, name)))
    .filter((pid): pid is number => pid !== null);
}

// The pid of a live serve a marker names, or null for a stale or unreadable marker.
function readMarker(path: string): number | null {
  let marker: { pid?: unknown; started?: unknown };
  try {
    marker = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
  const pid = marker.pid;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return null;
  }
  const started = processStart(pid);
  return marker.started && started && marker.started !== started ? null : pid;
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
