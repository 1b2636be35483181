// Claims on the queue's deliveries rows: taking due recipients with one atomic UPDATE (so concurrent workers,
// in this process or another on the same data directory, never take the same one), putting back claims whose
// holder hung or died, and when work next comes due. Synchronous SQL on deliveries only; no timers, no delivery.
import type { Db } from '../db/open.ts';

/** A recipient claimed for one attempt. */
export interface Claimed {
  id: number;
  email_id: string;
  workspace_id: string;
  recipient: string;
  domain: string;
  attempts: number;
  first_deferred_at: number | null;
  created_at: number;
}

const PUT_BACK = "state = CASE WHEN attempts > 0 THEN 'deferred' ELSE 'queued' END, next_attempt_at = ?, claimed_at = NULL, claimed_by = NULL, updated_at = ?";

/** Up to `limit` due recipients, oldest due first, now claimed by this process. */
export function claimDue(db: Db, now: number, limit: number): Claimed[] {
  return db
    .prepare(
      `UPDATE deliveries SET state = 'sending', claimed_at = ?, claimed_by = ?, updated_at = ?
       WHERE id IN (SELECT id FROM deliveries WHERE state IN ('queued', 'deferred') AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?)
       RETURNING id, email_id, workspace_id, recipient, domain, attempts, first_deferred_at, created_at`,
    )
    .all(now, process.pid, now, now, limit) as Claimed[];
}

/**
 * At start-up: puts back what processes no longer running left claimed (a crash, kill -9; a pid that is ours
 * now was another process's then); returns how many recipients are due again.
 */
export function releaseOrphans(db: Db, now: number): number {
  const claimants = db.prepare("SELECT DISTINCT claimed_by FROM deliveries WHERE state = 'sending'").pluck().all() as Array<number | null>;
  let back = 0;
  for (const pid of claimants.filter((p) => p === null || p === process.pid || !alive(p))) {
    back += db.prepare(`UPDATE deliveries SET ${PUT_BACK} WHERE state = 'sending' AND claimed_by IS ?`).run(now, now, pid).changes;
  }
  return back;
}

/** Claims older than the lease: their worker hung or died without anyone noticing. */
export function releaseAbandoned(db: Db, now: number, leaseMs: number): void {
  db.prepare(`UPDATE deliveries SET ${PUT_BACK} WHERE state = 'sending' AND claimed_at < ?`).run(now, now, now - leaseMs);
}

/** When the earliest queued or deferred recipient is due; null when none waits. */
export function nextDueAt(db: Db): number | null {
  return db.prepare("SELECT min(next_attempt_at) FROM deliveries WHERE state IN ('queued', 'deferred')").pluck().get() as number | null;
}

// Signal 0 checks that a process exists without touching it (all processes on one data directory share a host).
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
