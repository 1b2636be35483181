// Composer drafts at rest (0018_drafts_and_scheduling.sql): the fields as a send body, and the draft's private
// files with their SHA-256. Synchronous SQL for the caller's transaction; the 10-file and 10 MB caps of
// API-SPEC.md section 8 are checked again where a file is added, so two uploads at once cannot pass them.
import { createHash } from 'node:crypto';
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';
import { ApiError } from '../errors.ts';
import { iso } from '../clock.ts';

export const MAX_FILES = 10;
export const MAX_TOTAL_BYTES = 10 * 1000 * 1000;

export interface DraftRow {
  id: string;
  workspace_id: string;
  body_json: string;
  created_at: number;
  updated_at: number;
}

export interface DraftFile {
  id: string;
  filename: string;
  content_type: string;
  size: number;
  sha256: string;
}

export function createDraft(db: Db, now: number, workspaceId: string, body: Record<string, unknown>): string {
  const id = newId('dr', now);
  db.prepare('INSERT INTO drafts (id, workspace_id, body_json, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(id, workspaceId, JSON.stringify(body), now, now);
  return id;
}

export const draftById = (db: Db, workspaceId: string, id: string) =>
  db.prepare('SELECT * FROM drafts WHERE workspace_id = ? AND id = ?').get(workspaceId, id) as DraftRow | undefined;

/** Newest change first. */
export function listDrafts(db: Db, workspaceId: string, limit: number, offset: number): DraftRow[] {
  return db.prepare('SELECT * FROM drafts WHERE workspace_id = ? ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?').all(workspaceId, limit, offset) as DraftRow[];
}

export function replaceDraft(db: Db, now: number, workspaceId: string, id: string, body: Record<string, unknown>): boolean {
  return db.prepare('UPDATE drafts SET body_json = ?, updated_at = ? WHERE workspace_id = ? AND id = ?').run(JSON.stringify(body), now, workspaceId, id).changes === 1;
}

/** The draft and its files (they go with it). */
export const deleteDraft = (db: Db, workspaceId: string, id: string) => db.prepare('DELETE FROM drafts WHERE workspace_id = ? AND id = ?').run(workspaceId, id).changes === 1;

export function filesOf(db: Db, draftId: string): DraftFile[] {
  return db.prepare('SELECT id, filename, content_type, size, sha256 FROM draft_attachments WHERE draft_id = ? ORDER BY id').all(draftId) as DraftFile[];
}

/** The files with their bytes, for sending. */
export function fileContents(db: Db, draftId: string): Array<{ filename: string; content_type: string; content: Buffer }> {
  return db.prepare('SELECT filename, content_type, content FROM draft_attachments WHERE draft_id = ? ORDER BY id').all(draftId) as Array<{ filename: string; content_type: string; content: Buffer }>;
}

/** How many more bytes and files the draft may take. */
export function room(db: Db, draftId: string): { files: number; bytes: number } {
  const row = db.prepare('SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes FROM draft_attachments WHERE draft_id = ?').get(draftId) as { n: number; bytes: number };
  return { files: MAX_FILES - row.n, bytes: MAX_TOTAL_BYTES - row.bytes };
}

export const tooManyFiles = () => new ApiError(400, 'limit_exceeded', `attachments: at most ${MAX_FILES} files per draft`);
export const tooManyBytes = () => new ApiError(413, 'payload_too_large', `attachments: at most ${MAX_TOTAL_BYTES} bytes in all per draft`);

/** Stores a file whole with its checksum, or refuses it (400/413) when the draft has no room left for it. */
export function addFile(db: Db, now: number, draft: DraftRow, file: { filename: string; contentType: string; content: Buffer }): DraftFile {
  const left = room(db, draft.id);
  if (left.files < 1) throw tooManyFiles();
  if (file.content.length > left.bytes) throw tooManyBytes();
  const id = newId('att', now);
  const sha256 = createHash('sha256').update(file.content).digest('hex');
  db.prepare('INSERT INTO draft_attachments (id, draft_id, workspace_id, filename, content_type, size, sha256, content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)').run(
    id, draft.id, draft.workspace_id, file.filename, file.contentType, file.content.length, sha256, file.content, now,
  );
  db.prepare('UPDATE drafts SET updated_at = ? WHERE id = ?').run(now, draft.id);
  return { id, filename: file.filename, content_type: file.contentType, size: file.content.length, sha256 };
}

export function draftFile(db: Db, workspaceId: string, id: string) {
  return db.prepare('SELECT filename, content_type, content FROM draft_attachments WHERE workspace_id = ? AND id = ?').get(workspaceId, id) as
    | { filename: string; content_type: string; content: Buffer }
    | undefined;
}

export const deleteFile = (db: Db, workspaceId: string, id: string) => db.prepare('DELETE FROM draft_attachments WHERE workspace_id = ? AND id = ?').run(workspaceId, id).changes === 1;

/** The writer step of a draft's send: the draft goes in the transaction that queues it, or the send fails (404). */
export function draftSent(db: Db, p: { workspaceId: string; draftId: string }): void {
  if (!deleteDraft(db, p.workspaceId, p.draftId)) throw new ApiError(404, 'not_found', 'Draft not found: it was sent or deleted meanwhile');
}

export const presentFile = (f: DraftFile) => ({ id: f.id, filename: f.filename, contentType: f.content_type, sizeBytes: f.size, sha256: f.sha256, available: true });

// The stored fields under the record's names (the request's snake_case ones where they differ).
const RENAMED: Record<string, string> = { reply_to: 'replyTo', in_reply_to: 'inReplyTo', message_class: 'messageClass' };

/** A draft as the API shows it (GET /drafts/:id). */
export function presentDraft(db: Db, d: DraftRow) {
  const body = JSON.parse(d.body_json) as Record<string, unknown>;
  const fields = Object.fromEntries(Object.entries(body).map(([k, v]) => [RENAMED[k] ?? k, k === 'to' && typeof v === 'string' ? [v] : v]));
  return { id: d.id, ...fields, attachments: filesOf(db, d.id).map(presentFile), createdAt: iso(d.created_at), updatedAt: iso(d.updated_at) };
}
