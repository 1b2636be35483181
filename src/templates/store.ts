// Templates at rest: the template row, its one draft and its releases (0017_templates.sql). Synchronous SQL for
// the caller's transaction; every change to a draft is a compare-and-set on its revision, and nothing here
// updates a published row (the store refuses it anyway).
import type { Db } from '../db/open.ts';
import { isId, newId } from '../db/ids.ts';
import type { TemplateContent, Variable } from './content.ts';

export interface TemplateRow {
  id: string;
  workspace_id: string;
  key: string;
  name: string;
  lifecycle: 'active' | 'archived';
  active_version_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface VersionRow {
  id: string;
  template_id: string;
  state: 'draft' | 'published';
  revision: number;
  number: number | null;
  name: string;
  subject_template: string;
  html_template: string;
  text_template: string;
  variables_json: string;
  sample_data_json: string;
  message_class: 'transactional' | 'marketing';
  created_at: number;
  updated_at: number;
  published_at: number | null;
}

export class TemplateExists extends Error {}

export function contentOf(v: VersionRow): TemplateContent {
  return {
    name: v.name,
    subjectTemplate: v.subject_template,
    htmlTemplate: v.html_template,
    textTemplate: v.text_template,
    variables: JSON.parse(v.variables_json) as Variable[],
    // Own keys only, whatever they are called (JSON.parse makes "__proto__" an own key; assign keeps it one).
    sampleData: Object.assign(Object.create(null) as Record<string, unknown>, JSON.parse(v.sample_data_json)),
    messageClass: v.message_class,
  };
}

const contentColumns = (c: TemplateContent) => [c.name, c.subjectTemplate, c.htmlTemplate, c.textTemplate, JSON.stringify(c.variables), JSON.stringify(c.sampleData), c.messageClass];

function insertDraft(db: Db, now: number, t: { id: string; workspace_id: string }, content: TemplateContent): VersionRow {
  const id = newId('tmplv', now);
  db.prepare(
    `INSERT INTO template_versions (id, template_id, workspace_id, state, revision, name, subject_template, html_template, text_template,
       variables_json, sample_data_json, message_class, created_at, updated_at)
     VALUES (?, ?, ?, 'draft', 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(id, t.id, t.workspace_id, ...contentColumns(content), now, now);
  return versionById(db, id)!;
}

/** A new template with its draft at revision 1; throws TemplateExists when the key is taken (in any case). */
export function createTemplate(db: Db, now: number, workspaceId: string, key: string, content: TemplateContent): { template: TemplateRow; draft: VersionRow } {
  const id = newId('tmpl', now);
  try {
    db.prepare('INSERT INTO templates (id, workspace_id, key, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(id, workspaceId, key, content.name, now, now);
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new TemplateExists();
    throw err;
  }
  const template = templateById(db, workspaceId, id)!;
  return { template, draft: insertDraft(db, now, template, content) };
}

const templateById = (db: Db, workspaceId: string, id: string) =>
  db.prepare('SELECT * FROM templates WHERE workspace_id = ? AND id = ?').get(workspaceId, id) as TemplateRow | undefined;

/** A template by its tmpl_ id or its key (in any case). */
export function templateByRef(db: Db, workspaceId: string, ref: string): TemplateRow | undefined {
  if (isId('tmpl', ref)) return templateById(db, workspaceId, ref);
  return db.prepare('SELECT * FROM templates WHERE workspace_id = ? AND key = ? COLLATE NOCASE').get(workspaceId, ref) as TemplateRow | undefined;
}

export const versionById = (db: Db, id: string) => db.prepare('SELECT * FROM template_versions WHERE id = ?').get(id) as VersionRow | undefined;

/** A version without its content: what decides where it is rendered, read without copying megabytes of it. */
export interface VersionSize {
  id: string;
  message_class: VersionRow['message_class'];
  /** Characters of its content columns together. */
  chars: number;
}

const SIZE = `SELECT id, message_class,
  length(subject_template) + length(html_template) + length(text_template) + length(variables_json) + length(sample_data_json) AS chars
  FROM template_versions`;

export const versionSize = (db: Db, id: string) => db.prepare(`${SIZE} WHERE id = ?`).get(id) as VersionSize | undefined;

export const draftSizeOf = (db: Db, templateId: string) => db.prepare(`${SIZE} WHERE template_id = ? AND state = 'draft'`).get(templateId) as VersionSize | undefined;

export const draftOf = (db: Db, templateId: string) =>
  db.prepare("SELECT * FROM template_versions WHERE template_id = ? AND state = 'draft'").get(templateId) as VersionRow | undefined;

/** Releases, newest first. */
export const releasesOf = (db: Db, templateId: string) =>
  db.prepare("SELECT * FROM template_versions WHERE template_id = ? AND state = 'published' ORDER BY number DESC").all(templateId) as VersionRow[];

export interface ListedTemplate extends TemplateRow {
  has_draft: number;
}

/** The workspace's templates, most recently changed first; `query` is a case-insensitive substring of name or key. */
export function listTemplates(db: Db, workspaceId: string, f: { lifecycle?: 'active' | 'archived'; query?: string }): ListedTemplate[] {
  const where = ['t.workspace_id = ?'];
  const args: unknown[] = [workspaceId];
  if (f.lifecycle) {
    where.push('t.lifecycle = ?');
    args.push(f.lifecycle);
  }
  if (f.query) {
    // instr on lower(): no LIKE wildcards to escape in what the caller typed.
    where.push('(instr(lower(t.name), lower(?)) > 0 OR instr(lower(t.key), lower(?)) > 0)');
    args.push(f.query, f.query);
  }
  return db
    .prepare(
      `SELECT t.*, EXISTS (SELECT 1 FROM template_versions v WHERE v.template_id = t.id AND v.state = 'draft') AS has_draft
       FROM templates t WHERE ${where.join(' AND ')} ORDER BY t.updated_at DESC, t.id DESC`,
    )
    .all(...args) as ListedTemplate[];
}

/** Per release, the real sends made with it (test sends are not usage). */
export function usageOf(db: Db, templateId: string): Array<{ versionId: string; emails: number; lastSentAt: number | null }> {
  return (
    db
      .prepare(
        `SELECT v.id, v.number, count(e.id) AS emails, max(e.created_at) AS last
         FROM template_versions v LEFT JOIN emails e ON e.template_version_id = v.id AND e.is_test = 0
         WHERE v.template_id = ? AND v.state = 'published' GROUP BY v.id ORDER BY v.number DESC`,
      )
      .all(templateId) as Array<{ id: string; emails: number; last: number | null }>
  ).map((r) => ({ versionId: r.id, emails: r.emails, lastSentAt: r.last }));
}

/** The draft's content replaced if its revision is still `revision`; the new revision, or null when it is not. */
export function saveDraft(db: Db, now: number, templateId: string, revision: number, content: TemplateContent): number | null {
  const changed = db
    .prepare(
      `UPDATE template_versions SET name = ?, subject_template = ?, html_template = ?, text_template = ?, variables_json = ?,
         sample_data_json = ?, message_class = ?, revision = revision + 1, updated_at = ?
       WHERE template_id = ? AND state = 'draft' AND revision = ?`,
    )
    .run(...contentColumns(content), now, templateId, revision).changes;
  if (!changed) return null;
  touch(db, now, templateId, content.name);
  return revision + 1;
}

/** A draft at revision 1 made from the active release. */
export function draftFromRelease(db: Db, now: number, template: TemplateRow, release: VersionRow): VersionRow {
  const draft = insertDraft(db, now, { id: template.id, workspace_id: template.workspace_id }, contentOf(release));
  touch(db, now, template.id, release.name);
  return draft;
}

/** The draft becomes the next numbered release and the active one; the template then has no draft. */
export function publishDraft(db: Db, now: number, templateId: string, draftId: string): VersionRow {
  const next = Number(db.prepare("SELECT coalesce(max(number), 0) + 1 FROM template_versions WHERE template_id = ? AND state = 'published'").pluck().get(templateId));
  db.prepare("UPDATE template_versions SET state = 'published', number = ?, published_at = ?, updated_at = ? WHERE id = ? AND state = 'draft'").run(next, now, now, draftId);
  db.prepare('UPDATE templates SET active_version_id = ?, updated_at = ? WHERE id = ?').run(draftId, now, templateId);
  return versionById(db, draftId)!;
}

export function setLifecycle(db: Db, now: number, templateId: string, lifecycle: 'active' | 'archived'): void {
  db.prepare('UPDATE templates SET lifecycle = ?, updated_at = ? WHERE id = ?').run(lifecycle, now, templateId);
}

function touch(db: Db, now: number, templateId: string, name: string): void {
  db.prepare('UPDATE templates SET name = ?, updated_at = ? WHERE id = ?').run(name, now, templateId);
}
