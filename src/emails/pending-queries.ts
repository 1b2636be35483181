// Transitional: the read list.ts needs from a file being moved onto queries at the same time (emails/delivery.ts
// summariesOf), as a query (db/query.ts), its SQL and logic copied unchanged: a query cannot call a function
// that still takes a Db. Deleted once delivery.ts is a query; list.ts then imports it from there.
import { all, type Query } from '../db/query.ts';
import type { DeliverySummary, RecipientState } from './delivery.ts';

const WORST_FIRST: RecipientState[] = ['complained', 'bounced', 'failed', 'suppressed', 'delayed', 'sending', 'queued', 'scheduled', 'canceled', 'delivered'];

const FROM_QUEUE: Record<string, RecipientState> = {
  queued: 'queued',
  sending: 'sending',
  deferred: 'delayed',
  delivered: 'delivered',
  bounced: 'bounced',
  failed: 'failed',
  blocked: 'suppressed',
};

/** emails/delivery.ts summariesOf: the summary of each sent email named (a list page), one grouped query for the page. */
export function* summariesOf(emailIds: readonly string[]): Query<Map<string, DeliverySummary>> {
  const out = new Map<string, DeliverySummary>();
  if (!emailIds.length) return out;
  const rows = yield* all<{ email_id: string; state: string; n: number }>(
    `SELECT d.email_id, CASE WHEN d.complained_at IS NOT NULL THEN 'complained' ELSE d.state END AS state, count(*) AS n
       FROM deliveries d WHERE d.email_id IN (SELECT value FROM json_each(@ids)) GROUP BY 1, 2
       UNION ALL
       SELECT s.email_id, 'scheduled', json_array_length(s.recipients) FROM scheduled_sends s WHERE s.email_id IN (SELECT value FROM json_each(@ids))
       UNION ALL
       SELECT e.id, 'canceled', count(*) FROM emails e JOIN events v ON v.email_id = e.id
       WHERE e.id IN (SELECT value FROM json_each(@ids)) AND e.status = 'canceled' AND v.type = 'canceled' GROUP BY 1`,
    { ids: JSON.stringify(emailIds) },
  );
  const counted = new Map<string, Partial<Record<RecipientState, number>>>();
  for (const r of rows) {
    const state = r.state === 'complained' || r.state === 'scheduled' || r.state === 'canceled' ? r.state : FROM_QUEUE[r.state];
    const counts = counted.get(r.email_id) ?? {};
    counts[state] = (counts[state] ?? 0) + r.n;
    counted.set(r.email_id, counts);
  }
  for (const [id, counts] of counted) out.set(id, { state: WORST_FIRST.find((s) => counts[s])!, counts });
  return out;
}
