// A workspace's labels and the labels of each email (API-SPEC.md 4.3): a label is named by its lbl_ id or by
// its name (regardless of ASCII case); an email carries at most 10, kept as ids in emails.labels_json
// (0011_labels.sql says why). Queries for the caller's transaction (db/query.ts); it never archives or files
// mail by rules (that is the filing rules' work).
import { archiveReceived, labelIdsOf, removeLabelEverywhere, setLabelIds } from '../emails/lookup.ts';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock.ts';
import { all, constraintViolated, get, run, value, type Query } from '../db/query.ts';
import { isId, newId } from '../db/ids.ts';
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
  return { labels: dedupe(labels), missing };
}

/** The labels for these names, creating the ones the workspace does not have yet. */
export function* ensureLabels(clock: Clock, workspaceId: string, names: readonly string[]): Query<Label[]> {
  for (const name of names) {
    yield* run('INSERT INTO labels (id, workspace_id, name, color, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING', newId('lbl', clock.now()), workspaceId, name, colorFor(name), clock.now());
  }
  return (yield* findLabels(workspaceId, names)).labels;
}

/** `{id, name, color}` of each id in a labels_json list, in its order (a label deleted meanwhile is left out). */
export function* labelsOf(workspaceId: string, labelsJson: string): Query<Label[]> {
  return (yield* labelsOfEach(workspaceId, [labelsJson]))[0]!;
}

/**
 * The labels of several emails (a page of a list) in one statement, each email's in its own order: a statement
 * per email is a round trip each on PostgreSQL, 50 of them for a page of labelled mail.
 */
export function* labelsOfEach(workspaceId: string, labelsJsons: readonly string[]): Query<Label[][]> {
  const lists = labelsJsons.map((j) => (j === '[]' ? [] : (JSON.parse(j) as string[])));
  const ids = [...new Set(lists.flat())];
  if (!ids.length) return lists.map(() => []);
  const found = yield* all<Label>('SELECT l.id, l.name, l.color FROM json_each(?) j JOIN labels l ON l.id = j.value AND l.workspace_id = ?', JSON.stringify(ids), workspaceId);
  const byId = new Map(found.map((l) => [l.id, l]));
  return lists.map((list) => list.flatMap((id) => byId.get(id) ?? []));
}

/**
 * Adds and removes labels of one email (POST /emails/:id/labels): refs are ids or names; an unknown name in
 * `add` is created unless `create` is false. Nothing changes when any ref is refused or the email would carry
 * more than 10. Returns the email's labels after the change, or null when the workspace has no such email.
 */
export function* changeEmailLabels(
  clock: Clock,
  workspaceId: string,
  emailId: string,
  change: { add: string[]; remove: string[]; create: boolean },
): Query<Label[] | null> {
  const current = yield* labelIdsOf(workspaceId, emailId);
  if (current === undefined) return null;
  const add = yield* resolveForAdding(clock, workspaceId, change.add, change.create, 'add');
  const removed = new Set((yield* findLabels(workspaceId, change.remove)).labels.map((l) => l.id));
  const ids = [...new Set([...(JSON.parse(current) as string[]), ...add.map((l) => l.id)])].filter((id) => !removed.has(id));
  if (ids.length > MAX_LABELS_PER_EMAIL) {
    throw new ApiError(400, 'limit_exceeded', `an email carries at most ${MAX_LABELS_PER_EMAIL} labels; this change would give it ${ids.length}`);
  }
  const json = JSON.stringify(ids);
  if (json !== current) yield* setLabelIds(emailId, json);
  // A bucket label put on by hand takes received mail out of the inbox (API-SPEC.md section 3).
  if (yield* anyBucket(add.filter((l) => !removed.has(l.id)))) yield* archiveReceived(emailId, clock.now());
  return yield* labelsOf(workspaceId, json);
}

/** Whether one of `labels` is a bucket (skip_inbox), read in their order up to the first that is. */
function* anyBucket(labels: readonly Label[]): Query<boolean> {
  for (const l of labels) if ((yield* value('SELECT skip_inbox FROM labels WHERE id = ?', l.id)) === 1) return true;
  return false;
}

/**
 * Labels for an email being written (a send's `labels`, `add` above): ids must exist; names are created
 * unless `create` is false. Throws a 400 naming `field` for a ref it cannot use.
 */
export function* resolveForAdding(clock: Clock, workspaceId: string, refs: readonly string[], create: boolean, field: string): Query<Label[]> {
  const { missing } = yield* findLabels(workspaceId, refs);
  const unknownId = missing.find((ref) => isId('lbl', ref));
  if (unknownId) throw validationError(field, `no label ${unknownId} in this workspace`);
  if (missing.length && !create) throw validationError(field, `no label named ${JSON.stringify(missing[0])} in this workspace (create is false)`);
  if (missing.length) yield* ensureLabels(clock, workspaceId, missing);
  return (yield* findLabels(workspaceId, refs)).labels;
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

export function* createLabel(now: number, workspaceId: string, l: { name: string; color?: string; skipInbox: boolean }): Query<LabelRow> {
  const id = newId('lbl', now);
  try {
    yield* run('INSERT INTO labels (id, workspace_id, name, color, skip_inbox, created_at) VALUES (?, ?, ?, ?, ?, ?)', id, workspaceId, l.name, (l.color ?? colorFor(l.name)).toLowerCase(), l.skipInbox ? 1 : 0, now);
  } catch (err) {
    if (constraintViolated(err) === 'unique') throw new LabelExists(l.name);
    throw err;
  }
  return (yield* labelByRef(workspaceId, id))!;
}

const LABEL_COLUMNS = 'id, name, color, skip_inbox, total_count, unread_count';

/** A label by its lbl_ id or its name (regardless of ASCII case). */
export const labelByRef = (workspaceId: string, ref: string) =>
  isId('lbl', ref)
    ? get<LabelRow>(`SELECT ${LABEL_COLUMNS} FROM labels WHERE workspace_id = ? AND id = ?`, workspaceId, ref)
    : get<LabelRow>(`SELECT ${LABEL_COLUMNS} FROM labels WHERE workspace_id = ? AND name = ? COLLATE NOCASE`, workspaceId, ref);

export const listLabelRows = (workspaceId: string) => all<LabelRow>(`SELECT ${LABEL_COLUMNS} FROM labels WHERE workspace_id = ? ORDER BY name COLLATE NOCASE`, workspaceId);

export function* updateLabel(workspaceId: string, id: string, change: { name?: string; color?: string; skipInbox?: boolean }): Query<void> {
  try {
    if (change.name !== undefined) yield* run('UPDATE labels SET name = ? WHERE workspace_id = ? AND id = ?', change.name, workspaceId, id);
  } catch (err) {
    if (constraintViolated(err) === 'unique') throw new LabelExists(change.name!);
    throw err;
  }
  if (change.color !== undefined) yield* run('UPDATE labels SET color = ? WHERE workspace_id = ? AND id = ?', change.color.toLowerCase(), workspaceId, id);
  if (change.skipInbox !== undefined) yield* run('UPDATE labels SET skip_inbox = ? WHERE workspace_id = ? AND id = ?', change.skipInbox ? 1 : 0, workspaceId, id);
}

/** Deletes the label; its emails stay and no longer carry it (its rules and pending resorts go with it). */
export function* deleteLabel(workspaceId: string, id: string): Query<boolean> {
  if (!(yield* get('SELECT 1 FROM labels WHERE workspace_id = ? AND id = ?', workspaceId, id))) return false;
  yield* removeLabelEverywhere(workspaceId, id);
  yield* run('DELETE FROM labels WHERE workspace_id = ? AND id = ?', workspaceId, id);
  return true;
}
