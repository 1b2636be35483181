// Composer drafts at rest (0018_drafts_and_scheduling.sql): the fields as a send body, and the draft's private
// files with their SHA-256. Queries for the caller's transaction (db/query.ts); the 10-file and 10 MB caps of
// API-SPEC.md section 8 are checked again where a file is added, so two uploads at once cannot pass them.
import { createHash } from 'node:crypto';
import { all, get, run, type Query } from '../db/query.ts';
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

export function* createDraft(now: number, workspaceId: string, body: Record<string, unknown>): Query<string> {
  const id = newId('dr', now);
  yield* run('INSERT INTO drafts (id, workspace_id, body_json, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', id, workspaceId, JSON.stringify(body), now, now);
  return id;
}

export const draftById = (workspaceId: string, id: string) => get<DraftRow>('SELECT * FROM drafts WHERE workspace_id = ? AND id = ?', workspaceId, id);

/** Newest change first. */
export const listDrafts = (workspaceId: string, limit: number, offset: number) =>
  all<DraftRow>('SELECT * FROM drafts WHERE workspace_id = ? ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?', workspaceId, limit, offset);

export function* replaceDraft(now: number, workspaceId: string, id: string, body: Record<string, unknown>): Query<boolean> {
  return (yield* run('UPDATE drafts SET body_json = ?, updated_at = ? WHERE workspace_id = ? AND id = ?', JSON.stringify(body), now, workspaceId, id)) === 1;
}

/** The draft and its files (they go with it). */
export function* deleteDraft(workspaceId: string, id: string): Query<boolean> {
  return (yield* run('DELETE FROM drafts WHERE workspace_id = ? AND id = ?', workspaceId, id)) === 1;
}

export const filesOf = (draftId: string) => all<DraftFile>('SELECT id, filename, content_type, size, sha256 FROM draft_attachments WHERE draft_id = ? ORDER BY id', draftId);

/** The files with their bytes, for sending. */
export const fileContents = (draftId: string) =>
  all<{ filename: string; content_type: string; content: Buffer }>('SELECT filename, content_type, content FROM draft_attachments WHERE draft_id = ? ORDER BY id', draftId);

/** How many more bytes and files the draft may take. */
export function* room(draftId: string): Query<{ files: number; bytes: number }> {
  const row = (yield* get<{ n: number; bytes: number }>('SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes FROM draft_attachments WHERE draft_id = ?', draftId))!;
  return { files: MAX_FILES - row.n, bytes: MAX_TOTAL_BYTES - row.bytes };
}

export const tooManyFiles = () => new ApiError(400, 'limit_exceeded', `attachments: at most ${MAX_FILES} files per draft`);
export const tooManyBytes = () => new ApiError(413, 'payload_too_large', `attachments: at most ${MAX_TOTAL_BYTES} bytes in all per draft`);

/** Stores a file whole with its checksum, or refuses it (400/413) when the draft has no room left for it. */
export function* addFile(now: number, draft: DraftRow, file: { filename: string; contentType: string; content: Buffer }): Query<DraftFile> {
  const left = yield* room(draft.id);
  if (left.files < 1) throw tooManyFiles();
  if (file.content.length > left.bytes) throw tooManyBytes();
  const id = newId('att', now);
  const sha256 = createHash('sha256').update(file.content).digest('hex');
  yield* run(
    'INSERT INTO draft_attachments (id, draft_id, workspace_id, filename, content_type, size, sha256, content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    id, draft.id, draft.workspace_id, file.filename, file.contentType, file.content.length, sha256, file.content, now,
  );
  yield* run('UPDATE drafts SET updated_at = ? WHERE id = ?', now, draft.id);
  return { id, filename: file.filename, content_type: file.contentType, size: file.content.length, sha256 };
}

export const draftFile = (workspaceId: string, id: string) =>
  get<{ filename: string; content_type: string; content: Buffer }>('SELECT filename, content_type, content FROM draft_attachments WHERE workspace_id = ? AND id = ?', workspaceId, id);

export function* deleteFile(workspaceId: string, id: string): Query<boolean> {
  return (yield* run('DELETE FROM draft_attachments WHERE workspace_id = ? AND id = ?', workspaceId, id)) === 1;
}

/** The writer step of a draft's send: the draft goes in the transaction that queues it, or the send fails (404). */
export function* draftSent(p: { workspaceId: string; draftId: string }): Query<void> {
  if (!(yield* deleteDraft(p.workspaceId, p.draftId))) throw new ApiError(404, 'not_found', 'Draft not found: it was sent or deleted meanwhile');
}

export const presentFile = (f: DraftFile) => ({ id: f.id, filename: f.filename, contentType: f.content_type, sizeBytes: f.size, sha256: f.sha256, available: true });

// The stored fields under the record's names (the request's snake_case ones where they differ).
const RENAMED: Record<string, string> = { reply_to: 'replyTo', in_reply_to: 'inReplyTo', message_class: 'messageClass' };

/** A draft as the API shows it (GET /drafts/:id), with its files read. */
export function* presentDraft(d: DraftRow) {
  const body = JSON.parse(d.body_json) as Record<string, unknown>;
  const fields = Object.fromEntries(Object.entries(body).map(([k, v]) => [RENAMED[k] ?? k, k === 'to' && typeof v === 'string' ? [v] : v]));
  return { id: d.id, ...fields, attachments: (yield* filesOf(d.id)).map(presentFile), createdAt: iso(d.created_at), updatedAt: iso(d.updated_at) };
}

/** A draft as shown, with its files, or null when the workspace has no such draft. */
export function* shownDraft(workspaceId: string, id: string) {
  const d = yield* draftById(workspaceId, id);
  return d ? yield* presentDraft(d) : null;
}
