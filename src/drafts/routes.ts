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
import { pageOf, parsePage } from '../http/pagination.ts';
import { readRawBody } from '../http/raw-body.ts';
import { attachmentDisposition, downloadType } from '../http/content-disposition.ts';
import { filenameFromHeader } from '../mail/filenames.ts';
import { getAttachment } from '../emails/mailbox.ts';
import { runOn } from '../db/sqlite-query.ts';
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
  fileContents,
  listDrafts,
  replaceDraft,
  room,
  tooManyBytes,
  tooManyFiles,
  type DraftRow,
} from './drafts.ts';

const SendBody = z.object({ scheduled_at: scheduledAt.optional() }).strict();

export function draftRoutes(app: App) {
  const { db, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  const present = (d: DraftRow) => presentDraft(db, d);
  const draftOf = (workspaceId: string, id: string) => {
    const d = draftById(db, workspaceId, id);
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
    const id = await app.commit.run(() => createDraft(db, clock.now(), workspaceId, fields));
    ctx.status = 201;
    ctx.body = present(draftOf(workspaceId, id));
  });

  r.get('/drafts', auth, (ctx) => {
    const page = parsePage(ctx.query);
    const rows = listDrafts(db, principalOf(ctx).workspaceId, page.limit + 1, page.offset);
    const { data, count, hasMore } = pageOf(rows, page);
    ctx.body = { data: data.map(present), count, hasMore };
  });

  r.get('/drafts/:id', auth, (ctx) => {
    ctx.body = present(draftOf(principalOf(ctx).workspaceId, ctx.params.id));
  });

  r.put('/drafts/:id', auth, async (ctx) => {
    const fields = fieldsOf(ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    if (!(await app.commit.run(() => replaceDraft(db, clock.now(), workspaceId, ctx.params.id, fields)))) throw notFound('Draft');
    ctx.body = { id: ctx.params.id };
  });

  r.delete('/drafts/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    if (!(await app.commit.run(() => deleteDraft(db, workspaceId, ctx.params.id)))) throw notFound('Draft');
    ctx.body = { ok: true };
  });

  // The file is the body (start/front-doors.ts keeps the JSON parser off this path). Room is checked before a byte is read
  // and again when the file is stored, so two uploads at once cannot pass the caps together.
  r.post('/drafts/:id/attachments', auth, async (ctx) => {
    const draft = draftOf(principalOf(ctx).workspaceId, ctx.params.id);
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
    const left = room(db, draft.id);
    if (left.files < 1) {
      ctx.set('Connection', 'close');
      throw tooManyFiles();
    }
    const content = await readRawBody(ctx, { maxBytes: Math.max(0, left.bytes), timeoutMs: app.config.uploadTimeout, tooLarge: tooManyBytes });
    const filename = filenameFromHeader(ctx.get('X-Filename') || undefined);
    const file = await app.commit.run(() => addFile(db, clock.now(), draft, { filename, contentType: type.type, content }));
    ctx.status = 201;
    ctx.body = presentFile(file);
  });

  r.post('/drafts/:id/send', auth, idempotent(app.idempotency, (ctx) => `POST /drafts/${ctx.params.id}/send`), async (ctx) => {
    parseInput(SendBody, ctx.request.body ?? {});
    const at = (ctx.request.body as { scheduled_at?: string } | undefined)?.scheduled_at;
    const workspaceId = principalOf(ctx).workspaceId;
    const draft = draftOf(workspaceId, ctx.params.id);
    // Judged as POST /emails judges a body: a draft saved half-written is refused here, naming the field.
    const req = parseSendRequest({ ...(JSON.parse(draft.body_json) as object), ...(at !== undefined ? { scheduled_at: at } : {}) });
    req.sentBy = sendChannel(principalOf(ctx));
    req.attachments = fileContents(db, draft.id).map((f) => ({ filename: f.filename, contentType: f.content_type, content: f.content }));
    ctx.body = await submit(app, workspaceId, req, claimOf(ctx), [{ kind: 'drafts.sent', payload: { workspaceId, draftId: draft.id } }]);
  });

  // DESIGN.md "attachment download": the original bytes, the stored type, always a download, never sniffed.
  r.get('/attachments/:id', auth, (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    // Bridge: a synchronous route of drafts/ (async once draftFile is a query).
    const a = draftFile(db, workspaceId, ctx.params.id) ?? runOn(db, getAttachment(workspaceId, ctx.params.id));
    if (!a) throw notFound('Attachment');
    ctx.body = a.content;
    ctx.set('Content-Type', downloadType(a.content_type));
    ctx.set('Content-Disposition', attachmentDisposition(a.filename));
    ctx.set('X-Content-Type-Options', 'nosniff');
  });

  r.delete('/attachments/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const id = ctx.params.id;
    if (await app.commit.run(() => deleteFile(db, workspaceId, id))) {
      ctx.body = { ok: true };
      return;
    }
    if (await app.store.read(getAttachment(workspaceId, id))) throw new ApiError(409, 'attachment_of_email', 'This attachment belongs to a sent or received email, which keeps it; only a draft\'s files can be deleted');
    throw notFound('Attachment');
  });

  return r;
}
