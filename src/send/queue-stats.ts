// How deep the outbound queue is, for the metrics scrape (metrics/metrics.ts): counts by state and the oldest
// waiting recipient, read through the queue's partial indexes, so a scrape costs the size of the queue, never
// of the delivery history. Read-only.
import type { Db } from '../db/open.ts';
import type { QueueDepth } from '../metrics/metrics.ts';

export function queueDepth(db: Db, now: number): QueueDepth {
  // deliveries_due covers exactly the queued and deferred rows; deliveries_claimed the ones being sent.
  const waiting = db.prepare("SELECT state, count(*) AS n, min(created_at) AS oldest FROM deliveries WHERE state IN ('queued', 'deferred') GROUP BY state").all() as Array<{ state: 'queued' | 'deferred'; n: number; oldest: number }>;
  const sending = db.prepare("SELECT count(*) FROM deliveries WHERE state = 'sending'").pluck().get() as number;
  const byState = { queued: 0, sending, deferred: 0 };
  let oldest = now;
  for (const w of waiting) {
    byState[w.state] = w.n;
    oldest = Math.min(oldest, w.oldest);
  }
  return { byState, oldestAgeMs: Math.max(0, now - oldest) };
}
