// Transitional, for this branch alone: the reads list.ts and list-operators.ts need from files another branch
// moves onto queries at the same time (labels/labels.ts findLabels, labelsOf, listLabelRows; emails/delivery.ts
// summariesOf), as queries (db/query.ts), their SQL and logic copied unchanged. A query cannot call a function
// that still takes a Db. At the merge this file is deleted and its importers import the converted functions,
// which take the same arguments.
import { all, get, type Query } from '../db/query.ts';
import { isId } from '../db/ids.ts';
import type { Label, LabelRow } from '../labels/labels.ts';
import type { DeliverySummary, RecipientState } from './delivery.ts';

/** labels/labels.ts findLabels: the labels `refs` (ids or names) name in the workspace, in their order; `missing` are refs that name none. */
export function* findLabels(workspaceId: string, refs: readonly string[]): Query<{ labels: Label[]; missing: string[] }> {
  const labels: Label[] = [];
  const missing: string[] = [];
  for (const ref of refs) {
    const label = isId('lbl', ref)
      ? yield* get<Label>('SELECT id, name, color FROM labels WHERE workspace_id = ? AND id = ?', workspaceId, ref)
      : yield* get<Label>('SELECT id, name, color FROM labels WHERE workspace_id = ? AND name = ? COLLATE NOCASE', workspaceId, ref);
    if (label) labels.push(label);
    else missing.push(ref);
  }
  return { labels: [...new Map(labels.map((l) => [l.id, l])).values()], missing };
}

/** labels/labels.ts labelsOf: `{id, name, color}` of each id in a labels_json list, in its order. */
export function* labelsOf(workspaceId: string, labelsJson: string): Query<Label[]> {
  if (labelsJson === '[]') return [];
  return yield* all<Label>('SELECT l.id, l.name, l.color FROM json_each(?) j JOIN labels l ON l.id = j.value AND l.workspace_id = ? ORDER BY j.key', labelsJson, workspaceId);
}

/** labels/labels.ts listLabelRows. */
export const listLabelRows = (workspaceId: string) =>
  all<LabelRow>('SELECT id, name, color, skip_inbox, total_count, unread_count FROM labels WHERE workspace_id = ? ORDER BY name COLLATE NOCASE', workspaceId);

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
