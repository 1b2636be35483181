// Templates at rest: the template row, its one draft and its releases (0017_templates.sql). Queries for the
// caller's transaction (db/query.ts); every change to a draft is a compare-and-set on its revision, and nothing here
// updates a published row (the store refuses it anyway).
import { all, constraintViolated, get, run, value, type Query } from '../db/query.ts';
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

function* insertDraft(now: number, t: { id: string; workspace_id: string }, content: TemplateContent): Query<VersionRow> {
  const id = newId('tmplv', now);
  yield* run(
    `INSERT INTO template_versions (id, template_id, workspace_id, state, revision, name, subject_template, html_template, text_template,
       variables_json, sample_data_json, message_class, created_at, updated_at)
     VALUES (?, ?, ?, 'draft', 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id, t.id, t.workspace_id, ...contentColumns(content), now, now,
  );
  return (yield* versionById(id))!;
}

/** A new template with its draft at revision 1; throws TemplateExists when the key is taken (in any case). */
export function* createTemplate(now: number, workspaceId: string, key: string, content: TemplateContent): Query<{ template: TemplateRow; draft: VersionRow }> {
  const id = newId('tmpl', now);
  try {
    yield* run('INSERT INTO templates (id, workspace_id, key, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', id, workspaceId, key, content.name, now, now);
  } catch (err) {
    if (constraintViolated(err) === 'unique') throw new TemplateExists();
    throw err;
  }
  const template = (yield* templateById(workspaceId, id))!;
  return { template, draft: yield* insertDraft(now, template, content) };
}

const templateById = (workspaceId: string, id: string) => get<TemplateRow>('SELECT * FROM templates WHERE workspace_id = ? AND id = ?', workspaceId, id);

/** A template by its tmpl_ id or its key (in any case). */
export function templateByRef(workspaceId: string, ref: string): Query<TemplateRow | undefined> {
  if (isId('tmpl', ref)) return templateById(workspaceId, ref);
  return get<TemplateRow>({
    sqlite: 'SELECT * FROM templates WHERE workspace_id = ? AND key = ? COLLATE NOCASE',
    postgres: 'SELECT * FROM templates WHERE workspace_id = ? AND lower(key) = lower(?)',
  }, workspaceId, ref);
}

export const versionById = (id: string) => get<VersionRow>('SELECT * FROM template_versions WHERE id = ?', id);

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

export const versionSize = (id: string) => get<VersionSize>(`${SIZE} WHERE id = ?`, id);

export const draftSizeOf = (templateId: string) => get<VersionSize>(`${SIZE} WHERE template_id = ? AND state = 'draft'`, templateId);

export const draftOf = (templateId: string) => get<VersionRow>("SELECT * FROM template_versions WHERE template_id = ? AND state = 'draft'", templateId);

/** Releases, newest first. */
export const releasesOf = (templateId: string) => all<VersionRow>("SELECT * FROM template_versions WHERE template_id = ? AND state = 'published' ORDER BY number DESC", templateId);

export interface ListedTemplate extends TemplateRow {
  has_draft: number;
}

/** The workspace's templates, most recently changed first; `query` is a case-insensitive substring of name or key. */
export function listTemplates(workspaceId: string, f: { lifecycle?: 'active' | 'archived'; query?: string }): Query<ListedTemplate[]> {
  const where = ['t.workspace_id = ?'];
  const args: unknown[] = [workspaceId];
  if (f.lifecycle) {
    where.push('t.lifecycle = ?');
    args.push(f.lifecycle);
  }
  if (f.query) {
    // instr (PostgreSQL's strpos) on lower(): no LIKE wildcards to escape in what the caller typed.
    where.push('(instr(lower(t.name), lower(?)) > 0 OR instr(lower(t.key), lower(?)) > 0)');
    args.push(f.query, f.query);
  }
  const sql = `SELECT t.*, EXISTS (SELECT 1 FROM template_versions v WHERE v.template_id = t.id AND v.state = 'draft') AS has_draft
    FROM templates t WHERE ${where.join(' AND ')} ORDER BY t.updated_at DESC, t.id DESC`;
  return all<ListedTemplate>({ sqlite: sql, postgres: sql.replaceAll('instr(', 'strpos(') }, ...args);
}

/** Per release, the real sends made with it (test sends are not usage). */
export function* usageOf(templateId: string): Query<Array<{ versionId: string; emails: number; lastSentAt: number | null }>> {
  const rows = yield* all<{ id: string; emails: number; last: number | null }>(
    `SELECT v.id, v.number, count(e.id) AS emails, max(e.created_at) AS last
     FROM template_versions v LEFT JOIN emails e ON e.template_version_id = v.id AND e.is_test = 0
     WHERE v.template_id = ? AND v.state = 'published' GROUP BY v.id ORDER BY v.number DESC`,
    templateId,
  );
  return rows.map((r) => ({ versionId: r.id, emails: r.emails, lastSentAt: r.last }));
}

/** The draft's content replaced if its revision is still `revision`; the new revision, or null when it is not. */
export function* saveDraft(now: number, templateId: string, revision: number, content: TemplateContent): Query<number | null> {
  const changed = yield* run(
    `UPDATE template_versions SET name = ?, subject_template = ?, html_template = ?, text_template = ?, variables_json = ?,
       sample_data_json = ?, message_class = ?, revision = revision + 1, updated_at = ?
     WHERE template_id = ? AND state = 'draft' AND revision = ?`,
    ...contentColumns(content), now, templateId, revision,
  );
  if (!changed) return null;
  yield* touch(now, templateId, content.name);
  return revision + 1;
}

/** A draft at revision 1 made from the active release. */
export function* draftFromRelease(now: number, template: TemplateRow, release: VersionRow): Query<VersionRow> {
  const draft = yield* insertDraft(now, { id: template.id, workspace_id: template.workspace_id }, contentOf(release));
  yield* touch(now, template.id, release.name);
  return draft;
}

/** The draft becomes the next numbered release and the active one; the template then has no draft. */
export function* publishDraft(now: number, templateId: string, draftId: string): Query<VersionRow> {
  const next = Number(yield* value("SELECT coalesce(max(number), 0) + 1 FROM template_versions WHERE template_id = ? AND state = 'published'", templateId));
  yield* run("UPDATE template_versions SET state = 'published', number = ?, published_at = ?, updated_at = ? WHERE id = ? AND state = 'draft'", next, now, now, draftId);
  yield* run('UPDATE templates SET active_version_id = ?, updated_at = ? WHERE id = ?', draftId, now, templateId);
  return (yield* versionById(draftId))!;
}

export function* setLifecycle(now: number, templateId: string, lifecycle: 'active' | 'archived'): Query<void> {
  yield* run('UPDATE templates SET lifecycle = ?, updated_at = ? WHERE id = ?', lifecycle, now, templateId);
}

function* touch(now: number, templateId: string, name: string): Query<void> {
  yield* run('UPDATE templates SET name = ?, updated_at = ? WHERE id = ?', name, now, templateId);
}
