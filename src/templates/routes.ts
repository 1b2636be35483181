// Hosted template endpoints (API-SPEC.md 4.1, section 3): create from a starter, list, show with releases and
// usage, the draft (replace with its revision, start from the release), render, test send, publish, archive
// and restore. Content is validated here once; the store only ever compares revisions and never edits a release.
import { z } from 'zod';
import type { App } from '../context.ts';
import { ApiError, notFound, validationError } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth, sendChannel } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { iso } from '../clock.ts';
import { parseMailbox } from '../mail/addresses.ts';
import { NO_CONTROL, templateData } from '../send/request.ts';
import { submit } from '../send/submit.ts';
import { STARTER_NAMES, UNSUBSCRIBE_KEY, VARIABLE_TYPES, type TemplateContent } from './content.ts';
import { typeProblem, VARIABLE_KEY } from './render.ts';
import { renderVersion } from './render-pool.ts';
import { starterContent } from './starters.ts';
import {
  contentOf,
  createTemplate,
  draftFromRelease,
  draftOf,
  draftSizeOf,
  listTemplates,
  publishDraft,
  releasesOf,
  saveDraft,
  setLifecycle,
  TemplateExists,
  templateByRef,
  usageOf,
  versionById,
  versionSize,
  type TemplateRow,
  type VersionRow,
} from './store.ts';
import { refuseOnErrors } from './use.ts';

const MAX_PART = 1024 * 1024;
const MAX_VARIABLES = 100;
const MAX_TEST_RECIPIENTS = 5;

const name = z.string().trim().min(1).max(200).regex(NO_CONTROL, 'must not contain control characters');
const key = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'must be 1 to 100 letters, digits, dots, underscores or dashes, starting with a letter or digit')
  .refine((k) => !k.toLowerCase().startsWith('tmpl_'), 'must not start with tmpl_ (ids do)');
const CreateBody = z.object({ name, key, starter: z.enum(STARTER_NAMES).optional() }).strict();

const variable = z
  .object({
    key: z.string().regex(VARIABLE_KEY, 'must be an identifier: a letter or _, then letters, digits or _ (at most 64)').refine((k) => k !== UNSUBSCRIBE_KEY, 'is filled by the box; use {{unsubscribe_url}} without declaring it'),
    type: z.enum(VARIABLE_TYPES),
    required: z.boolean().optional(),
  })
  .strict();
const DraftBody = z
  .object({
    revision: z.number().int().positive().optional(),
    name: name.optional(),
    subjectTemplate: z.string().max(2000).regex(NO_CONTROL, 'must not contain CR, LF or other control characters').optional(),
    htmlTemplate: z.string().max(MAX_PART).optional(),
    textTemplate: z.string().max(MAX_PART).optional(),
    variables: z.array(variable).max(MAX_VARIABLES).optional(),
    sampleData: z.unknown().optional(),
    messageClass: z.enum(['transactional', 'marketing']).optional(),
  })
  .strict();
const RenderBody = z.object({ data: z.unknown().optional() }).strict();
const TestBody = z
  .object({
    to: z.union([z.string(), z.array(z.string()).min(1).max(MAX_TEST_RECIPIENTS, `at most ${MAX_TEST_RECIPIENTS} addresses`)]),
    from: z.string(),
    data: z.unknown().optional(),
  })
  .strict();
const ListQuery = z.object({ lifecycle: z.enum(['active', 'archived']).optional(), query: z.string().max(200).optional() });

/** The draft's content after a PUT: given fields replace, omitted ones stay; variables and sample data agree. */
function replacedContent(current: TemplateContent, body: z.infer<typeof DraftBody>, rawSample: unknown): TemplateContent {
  const variables = body.variables?.map((v) => ({ key: v.key, type: v.type, required: v.required ?? false })) ?? current.variables;
  const seen = new Set<string>();
  variables.forEach((v, i) => {
    if (seen.has(v.key)) throw validationError(`variables.${i}.key`, `declares ${v.key} twice`);
    seen.add(v.key);
  });
  const sampleData = body.sampleData === undefined ? current.sampleData : templateData(rawSample, 'sampleData');
  const types = new Map(variables.map((v) => [v.key, v.type]));
  for (const [k, value] of Object.entries(sampleData)) {
    const type = types.get(k);
    if (!type) throw validationError(`sampleData.${k}`, 'is not a declared variable');
    const problem = value === null ? null : typeProblem(type, value);
    if (problem) throw validationError(`sampleData.${k}`, problem);
  }
  return {
    name: body.name ?? current.name,
    subjectTemplate: body.subjectTemplate ?? current.subjectTemplate,
    htmlTemplate: body.htmlTemplate ?? current.htmlTemplate,
    textTemplate: body.textTemplate ?? current.textTemplate,
    variables,
    sampleData,
    messageClass: body.messageClass ?? current.messageClass,
  };
}

const presentTemplate = (t: TemplateRow, hasDraft: boolean) => ({
  id: t.id,
  key: t.key,
  name: t.name,
  lifecycle: t.lifecycle,
  activeVersionId: t.active_version_id,
  hasDraft,
  createdAt: iso(t.created_at),
  updatedAt: iso(t.updated_at),
});

const presentVersion = (v: VersionRow) => {
  const c = contentOf(v);
  return {
    id: v.id,
    state: v.state,
    revision: v.revision,
    number: v.number,
    ...c,
    createdAt: iso(v.created_at),
    updatedAt: iso(v.updated_at),
    publishedAt: v.published_at === null ? null : iso(v.published_at),
  };
};

export function templateRoutes(app: App) {
  const { store, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  const templateOf = async (workspaceId: string, ref: string) => {
    const t = await store.read(templateByRef(workspaceId, ref));
    if (!t) throw notFound('Template');
    return t;
  };
  /** What render and test send use: the draft, else the active release (by size: render-pool.ts reads it). */
  function* workingVersion(t: TemplateRow) {
    return (yield* draftSizeOf(t.id)) ?? (t.active_version_id ? yield* versionSize(t.active_version_id) : undefined);
  }
  const preview = async (workspaceId: string, t: TemplateRow, rawData: unknown) => {
    const v = (await store.read(workingVersion(t)))!;
    const options = { useSampleData: true, keepUnsubscribe: v.message_class === 'marketing' };
    return { version: v, rendered: await renderVersion(app, workspaceId, v, templateData(rawData, 'data'), options) };
  };

  r.get('/templates', auth, async (ctx) => {
    const q = parseInput(ListQuery, ctx.query, 'query');
    const data = (await store.read(listTemplates(principalOf(ctx).workspaceId, q))).map((t) => presentTemplate(t, t.has_draft === 1));
    ctx.body = { data, count: data.length };
  });

  r.post('/templates', auth, async (ctx) => {
    const body = parseInput(CreateBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const created = await store.write(function* () {
      try {
        return yield* createTemplate(clock.now(), workspaceId, body.key, starterContent(body.starter ?? 'blank', body.name));
      } catch (err) {
        if (err instanceof TemplateExists) throw new ApiError(409, 'template_exists', `A template with the key "${body.key}" already exists in this workspace`);
        throw err;
      }
    });
    ctx.status = 201;
    ctx.body = { template: { id: created.template.id, key: created.template.key } };
  });

  r.get('/templates/:id', auth, async (ctx) => {
    const t = await templateOf(principalOf(ctx).workspaceId, ctx.params.id);
    const { draft, releases, usage } = await store.read(
      (function* () {
        return { draft: yield* draftOf(t.id), releases: yield* releasesOf(t.id), usage: yield* usageOf(t.id) };
      })(),
    );
    const active = releases.find((v) => v.id === t.active_version_id);
    ctx.body = {
      template: presentTemplate(t, Boolean(draft)),
      versions: releases.map((v) => ({ id: v.id, state: v.state, number: v.number, name: v.name, subjectTemplate: v.subject_template, publishedAt: iso(v.published_at!) })),
      draft: draft ? presentVersion(draft) : null,
      activeVersion: active ? presentVersion(active) : null,
      usage: usage.map((u) => ({ versionId: u.versionId, emails: u.emails, lastSentAt: u.lastSentAt === null ? null : iso(u.lastSentAt) })),
    };
  });

  // Beyond the spec: one release (or the draft) whole, since the list gives releases in summary.
  r.get('/templates/:id/versions/:version_id', auth, async (ctx) => {
    const t = await templateOf(principalOf(ctx).workspaceId, ctx.params.id);
    const v = await store.read(versionById(ctx.params.version_id));
    if (!v || v.template_id !== t.id) throw notFound('Template version');
    ctx.body = { version: presentVersion(v) };
  });

  r.put('/templates/:id/draft', auth, async (ctx) => {
    const body = parseInput(DraftBody, ctx.request.body);
    const t = await templateOf(principalOf(ctx).workspaceId, ctx.params.id);
    const rawSample = (ctx.request.body as { sampleData?: unknown }).sampleData;
    const answer = await store.write(function* () {
      const draft = yield* draftOf(t.id);
      if (!draft) throw new ApiError(409, 'revision_conflict', `Template "${t.key}" has no draft: POST /templates/${t.id}/draft starts one from the published release`);
      if (body.revision !== draft.revision) {
        throw new ApiError(409, 'revision_conflict', `The draft is at revision ${draft.revision}${body.revision === undefined ? '; send it as revision' : `, not ${body.revision}`}: load it again and reapply your change`);
      }
      const revision = yield* saveDraft(clock.now(), t.id, draft.revision, replacedContent(contentOf(draft), body, rawSample));
      if (revision === null) throw new ApiError(409, 'revision_conflict', 'The draft changed meanwhile: load it again and reapply your change');
      return { draft: { id: draft.id, revision } };
    });
    ctx.body = answer;
  });

  r.post('/templates/:id/draft', auth, async (ctx) => {
    const t = await templateOf(principalOf(ctx).workspaceId, ctx.params.id);
    const draft = await store.write(function* () {
      if (yield* draftOf(t.id)) throw new ApiError(409, 'draft_exists', `Template "${t.key}" already has a draft: PUT /templates/${t.id}/draft changes it`);
      const release = t.active_version_id ? yield* versionById(t.active_version_id) : undefined;
      if (!release) throw validationError('template', `template "${t.key}" has nothing published to start a draft from`);
      return yield* draftFromRelease(clock.now(), t, release);
    });
    ctx.status = 201;
    ctx.body = { draft: { id: draft.id, revision: draft.revision } };
  });

  r.post('/templates/:id/render', auth, async (ctx) => {
    const body = parseInput(RenderBody, ctx.request.body ?? {});
    const workspaceId = principalOf(ctx).workspaceId;
    const { rendered } = await preview(workspaceId, await templateOf(workspaceId, ctx.params.id), body.data);
    ctx.body = { subject: rendered.subject, html: rendered.html, text: rendered.text, findings: rendered.findings, findingsOmitted: rendered.findingsOmitted };
  });

  r.post('/templates/:id/test', auth, async (ctx) => {
    const body = parseInput(TestBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const t = await templateOf(workspaceId, ctx.params.id);
    if (t.lifecycle === 'archived') throw validationError('template', `template "${t.key}" is archived and cannot be sent: POST /templates/${t.id}/restore first`);
    const address = (s: string, path: string) => {
      const m = parseMailbox(s);
      if (!m.ok) throw validationError(path, m.reason);
      return m.mailbox;
    };
    const to = (typeof body.to === 'string' ? [body.to] : body.to).map((s, i) => address(s, typeof body.to === 'string' ? 'to' : `to.${i}`));
    const { version: v, rendered } = await preview(workspaceId, t, body.data);
    refuseOnErrors(rendered, t.key, 'data');
    const sent = await submit(app, workspaceId, {
      from: address(body.from, 'from'),
      to,
      cc: [],
      bcc: [],
      replyTo: [],
      subject: rendered.subject,
      ...(rendered.html ? { html: rendered.html } : {}),
      ...(rendered.text ? { text: rendered.text } : {}),
      headers: {},
      attachments: [],
      tags: [],
      labels: [],
      messageClass: v.message_class,
      origin: { templateId: t.id, versionId: v.id, test: true },
      sentBy: sendChannel(principalOf(ctx)),
    });
    ctx.status = 201;
    ctx.body = { id: sent.id, isTest: true };
  });

  r.post('/templates/:id/publish', auth, async (ctx) => {
    const t = await templateOf(principalOf(ctx).workspaceId, ctx.params.id);
    const version = await store.write(function* () {
      const draft = yield* draftOf(t.id);
      if (!draft) throw new ApiError(409, 'no_draft', `Template "${t.key}" has no draft to publish: POST /templates/${t.id}/draft starts one`);
      return yield* publishDraft(clock.now(), t.id, draft.id);
    });
    ctx.status = 201;
    ctx.body = { version: { id: version.id, state: version.state, number: version.number } };
  });

  r.post('/templates/:id/archive', auth, async (ctx) => {
    const t = await templateOf(principalOf(ctx).workspaceId, ctx.params.id);
    if (t.lifecycle !== 'archived') await store.write(() => setLifecycle(clock.now(), t.id, 'archived'));
    ctx.body = { template: { id: t.id, lifecycle: 'archived' } };
  });

  r.post('/templates/:id/restore', auth, async (ctx) => {
    const t = await templateOf(principalOf(ctx).workspaceId, ctx.params.id);
    if (t.lifecycle === 'active') throw new ApiError(409, 'template_active', `Template "${t.key}" is active; only an archived template can be restored`);
    await store.write(() => setLifecycle(clock.now(), t.id, 'active'));
    ctx.body = { template: { id: t.id, lifecycle: 'active' } };
  });

  return r;
}
