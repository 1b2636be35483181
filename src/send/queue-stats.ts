// How deep the outbound queue is, for the metrics scrape, the dashboard's Overview (GET /queue) and `doctor`:
// counts by state and the recipient deferred longest, box-wide or for one workspace, read through the queue's
// partial indexes (deliveries_due holds the queued and deferred rows, deliveries_claimed the ones being sent),
// so a look costs the size of the queue, never of the delivery history. Read-only queries (db/query.ts).
import { all, get, value, type Query } from '../db/query.ts';
import type { QueueDepth } from '../metrics/metrics.ts';

export interface QueueCounts {
  queued: number;
  sending: number;
  deferred: number;
  /** When the oldest recipient still waiting (queued or deferred) was queued; null when none waits. */
  oldestWaitingSince: number | null;
}

const scope = (workspaceId: string | null) => (workspaceId === null ? { where: '', args: [] as string[] } : { where: 'AND workspace_id = ?', args: [workspaceId] });

export function* queueCounts(workspaceId: string | null = null): Query<QueueCounts> {
  const { where, args } = scope(workspaceId);
  const counts: QueueCounts = { queued: 0, sending: 0, deferred: 0, oldestWaitingSince: null };
  const waiting = yield* all<{ state: 'queued' | 'deferred'; n: number; oldest: number }>(
    `SELECT state, count(*) AS n, min(created_at) AS oldest FROM deliveries WHERE state IN ('queued', 'deferred') ${where} GROUP BY state`,
    ...args,
  );
  for (const w of waiting) {
    counts[w.state] = w.n;
    counts.oldestWaitingSince = Math.min(counts.oldestWaitingSince ?? w.oldest, w.oldest);
  }
  counts.sending = (yield* value<number>(`SELECT count(*) FROM deliveries WHERE state = 'sending' ${where}`, ...args))!;
  return counts;
}

export interface DeferredRecipient {
  email_id: string;
  recipient: string;
  created_at: number;
  first_deferred_at: number | null;
  last_response: string | null;
}

/** The recipient waiting longest after a temporary failure, with its last answer. */
export function oldestDeferred(workspaceId: string | null = null): Query<DeferredRecipient | undefined> {
  const { where, args } = scope(workspaceId);
  return get<DeferredRecipient>(
    `SELECT email_id, recipient, created_at, first_deferred_at, last_response FROM deliveries WHERE state IN ('queued', 'deferred') AND state = 'deferred' ${where} ORDER BY first_deferred_at, id LIMIT 1`,
    ...args,
  );
}

export function* queueDepth(now: number): Query<QueueDepth> {
  const c = yield* queueCounts();
  return { byState: { queued: c.queued, sending: c.sending, deferred: c.deferred }, oldestAgeMs: c.oldestWaitingSince === null ? 0 : Math.max(0, now - c.oldestWaitingSince) };
}
