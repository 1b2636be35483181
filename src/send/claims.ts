// Claims on the queue's deliveries rows: taking due recipients with one atomic UPDATE (so concurrent workers,
// in this process or another node of the box, never take the same one: writes take turns, db/store.ts),
// putting back claims whose holder hung or stopped (cluster/nodes.ts), and when work next comes due. Queries (db/query.ts) on deliveries only; no timers, no delivery.
import { all, run, value, type Query } from '../db/query.ts';

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
  /** Its email's `counted` (0: a test send or the box's own notice, not counted in daily_stats), read with the claim. */
  counted: number | null;
}

const PUT_BACK = "state = CASE WHEN attempts > 0 THEN 'deferred' ELSE 'queued' END, next_attempt_at = ?, claimed_at = NULL, claimed_by = NULL, updated_at = ?";

/** Up to `limit` due recipients, oldest due first, now claimed by the node `node` (cluster/nodes.ts). */
export function claimDue(now: number, limit: number, node: number): Query<Claimed[]> {
  return all<Claimed>(
    `UPDATE deliveries SET state = 'sending', claimed_at = ?, claimed_by = ?, updated_at = ?
     WHERE id IN (SELECT id FROM deliveries WHERE state IN ('queued', 'deferred') AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?)
     RETURNING id, email_id, workspace_id, recipient, domain, attempts, first_deferred_at, created_at,
       (SELECT counted FROM emails WHERE emails.id = deliveries.email_id) AS counted`,
    now, node, now, now, limit,
  );
}

/** Puts back what no node on record holds (it stopped, and was forgotten); returns how many recipients are due again. */
export function releaseOrphans(now: number): Query<number> {
  return run(`UPDATE deliveries SET ${PUT_BACK} WHERE state = 'sending' AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = deliveries.claimed_by)`, now, now);
}

/** Puts back recipients the node `node` claimed but could not attempt or record (its store failed mid-batch). */
export function* releaseClaims(ids: readonly number[], node: number, now: number): Query<number> {
  let back = 0;
  for (const id of ids) back += yield* run(`UPDATE deliveries SET ${PUT_BACK} WHERE id = ? AND state = 'sending' AND claimed_by = ?`, now, now, id, node);
  return back;
}

/**
 * Puts back what the store says the node `node` holds beyond `held`, the recipients it is attempting: a claim
 * whose commit went through while its answer was lost (the connection to PostgreSQL cut) took rows the node
 * never heard of, which would otherwise wait for the lease.
 */
export function releaseUnheld(node: number, held: readonly number[], now: number): Query<number> {
  return run(`UPDATE deliveries SET ${PUT_BACK} WHERE state = 'sending' AND claimed_by = ? AND id NOT IN (SELECT CAST(value AS INTEGER) FROM json_each(?))`, now, now, node, JSON.stringify(held));
}

/** Claims older than the lease: their worker hung or died without anyone noticing. */
export function* releaseAbandoned(now: number, leaseMs: number): Query<void> {
  yield* run(`UPDATE deliveries SET ${PUT_BACK} WHERE state = 'sending' AND claimed_at < ?`, now, now, now - leaseMs);
}

/** When the earliest queued or deferred recipient is due; null when none waits. */
export function* nextDueAt(): Query<number | null> {
  return (yield* value<number | null>("SELECT min(next_attempt_at) FROM deliveries WHERE state IN ('queued', 'deferred')")) ?? null;
}
