// What `mailwright queue list` and `queue flush` do, on the database directly (they run beside `serve`,
// which notices flushed rows within a second: its queue polls). Queries (db/query.ts).
import { all, run, type Query } from '../db/query.ts';

export interface QueuedRow {
  id: number;
  emailId: string;
  recipient: string;
  state: string;
  attempts: number;
  nextAttemptAt: string | null;
  lastResponse: string | null;
  queuedAt: string;
}

export function* listQueue(limit = 1000): Query<QueuedRow[]> {
  const rows = yield* all<{ id: number; email_id: string; recipient: string; state: string; attempts: number; next_attempt_at: number | null; last_response: string | null; created_at: number }>(
    `SELECT id, email_id, recipient, state, attempts, next_attempt_at, last_response, created_at FROM deliveries
     WHERE state IN ('queued', 'sending', 'deferred') ORDER BY coalesce(next_attempt_at, 0), id LIMIT ?`,
    limit,
  );
  return rows.map((r) => ({
    id: r.id,
    emailId: r.email_id,
    recipient: r.recipient,
    state: r.state,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at === null ? null : new Date(r.next_attempt_at).toISOString(),
    lastResponse: r.last_response,
    queuedAt: new Date(r.created_at).toISOString(),
  }));
}

/** Makes every queued and deferred recipient due now (like `postqueue -f`); returns how many. */
export function flushQueue(now = Date.now()): Query<number> {
  return run("UPDATE deliveries SET next_attempt_at = ?, updated_at = ? WHERE state IN ('queued', 'deferred')", now, now);
}
