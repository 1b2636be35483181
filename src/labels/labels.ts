// A workspace's labels and the labels of each email (API-SPEC.md 4.3): a label is named by its lbl_ id or by
// its name (regardless of ASCII case); an email carries at most 10, kept as ids in emails.labels_json
// (0011_labels.sql says why). Synchronous SQL for the caller's transaction; it never archives or files mail
// by rules (that is the filing rules' work).
import { archiveReceived, labelIdsOf, removeLabelEverywhere, setLabelIds } from '../emails/lookup.ts';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { isId, newId } from '../db/ids.ts';
import { runOn } from '../db/sqlite-query.ts';
import { ApiError, validationError } from '../errors.ts';

export const MAX_LABELS_PER_EMAIL = 10;

/** A label as a request names it: an lbl_ id or a name. No commas: the `label` filter takes comma lists. */
export const labelRef = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[^\u0000-\u001f\u007f,]*$/, 'must not contain control characters or commas');

export interface Label {
  id: string;
  name: string;
  color: string;
}

// A new label's colour, picked from its name so the same name looks the same in every workspace.
const PALETTE = ['#2563eb', '#16a34a', '#dc2626', '#d97706', '#7c3aed', '#db2777', '#0891b2', '#65a30d', '#4b5563', '#9333ea'];
const colorFor = (name: string) => PALETTE[createHash('sha256').update(name.toLowerCase()).digest()[0] % PALETTE.length];

/** The labels `refs` (ids or names) name in the workspace, in their order; `missing` are refs that name none. */
export function findLabels(db: Db, workspaceId: string, refs: readonly string[]): { labels: Label[]; missing: string[] } {
  const labels: Label[] = [];
  const missing: string[] = [];
  for (const ref of refs) {
    const label = (
      isId('lbl', ref)
        ? db.prepare('SELECT id, name, color FROM labels WHERE workspace_id = ? AND id = ?').get(workspaceId, ref)
        : db.prepare('SELECT id, name, color FROM labels WHERE workspace_id = ? AND name = ? COLLATE NOCASE').get(workspaceId, ref)
    ) as Label | undefined;
    if (label) labels.push(label);
    else missing.push(ref);
  }
  return { labels: dedupe(labels), missing };
}

/** The labels for these names, creating the ones the workspace does not have yet. */
export function ensureLabels(db: Db, clock: Clock, workspaceId: string, names: readonly string[]): Label[] {
  const insert = db.prepare('INSERT INTO labels (id, workspace_id, name, color, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING');
  for (const name of names) insert.run(newId('lbl', clock.now()), workspaceId, name, colorFor(name), clock.now());
  return findLabels(db, workspaceId, names).labels;
}

/** `{id, name, color}` of each id in a labels_json list, in its order (a label deleted meanwhile is left out). */
export function labelsOf(db: Db, workspaceId: string, labelsJson: string): Label[] {
  if (labelsJson === '[]') return [];
  return db
    .prepare('SELECT l.id, l.name, l.color FROM json_each(?) j JOIN labels l ON l.id = j.value AND l.workspace_id = ? ORDER BY j.key')
    .all(labelsJson, workspaceId) as Label[];
}

/**
 * Adds and removes labels of one email (POST /emails/:id/labels): refs are ids or names; an unknown name in
 * `add` is created unless `create` is false. Nothing changes when any ref is refused or the email would carry
 * more than 10. Returns the email's labels after the change, or null when the workspace has no such email.
 */
export function changeEmailLabels(
  db: Db,
  clock: Clock,
  workspaceId: string,
  emailId: string,
  change: { add: string[]; remove: string[]; create: boolean },
): Label[] | null {
  // Bridge: changeEmailLabels takes the connection (not a query yet).
  const current = runOn(db, labelIdsOf(workspaceId, emailId));
  if (current === undefined) return null;
  const add = resolveForAdding(db, clock, workspaceId, change.add, change.create, 'add');
  const removed = new Set(findLabels(db, workspaceId, change.remove).labels.map((l) => l.id));
  const ids = [...new Set([...(JSON.parse(current) as string[]), ...add.map((l) => l.id)])].filter((id) => !removed.has(id));
  if (ids.length > MAX_LABELS_PER_EMAIL) {
    throw new ApiError(400, 'limit_exceeded', `an email carries at most ${MAX_LABELS_PER_EMAIL} labels; this change would give it ${ids.length}`);
  }
  const json = JSON.stringify(ids);
  if (json !== current) runOn(db, setLabelIds(emailId, json));
  // A bucket label put on by hand takes received mail out of the inbox (API-SPEC.md section 3).
  if (add.some((l) => !removed.has(l.id) && db.prepare('SELECT skip_inbox FROM labels WHERE id = ?').pluck().get(l.id) === 1)) runOn(db, archiveReceived(emailId, clock.now()));
  return labelsOf(db, workspaceId, json);
}

/**
 * Labels for an email being written (a send's `labels`, `add` above): ids must exist; names are created
 * unless `create` is false. Throws a 400 naming `field` for a ref it cannot use.
 */
export function resolveForAdding(db: Db, clock: Clock, workspaceId: string, refs: readonly string[], create: boolean, field: string): Label[] {
  const { missing } = findLabels(db, workspaceId, refs);
  const unknownId = missing.find((ref) => isId('lbl', ref));
  if (unknownId) throw validationError(field, `no label ${unknownId} in this workspace`);
  if (missing.length && !create) throw validationError(field, `no label named ${JSON.stringify(missing[0])} in this workspace (create is false)`);
  if (missing.length) ensureLabels(db, clock, workspaceId, missing);
  return findLabels(db, workspaceId, refs).labels;
}

const dedupe = (labels: Label[]) => [...new Map(labels.map((l) => [l.id, l])).values()];

/** A label as GET /labels shows it. */
export interface LabelRow extends Label {
  skip_inbox: number;
  total_count: number;
  unread_count: number;
}

/**
 * A name for a new or renamed label: `/` makes a folder-style hierarchy, each segment trimmed and none empty;
 * no commas (lists are comma-separated) and no control characters; at most 100 characters.
 */
export function labelName(input: string): { ok: true; name: string } | { ok: false; reason: string } {
  if (/[\u0000-\u001f\u007f,]/.test(input)) return { ok: false, reason: 'must not contain control characters or commas' };
  const segments = input.split('/').map((s) => s.trim());
  if (segments.some((s) => s === '')) return { ok: false, reason: 'must not be empty nor have an empty segment around "/"' };
  const name = segments.join('/');
  if (name.length > 100) return { ok: false, reason: 'must be at most 100 characters' };
  if (isId('lbl', name)) return { ok: false, reason: 'must not look like a label id' };
  return { ok: true, name };
}

export const COLOR = /^#[0-9a-f]{6}$/i;

export class LabelExists extends Error {}

export function createLabel(db: Db, now: number, workspaceId: string, l: { name: string; color?: string; skipInbox: boolean }): LabelRow {
  const id = newId('lbl', now);
  try {
    db.prepare('INSERT INTO labels (id, workspace_id, name, color, skip_inbox, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(id, workspaceId, l.name, (l.color ?? colorFor(l.name)).toLowerCase(), l.skipInbox ? 1 : 0, now);
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new LabelExists(l.name);
    throw err;
  }
  return labelByRef(db, workspaceId, id)!;
}

const LABEL_COLUMNS = 'id, name, color, skip_inbox, total_count, unread_count';

/** A label by its lbl_ id or its name (regardless of ASCII case). */
export const labelByRef = (db: Db, workspaceId: string, ref: string) =>
  (isId('lbl', ref)
    ? db.prepare(`SELECT ${LABEL_COLUMNS} FROM labels WHERE workspace_id = ? AND id = ?`).get(workspaceId, ref)
    : db.prepare(`SELECT ${LABEL_COLUMNS} FROM labels WHERE workspace_id = ? AND name = ? COLLATE NOCASE`).get(workspaceId, ref)) as LabelRow | undefined;

export const listLabelRows = (db: Db, workspaceId: string) => db.prepare(`SELECT ${LABEL_COLUMNS} FROM labels WHERE workspace_id = ? ORDER BY name COLLATE NOCASE`).all(workspaceId) as LabelRow[];

export function updateLabel(db: Db, workspaceId: string, id: string, change: { name?: string; color?: string; skipInbox?: boolean }): void {
  try {
    if (change.name !== undefined) db.prepare('UPDATE labels SET name = ? WHERE workspace_id = ? AND id = ?').run(change.name, workspaceId, id);
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new LabelExists(change.name!);
    throw err;
  }
  if (change.color !== undefined) db.prepare('UPDATE labels SET color = ? WHERE workspace_id = ? AND id = ?').run(change.color.toLowerCase(), workspaceId, id);
  if (change.skipInbox !== undefined) db.prepare('UPDATE labels SET skip_inbox = ? WHERE workspace_id = ? AND id = ?').run(change.skipInbox ? 1 : 0, workspaceId, id);
}

/** Deletes the label; its emails stay and no longer carry it (its rules and pending resorts go with it). */
export function deleteLabel(db: Db, workspaceId: string, id: string): boolean {
  if (!db.prepare('SELECT 1 FROM labels WHERE workspace_id = ? AND id = ?').get(workspaceId, id)) return false;
  // Bridge: deleteLabel takes the connection (not a query yet).
  runOn(db, removeLabelEverywhere(workspaceId, id));
  db.prepare('DELETE FROM labels WHERE workspace_id = ? AND id = ?').run(workspaceId, id);
  return true;
}
