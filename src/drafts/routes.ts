// Composer draft endpoints (API-SPEC.md 4.6): save, list, show, replace and delete drafts; upload a file to a
// draft as the raw request body; send a draft (now or at `scheduled_at`); and the private attachment store:
// download any attachment of the workspace (a draft's, a sent or a received email's), delete a draft's.
import { z } from 'zod';
import type { App } from '../context.ts';
import { ApiError, notFound, validationError } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth, sendChannel } from '../http/auth.ts';
import { claimOf, idempotent } from '../http/idempotency.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage, type Page } from '../http/pagination.ts';
import { readRawBody } from '../http/raw-body.ts';
import { attachmentDisposition, downloadType } from '../http/content-disposition.ts';
import { filenameFromHeader } from '../mail/filenames.ts';
import { getAttachment } from '../emails/mailbox.ts';
import { canonicalMediaType, DraftFields, parseSendRequest, scheduledAt } from '../send/request.ts';
import { refuseWhenDiskLow, submit } from '../send/submit.ts';
import {
  addFile,
  createDraft,
  deleteDraft,
  deleteFile,
  draftById,
  draftFile,
  presentDraft,
  presentFile,
  shownDraft,
  fileContents,
  listDrafts,
  replaceDraft,
  room,
  tooManyBytes,
  tooManyFiles,
  type DraftRow,
} from './drafts.ts';

const SendBody = z.object({ scheduled_at: scheduledAt.optional() }).strict();

/** A page of drafts as shown, newest change first. */
function* draftPage(workspaceId: string, page: Page) {
  const { data, count, hasMore } = pageOf(yield* listDrafts(workspaceId, page.limit + 1, page.offset), page);
  const shown = [];
  for (const d of data) shown.push(yield* presentDraft(d));
  return { data: shown, count, hasMore };
}

export function draftRoutes(app: App) {
  const { store, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  const draftOf = async (workspaceId: string, id: string): Promise<DraftRow> => {
    const d = await store.read(draftById(workspaceId, id));
    if (!d) throw notFound('Draft');
    return d;
  };
  const shown = async (workspaceId: string, id: string) => {
    const d = await store.read(shownDraft(workspaceId, id));
    if (!d) throw notFound('Draft');
    return d;
  };
  /** The body as it is kept: validated like a send's fields, stored as given. */
  const fieldsOf = (input: unknown): Record<string, unknown> => {
    parseInput(DraftFields, input ?? {});
    return (input ?? {}) as Record<string, unknown>;
  };

  r.post('/drafts', auth, async (ctx) => {
    const fields = fieldsOf(ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const id = await store.write(() => createDraft(clock.now(), workspaceId, fields));
    ctx.status = 201;
    ctx.body = await shown(workspaceId, id);
  });

  r.get('/drafts', auth, async (ctx) => {
    const page = parsePage(ctx.query);
    ctx.body = await store.read(draftPage(principalOf(ctx).workspaceId, page));
  });

  r.get('/drafts/:id', auth, async (ctx) => {
    ctx.body = await shown(principalOf(ctx).workspaceId, ctx.params.id);
  });

  r.put('/drafts/:id', auth, async (ctx) => {
    const fields = fieldsOf(ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    if (!(await store.write(() => replaceDraft(clock.now(), workspaceId, ctx.params.id, fields)))) throw notFound('Draft');
    ctx.body = { id: ctx.params.id };
  });

  r.delete('/drafts/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    if (!(await store.write(() => deleteDraft(workspaceId, ctx.params.id)))) throw notFound('Draft');
    ctx.body = { ok: true };
  });

  // The file is the body (start/front-doors.ts keeps the JSON parser off this path). Room is checked before a byte is read
  // and again when the file is stored, so two uploads at once cannot pass the caps together.
  r.post('/drafts/:id/attachments', auth, async (ctx) => {
    const draft = await draftOf(principalOf(ctx).workspaceId, ctx.params.id);
    if (app.disk?.low) {
      ctx.set('Connection', 'close');
      refuseWhenDiskLow(app);
    }
    const rawType = ctx.get('Content-Type');
    const type = rawType ? canonicalMediaType(rawType) : ({ ok: true, type: 'application/octet-stream' } as const);
    if (!type.ok) {
      ctx.set('Connection', 'close');
      throw validationError('Content-Type', type.reason);
    }
    const left = await store.read(room(draft.id));
    if (left.files < 1) {
      ctx.set('Connection', 'close');
      throw tooManyFiles();
    }
    const content = await readRawBody(ctx, { maxBytes: Math.max(0, left.bytes), timeoutMs: app.config.uploadTimeout, tooLarge: tooManyBytes });
    const filename = filenameFromHeader(ctx.get('X-Filename') || undefined);
    const file = await store.write(() => addFile(clock.now(), draft, { filename, contentType: type.type, content }));
    ctx.status = 201;
    ctx.body = presentFile(file);
  });

  r.post('/drafts/:id/send', auth, idempotent(app.idempotency, (ctx) => `POST /drafts/${ctx.params.id}/send`), async (ctx) => {
    parseInput(SendBody, ctx.request.body ?? {});
    const at = (ctx.request.body as { scheduled_at?: string } | undefined)?.scheduled_at;
    const workspaceId = principalOf(ctx).workspaceId;
    const draft = await draftOf(workspaceId, ctx.params.id);
    // Judged as POST /emails judges a body: a draft saved half-written is refused here, naming the field.
    const req = parseSendRequest({ ...(JSON.parse(draft.body_json) as object), ...(at !== undefined ? { scheduled_at: at } : {}) });
    req.sentBy = sendChannel(principalOf(ctx));
    req.attachments = (await store.read(fileContents(draft.id))).map((f) => ({ filename: f.filename, contentType: f.content_type, content: f.content }));
    ctx.body = await submit(app, workspaceId, req, claimOf(ctx), [{ kind: 'drafts.sent', payload: { workspaceId, draftId: draft.id } }]);
  });

  // DESIGN.md "attachment download": the original bytes, the stored type, always a download, never sniffed.
  r.get('/attachments/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const a = (await store.read(draftFile(workspaceId, ctx.params.id))) ?? (await store.read(getAttachment(workspaceId, ctx.params.id)));
    if (!a) throw notFound('Attachment');
    ctx.body = a.content;
    ctx.set('Content-Type', downloadType(a.content_type));
    ctx.set('Content-Disposition', attachmentDisposition(a.filename));
    ctx.set('X-Content-Type-Options', 'nosniff');
  });

  r.delete('/attachments/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const id = ctx.params.id;
    if (await store.write(() => deleteFile(workspaceId, id))) {
      ctx.body = { ok: true };
      return;
    }
    if (await app.store.read(getAttachment(workspaceId, id))) throw new ApiError(409, 'attachment_of_email', 'This attachment belongs to a sent or received email, which keeps it; only a draft\'s files can be deleted');
    throw notFound('Attachment');
  });

  return r;
}
