// Email endpoints of this stage (API-SPEC.md 4.2): send one, send a batch, read an email's events.
// Sending goes through send/submit; Idempotency-Key covers a single send or a whole batch.
import type { App } from '../context.ts';
import { ApiError, notFound, validationError } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { claimOf } from '../http/idempotency.ts';
import { parseSendRequest } from '../send/request.ts';
import { submit, submitBatch } from '../send/submit.ts';
import { listEvents } from './events.ts';

export const MAX_BATCH = 100;

export function emailRoutes(app: App) {
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  r.post('/emails', auth, app.idempotency.middleware('POST /emails'), async (ctx) => {
    const req = parseSendRequest(ctx.request.body);
    ctx.body = await submit(app, principalOf(ctx).workspaceId, req, claimOf(ctx));
  });

  r.post('/emails/batch', auth, app.idempotency.middleware('POST /emails/batch'), async (ctx) => {
    const body = ctx.request.body as unknown;
    // API-SPEC: {emails: [...]}; Resend's SDK posts a bare array.
    const items = Array.isArray(body) ? body : (body as { emails?: unknown } | undefined)?.emails;
    if (!Array.isArray(items)) throw validationError('emails', 'must be an array of emails (or post a bare JSON array)');
    if (items.length === 0) throw validationError('emails', 'must hold at least one email');
    if (items.length > MAX_BATCH) throw validationError('emails', `at most ${MAX_BATCH} emails per batch, got ${items.length}`);
    const parsed = items.map((item) => {
      try {
        return parseSendRequest(item);
      } catch (err) {
        if (err instanceof ApiError) return err;
        throw err;
      }
    });
    if (ctx.get('x-batch-validation').toLowerCase() === 'strict') {
      const errors = parsed.flatMap((p, index) => (p instanceof ApiError ? (p.errors ?? [{ path: 'body', message: p.message }]).map((e) => ({ path: `emails.${index}.${e.path}`, message: e.message })) : []));
      if (errors.length) throw new ApiError(400, 'validation_error', `${errors[0].path}: ${errors[0].message}`, { errors });
    }
    ctx.body = await submitBatch(app, principalOf(ctx).workspaceId, parsed, claimOf(ctx));
  });

  r.get('/emails/:id/events', auth, (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    if (!app.db.prepare('SELECT 1 FROM emails WHERE workspace_id = ? AND id = ?').get(workspaceId, ctx.params.id)) throw notFound('Email');
    const data = listEvents(app.db, workspaceId, ctx.params.id);
    ctx.body = { data, count: data.length };
  });

  return r;
}
