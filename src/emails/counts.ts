// The counts GET /labels shows, kept exact in the transaction of every change to an email: the workspace's
// mailbox summary (mailbox_counts) and each label's total and unread (labels.total_count, unread_count). Every
// writer of an email's direction, category, read, archived, important, trashed or labels state goes through
// recount() with the state before and after, so no count is ever derived by scanning a million rows. Mail in
// the Trash counts nowhere (DESIGN.md "trash").
import { change, get, type Query } from '../db/query.ts';
import type { EmailRow } from './rows.ts';

export type CountedRow = Pick<EmailRow, 'workspace_id' | 'direction' | 'category' | 'read_at' | 'archived_at' | 'important' | 'labels_json' | 'trashed_at'>;

export const COUNTED_COLUMNS = 'workspace_id, direction, category, read_at, archived_at, important, labels_json, trashed_at';

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

/** Applies the change of one email from `before` to `after` (null: did not exist / no longer exists). */
export function* recount(before: CountedRow | null, after: CountedRow | null): Query<void> {
  const b = before ? contributions(before) : null;
  const a = after ? contributions(after) : null;
  const workspaceId = (after ?? before)?.workspace_id;
  if (!workspaceId) return;
  const delta = (k: 'inbox_unread' | 'updates_unread' | 'spam_total' | 'important_unread') => (a?.[k] ?? 0) - (b?.[k] ?? 0);
  const d = { inbox: delta('inbox_unread'), updates: delta('updates_unread'), spam: delta('spam_total'), important: delta('important_unread') };
  // Changes, not runs: nothing reads their counts, so on PostgreSQL they go on without a round trip each, and the
  // upserts of a group commit's emails become one statement (db/postgres-merge.ts).
  if (d.inbox || d.updates || d.spam || d.important) {
    yield* change(
      `INSERT INTO mailbox_counts (workspace_id, inbox_unread, updates_unread, spam_total, important_unread) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id) DO UPDATE SET inbox_unread = mailbox_counts.inbox_unread + excluded.inbox_unread,
         updates_unread = mailbox_counts.updates_unread + excluded.updates_unread, spam_total = mailbox_counts.spam_total + excluded.spam_total,
         important_unread = mailbox_counts.important_unread + excluded.important_unread`,
      workspaceId, d.inbox, d.updates, d.spam, d.important,
    );
  }
  for (const id of new Set([...(b?.labels ?? []), ...(a?.labels ?? [])])) {
    const had = b?.labels.includes(id) ?? false;
    const has = a?.labels.includes(id) ?? false;
    const total = Number(has) - Number(had);
    const unread = (has ? a!.unread : 0) - (had ? b!.unread : 0);
    if (total || unread) yield* change('UPDATE labels SET total_count = total_count + ?, unread_count = unread_count + ? WHERE id = ? AND workspace_id = ?', total, unread, id, workspaceId);
  }
}

export const countedRow = (id: string) => get<CountedRow>(`SELECT ${COUNTED_COLUMNS} FROM emails WHERE id = ?`, id);

/** The mailbox summary of GET /labels (resortPending is the labels' own). */
export function* mailboxCounts(workspaceId: string) {
  const row = yield* get<{ inbox_unread: number; updates_unread: number; spam_total: number; important_unread: number }>(
    'SELECT inbox_unread, updates_unread, spam_total, important_unread FROM mailbox_counts WHERE workspace_id = ?',
    workspaceId,
  );
  return { inboxUnread: row?.inbox_unread ?? 0, updatesUnread: row?.updates_unread ?? 0, spamTotal: row?.spam_total ?? 0, importantUnread: row?.important_unread ?? 0 };
}
