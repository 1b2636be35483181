// Finding one email by what the flows know of it: its em_ id or its Message-ID within a workspace (threading,
// replies), or the workspace of a sent email a bounce names; and the label ids an email carries.
import type { Db } from '../db/open.ts';
import type { EmailRow } from './rows.ts';

export type EmailLink = Pick<EmailRow, 'id' | 'message_id' | 'thread_id' | 'refs' | 'direction'>;

const LINK = 'id, message_id, thread_id, refs, direction';

export const emailById = (db: Db, workspaceId: string, id: string) =>
  db.prepare(`SELECT ${LINK} FROM emails WHERE workspace_id = ? AND id = ?`).get(workspaceId, id) as EmailLink | undefined;

/** The first email of the workspace (sent or received) with this Message-ID (without angle brackets). */
export const emailByMessageId = (db: Db, workspaceId: string, messageId: string) =>
  db.prepare(`SELECT ${LINK} FROM emails WHERE workspace_id = ? AND message_id = ? ORDER BY id LIMIT 1`).get(workspaceId, messageId) as EmailLink | undefined;

/** The workspace of the sent email `id`, or null when there is none (a VERP address names it). */
export const sentEmailWorkspace = (db: Db, id: string) =>
  (db.prepare("SELECT workspace_id FROM emails WHERE id = ? AND direction = 'out'").pluck().get(id) as string | undefined) ?? null;

export const emailExists = (db: Db, id: string) => db.prepare('SELECT 1 FROM emails WHERE id = ?').get(id) !== undefined;

/** The JSON array of label ids the email carries, or undefined when the workspace has no such email. */
export const labelIdsOf = (db: Db, workspaceId: string, id: string) =>
  db.prepare('SELECT labels_json FROM emails WHERE workspace_id = ? AND id = ?').pluck().get(workspaceId, id) as string | undefined;

export const setLabelIds = (db: Db, id: string, json: string) => db.prepare('UPDATE emails SET labels_json = ? WHERE id = ?').run(json, id);
