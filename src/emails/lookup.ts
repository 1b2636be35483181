// Finding one email by what the flows know of it: its em_ id or its Message-ID within a workspace (threading,
// replies), or the workspace of a sent email a bounce names; the label ids an email carries, and its files.
import { all, get, run, value, type Query } from '../db/query.ts';
import type { EmailRow } from './rows.ts';
import { countedRow, recount } from './counts.ts';
import type { StoredAttachment } from './store.ts';

export type EmailLink = Pick<EmailRow, 'id' | 'message_id' | 'thread_id' | 'refs' | 'in_reply_to' | 'direction'>;

const LINK = 'id, message_id, thread_id, refs, in_reply_to, direction';

export const emailById = (workspaceId: string, id: string) => get<EmailLink>(`SELECT ${LINK} FROM emails WHERE workspace_id = ? AND id = ?`, workspaceId, id);

/** The first email of the workspace (sent or received) with this Message-ID (without angle brackets). */
export const emailByMessageId = (workspaceId: string, messageId: string) =>
  get<EmailLink>(`SELECT ${LINK} FROM emails WHERE workspace_id = ? AND message_id = ? ORDER BY id LIMIT 1`, workspaceId, messageId);

/** The files of one of the workspace's emails with their bytes, in order: what a forward attaches again. */
export function* emailFiles(workspaceId: string, id: string): Query<StoredAttachment[]> {
  const rows = yield* all<{ filename: string; content_type: string; content_id: string | null; content: Buffer }>(
    'SELECT filename, content_type, content_id, content FROM email_attachments WHERE workspace_id = ? AND email_id = ? ORDER BY position',
    workspaceId,
    id,
  );
  return rows.map((r) => ({ filename: r.filename, contentType: r.content_type, ...(r.content_id ? { contentId: r.content_id } : {}), content: r.content }));
}

/** What a delivery notice about a sent email says of it and threads with (feedback/notices.ts). */
export type SentEmailHead = Pick<
  EmailRow,
  'id' | 'workspace_id' | 'domain_id' | 'domain' | 'message_id' | 'thread_id' | 'refs' | 'from_address' | 'from_name' | 'subject' | 'created_at' | 'sent_by'
>;

export const sentEmailHead = (id: string) =>
  get<SentEmailHead>(`SELECT id, workspace_id, domain_id, domain, message_id, thread_id, refs, from_address, from_name, subject, created_at, sent_by FROM emails WHERE id = ? AND direction = 'out'`, id);

/** The workspace of the sent email `id`, or null when there is none (a VERP address names it). */
export function* sentEmailWorkspace(id: string): Query<string | null> {
  return (yield* value<string>("SELECT workspace_id FROM emails WHERE id = ? AND direction = 'out'", id)) ?? null;
}

export function* emailExists(id: string): Query<boolean> {
  return (yield* get('SELECT 1 FROM emails WHERE id = ?', id)) !== undefined;
}

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
