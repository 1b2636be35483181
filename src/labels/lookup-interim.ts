// Interim, until emails/lookup.ts and emails/counts.ts are queries (their conversion is another branch's): the
// four functions of theirs that filing, labelling and resorting call, as queries with the signatures that
// conversion gives them, their SQL and counting copied unchanged. When both branches meet, import these from
// emails/lookup.ts and delete this file.
import { get, run, value, type Query } from '../db/query.ts';
import { COUNTED_COLUMNS, type CountedRow } from '../emails/counts.ts';

/** The JSON array of label ids the email carries, or undefined when the workspace has no such email. */
export const labelIdsOf = (workspaceId: string, id: string) => value<string>('SELECT labels_json FROM emails WHERE workspace_id = ? AND id = ?', workspaceId, id);

/** Replaces the email's label ids (a JSON array), keeping the labels' counts. */
export function* setLabelIds(id: string, json: string): Query<void> {
  const before = yield* countedRow(id);
  if (!before || before.labels_json === json) return;
  yield* run('UPDATE emails SET labels_json = ? WHERE id = ?', json, id);
  yield* recount(before, { ...before, labels_json: json });
}

/** Archives received mail (a bucket label's work), keeping the counts; sent or already archived mail stays. */
export function* archiveReceived(id: string, now: number): Query<boolean> {
  const before = yield* countedRow(id);
  if (!before || before.direction !== 'in' || before.archived_at !== null) return false;
  yield* run('UPDATE emails SET archived_at = ? WHERE id = ?', now, id);
  yield* recount(before, { ...before, archived_at: now });
  return true;
}

/** Takes a label being deleted off every email of the workspace that carries it (walking the labelled ones). */
export const removeLabelEverywhere = (workspaceId: string, labelId: string) =>
  run(
    `UPDATE emails SET labels_json = (SELECT json_group_array(j.value) FROM json_each(emails.labels_json) j WHERE j.value <> ?)
       WHERE workspace_id = ? AND labels_json <> '[]' AND EXISTS (SELECT 1 FROM json_each(emails.labels_json) j WHERE j.value = ?)`,
    labelId,
    workspaceId,
    labelId,
  );

const countedRow = (id: string) => get<CountedRow>(`SELECT ${COUNTED_COLUMNS} FROM emails WHERE id = ?`, id);

/** An email's contribution to each counter: 1 or 0. Unread counts are of received mail; trashed mail counts nowhere. */
function contributions(r: CountedRow) {
  if (r.trashed_at !== null) return { inbox_unread: 0, updates_unread: 0, spam_total: 0, important_unread: 0, unread: 0, labels: [] as string[] };
  const received = r.direction === 'in';
  const unread = received && r.read_at === null;
  const inInbox = received && r.archived_at === null && r.category !== 'spam';
  return {
    inbox_unread: inInbox && unread ? 1 : 0,
    updates_unread: inInbox && r.category === 'updates' && unread ? 1 : 0,
    spam_total: received && r.category === 'spam' ? 1 : 0,
    important_unread: inInbox && r.important === 1 && unread ? 1 : 0,
    unread: unread ? 1 : 0,
    labels: JSON.parse(r.labels_json) as string[],
  };
}

/** Applies the change of one email from `before` to `after` (emails/counts.ts recount). */
function* recount(before: CountedRow | null, after: CountedRow | null): Query<void> {
  const b = before ? contributions(before) : null;
  const a = after ? contributions(after) : null;
  const workspaceId = (after ?? before)?.workspace_id;
  if (!workspaceId) return;
  const delta = (k: 'inbox_unread' | 'updates_unread' | 'spam_total' | 'important_unread') => (a?.[k] ?? 0) - (b?.[k] ?? 0);
  const d = { inbox: delta('inbox_unread'), updates: delta('updates_unread'), spam: delta('spam_total'), important: delta('important_unread') };
  if (d.inbox || d.updates || d.spam || d.important) {
    yield* run(
      `INSERT INTO mailbox_counts (workspace_id, inbox_unread, updates_unread, spam_total, important_unread) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id) DO UPDATE SET inbox_unread = inbox_unread + excluded.inbox_unread, updates_unread = updates_unread + excluded.updates_unread,
         spam_total = spam_total + excluded.spam_total, important_unread = important_unread + excluded.important_unread`,
      workspaceId, d.inbox, d.updates, d.spam, d.important,
    );
  }
  for (const id of new Set([...(b?.labels ?? []), ...(a?.labels ?? [])])) {
    const had = b?.labels.includes(id) ?? false;
    const has = a?.labels.includes(id) ?? false;
    const total = Number(has) - Number(had);
    const unread = (has ? a!.unread : 0) - (had ? b!.unread : 0);
    if (total || unread) yield* run('UPDATE labels SET total_count = total_count + ?, unread_count = unread_count + ? WHERE id = ? AND workspace_id = ?', total, unread, id, workspaceId);
  }
}
