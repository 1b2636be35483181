// Claims on the queue's deliveries rows: taking due recipients with one atomic UPDATE (so concurrent workers,
// in this process or another on the same data directory, never take the same one), putting back claims whose
// holder hung or died, and when work next comes due. Queries (db/query.ts) on deliveries only; no timers, no delivery.
import { all, column, run, value, type Query } from '../db/query.ts';

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
export function claimDue(now: number, limit: number): Query<Claimed[]> {
  return all<Claimed>(
    `UPDATE deliveries SET state = 'sending', claimed_at = ?, claimed_by = ?, updated_at = ?
     WHERE id IN (SELECT id FROM deliveries WHERE state IN ('queued', 'deferred') AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?)
     RETURNING id, email_id, workspace_id, recipient, domain, attempts, first_deferred_at, created_at`,
    now, process.pid, now, now, limit,
  );
}

/** The processes holding claims now (null: a claim without one). */
export const claimants = () => column<number | null>("SELECT DISTINCT claimed_by FROM deliveries WHERE state = 'sending'");

/**
 * At start-up: of `claimants`, the processes no longer running (a crash, kill -9; a pid that is ours now was
 * another process's then), whose claims releaseOrphans puts back. Asked of the system, so outside any query.
 */
export const orphaned = (pids: Array<number | null>) => pids.filter((p) => p === null || p === process.pid || !alive(p));

/** Puts back what the processes `pids` left claimed; returns how many recipients are due again. */
export function* releaseOrphans(pids: Array<number | null>, now: number): Query<number> {
  let back = 0;
  for (const pid of pids) back += yield* run(`UPDATE deliveries SET ${PUT_BACK} WHERE state = 'sending' AND claimed_by IS NOT DISTINCT FROM ?`, now, now, pid);
  return back;
}

/** Claims older than the lease: their worker hung or died without anyone noticing. */
export function* releaseAbandoned(now: number, leaseMs: number): Query<void> {
  yield* run(`UPDATE deliveries SET ${PUT_BACK} WHERE state = 'sending' AND claimed_at < ?`, now, now, now - leaseMs);
}

/** When the earliest queued or deferred recipient is due; null when none waits. */
export function* nextDueAt(): Query<number | null> {
  return (yield* value<number | null>("SELECT min(next_attempt_at) FROM deliveries WHERE state IN ('queued', 'deferred')")) ?? null;
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
