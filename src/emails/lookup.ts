// Finding one email by what the flows know of it: its em_ id or its Message-ID within a workspace (threading,
// replies), or the workspace of a sent email a bounce names; the label ids an email carries, and its files.
import type { Db } from '../db/open.ts';
import type { EmailRow } from './rows.ts';
import { countedRow, recount } from './counts.ts';
import type { StoredAttachment } from './store.ts';

export type EmailLink = Pick<EmailRow, 'id' | 'message_id' | 'thread_id' | 'refs' | 'in_reply_to' | 'direction'>;

const LINK = 'id, message_id, thread_id, refs, in_reply_to, direction';

export const emailById = (db: Db, workspaceId: string, id: string) =>
  db.prepare(`SELECT ${LINK} FROM emails WHERE workspace_id = ? AND id = ?`).get(workspaceId, id) as EmailLink | undefined;

/** The first email of the workspace (sent or received) with this Message-ID (without angle brackets). */
export const emailByMessageId = (db: Db, workspaceId: string, messageId: string) =>
  db.prepare(`SELECT ${LINK} FROM emails WHERE workspace_id = ? AND message_id = ? ORDER BY id LIMIT 1`).get(workspaceId, messageId) as EmailLink | undefined;

/** The files of one of the workspace's emails with their bytes, in order: what a forward attaches again. */
export function emailFiles(db: Db, workspaceId: string, id: string): StoredAttachment[] {
  const rows = db
    .prepare('SELECT filename, content_type, content_id, content FROM email_attachments WHERE workspace_id = ? AND email_id = ? ORDER BY position')
    .all(workspaceId, id) as Array<{ filename: string; content_type: string; content_id: string | null; content: Buffer }>;
  return rows.map((r) => ({ filename: r.filename, contentType: r.content_type, ...(r.content_id ? { contentId: r.content_id } : {}), content: r.content }));
}

/** What a delivery notice about a sent email says of it and threads with (feedback/notices.ts). */
export type SentEmailHead = Pick<
  EmailRow,
  'id' | 'workspace_id' | 'domain_id' | 'domain' | 'message_id' | 'thread_id' | 'refs' | 'from_address' | 'from_name' | 'subject' | 'created_at' | 'sent_by'
>;

export const sentEmailHead = (db: Db, id: string) =>
  db
    .prepare(`SELECT id, workspace_id, domain_id, domain, message_id, thread_id, refs, from_address, from_name, subject, created_at, sent_by FROM emails WHERE id = ? AND direction = 'out'`)
    .get(id) as SentEmailHead | undefined;

/** The workspace of the sent email `id`, or null when there is none (a VERP address names it). */
export const sentEmailWorkspace = (db: Db, id: string) =>
  (db.prepare("SELECT workspace_id FROM emails WHERE id = ? AND direction = 'out'").pluck().get(id) as string | undefined) ?? null;

export const emailExists = (db: Db, id: string) => db.prepare('SELECT 1 FROM emails WHERE id = ?').get(id) !== undefined;

/** The JSON array of label ids the email carries, or undefined when the workspace has no such email. */
export const labelIdsOf = (db: Db, workspaceId: string, id: string) =>
  db.prepare('SELECT labels_json FROM emails WHERE workspace_id = ? AND id = ?').pluck().get(workspaceId, id) as string | undefined;

/** Replaces the email's label ids (a JSON array), keeping the labels' counts. */
export function setLabelIds(db: Db, id: string, json: string): void {
  const before = countedRow(db, id);
  if (!before || before.labels_json === json) return;
  db.prepare('UPDATE emails SET labels_json = ? WHERE id = ?').run(json, id);
  recount(db, before, { ...before, labels_json: json });
}

/** Archives received mail (a bucket label's work), keeping the counts; sent or already archived mail stays. */
export function archiveReceived(db: Db, id: string, now: number): boolean {
  const before = countedRow(db, id);
  if (!before || before.direction !== 'in' || before.archived_at !== null) return false;
  db.prepare('UPDATE emails SET archived_at = ? WHERE id = ?').run(now, id);
  recount(db, before, { ...before, archived_at: now });
  return true;
}

/** Takes a label being deleted off every email of the workspace that carries it (walking the labelled ones). */
export function removeLabelEverywhere(db: Db, workspaceId: string, labelId: string): number {
  return db
    .prepare(
      `UPDATE emails SET labels_json = (SELECT json_group_array(j.value) FROM json_each(emails.labels_json) j WHERE j.value <> ?)
       WHERE workspace_id = ? AND labels_json <> '[]' AND EXISTS (SELECT 1 FROM json_each(emails.labels_json) j WHERE j.value = ?)`,
    )
    .run(labelId, workspaceId, labelId).changes;
}
