// Email endpoints (API-SPEC.md 4.2, 4.6): send one, send a batch; one email of the mailbox (read, change,
// move to the Trash and back, delete for good, its raw bytes, its events), emptying the Trash, a thread, and
// the download of an email's attachment. Sending goes
// through send/submit; Idempotency-Key covers a single send or a whole batch. The list (GET /emails) is
// mounted by its own router.
import { z } from 'zod';
import type { App } from '../context.ts';
import { get } from '../db/query.ts';
import type { EmailRecord } from './mailbox.ts';
import { ApiError, notFound, validationError } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth, scopeOf, sendChannel, type Principal } from '../http/auth.ts';
import { claimOf, idempotent } from '../http/idempotency.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { attachmentDisposition } from '../http/content-disposition.ts';
import { parseSendRequest, scheduledAt } from '../send/request.ts';
import { submit, submitBatch } from '../send/submit.ts';
import { cancelScheduled, reschedule, scheduleTime } from '../send/schedule.ts';
import { listEvents } from './events.ts';
import { deleteEmail, emailRaw, getEmail, getThread, patchEmail } from './mailbox.ts';
import { displayHtml, displayPolicy } from './display.ts';
import { emptyTrash } from './trash.ts';
import { learnInRspamd } from '../filter/rspamd.ts';
import { checkSendFrom } from '../account/key-scope.ts';
import { withinScope } from './scope.ts';

export const MAX_BATCH = 100;

/** How a send came in and, for a key, which one (a sending key reads back its own sends). */
const sender = (p: Principal) => ({ sentBy: sendChannel(p), ...(p.kind === 'key' ? { sentByKey: p.keyId } : {}) });
/** How long rspamd's controller has to learn one correction (a learn reads the whole message). */
const RSPAMD_LEARN_TIMEOUT_MS = 10_000;

const PatchBody = z
  .object({
    read: z.boolean().optional(),
    archived: z.boolean().optional(),
    category: z.enum(['primary', 'updates', 'spam']).optional(),
    important: z.boolean().optional(),
    trashed: z.boolean().optional(),
    learn: z.boolean().optional(),
    scheduled_at: scheduledAt.optional(),
  })
  .strict()
  .refine((b) => b.read !== undefined || b.archived !== undefined || b.category !== undefined || b.important !== undefined || b.trashed !== undefined || b.scheduled_at !== undefined, {
    message: 'give at least one of read, archived, category, important, trashed, scheduled_at',
  });

export function emailRoutes(app: App) {
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  r.post('/emails', auth, idempotent(app.idempotency, 'POST /emails'), async (ctx) => {
    const req = parseSendRequest(ctx.request.body);
    const principal = principalOf(ctx);
    checkSendFrom(scopeOf(principal), req.from.address);
    ctx.body = await submit(app, principal.workspaceId, { ...req, ...sender(principal) }, claimOf(ctx));
  });

  r.post('/emails/batch', auth, idempotent(app.idempotency, 'POST /emails/batch'), async (ctx) => {
    const body = ctx.request.body as unknown;
    // API-SPEC: {emails: [...]}; Resend's SDK posts a bare array.
    const items = Array.isArray(body) ? body : (body as { emails?: unknown } | undefined)?.emails;
    if (!Array.isArray(items)) throw validationError('emails', 'must be an array of emails (or post a bare JSON array)');
    if (items.length === 0) throw validationError('emails', 'must hold at least one email');
    if (items.length > MAX_BATCH) throw validationError('emails', `at most ${MAX_BATCH} emails per batch, got ${items.length}`);
    const by = sender(principalOf(ctx));
    const parsed = items.map((item) => {
      try {
        return { ...parseSendRequest(item), ...by };
      } catch (err) {
        if (err instanceof ApiError) return err;
        throw err;
      }
    });
    if (ctx.get('x-batch-validation').toLowerCase() === 'strict') {
      const errors = parsed.flatMap((p, index) => (p instanceof ApiError ? (p.errors ?? [{ path: 'body', message: p.message }]).map((e) => ({ path: `emails.${index}.${e.path}`, message: e.message })) : []));
      if (errors.length) throw new ApiError(400, 'validation_error', `${errors[0].path}: ${errors[0].message}`, { errors });
    }
    // A From the key may not use refuses the whole batch, as a permission is the request's, not an item's.
    for (const p of parsed) if (!(p instanceof ApiError)) checkSendFrom(scopeOf(principalOf(ctx)), p.from.address);
    ctx.body = await submitBatch(app, principalOf(ctx).workspaceId, parsed, claimOf(ctx));
  });

  r.get('/emails/:id/events', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    ctx.body = await app.store.read(
      (function* () {
        if (!(yield* get('SELECT 1 FROM emails WHERE workspace_id = ? AND id = ?', workspaceId, ctx.params.id))) throw notFound('Email');
        // A list like every other (DESIGN.md "lists"): an email's events are many once it is tracked.
        const page = parsePage(ctx.query);
        return pageOf(yield* listEvents(workspaceId, ctx.params.id, { limit: page.limit + 1, offset: page.offset }), page);
      })(),
    );
  });

  r.get('/emails/:id', auth, async (ctx) => {
    // One moment for the row and its recipients: the status is their sum, written with them.
    const email = await app.store.read(getEmail(principalOf(ctx).workspaceId, ctx.params.id), { snapshot: true });
    if (!email) throw notFound('Email');
    ctx.body = email;
  });

  // Beyond the spec: the message as RFC 5322 bytes. Sent mail has them once the queue has composed and
  // signed it (just before its first delivery attempt); until then, 409. Mail sent as one copy per recipient
  // (unsubscribe links, tracking) answers with the copy `?recipient=` names.
  r.get('/emails/:id/raw', auth, async (ctx) => {
    const recipient = typeof ctx.query.recipient === 'string' && ctx.query.recipient !== '' ? ctx.query.recipient : undefined;
    const found = await emailRaw(app.store, principalOf(ctx).workspaceId, ctx.params.id, recipient);
    if (!found) throw notFound('Email');
    if (found.perRecipient && recipient === undefined) {
      throw new ApiError(409, 'per_recipient_copies', 'This email went out as one signed copy per recipient (unsubscribe links or tracking): ask for one with ?recipient=<address>');
    }
    if (found.expired) throw new ApiError(410, 'raw_expired', 'The raw bytes of this email were removed by the retention policy (retention_raw_days); its text, HTML and files are kept');
    if (!found.raw) {
      throw found.perRecipient
        ? new ApiError(409, 'raw_not_ready', `No signed copy for ${recipient} yet: it is not a recipient of this email, or its copy is still being signed (just after the send, or before a scheduled send's first attempt)`)
        : new ApiError(409, 'raw_not_ready', 'This sent email has not been composed and signed yet: it is signed just after the send is accepted (a scheduled send at its time)');
    }
    ctx.body = found.raw;
    ctx.set('Content-Type', 'message/rfc822');
    ctx.set('Content-Disposition', attachmentDisposition(`${ctx.params.id}.eml`));
    ctx.set('X-Content-Type-Options', 'nosniff');
  });

  // Beyond the spec, for the dashboard's reading pane: the HTML to show, sandboxed by its own CSP, remote
  // images blocked unless `?images=1`. Never cached: it is someone's mail.
  r.get('/emails/:id/html', auth, async (ctx) => {
    const html = await app.store.read(displayHtml(principalOf(ctx).workspaceId, ctx.params.id));
    if (html === null) throw notFound('Email');
    ctx.set('Content-Security-Policy', displayPolicy(ctx.query.images === '1'));
    ctx.set('X-Frame-Options', 'SAMEORIGIN'); // shown in the dashboard's own frame, nowhere else
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', 'private, no-store');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  });

  r.patch('/emails/:id', auth, async (ctx) => {
    const { scheduled_at, ...patch } = parseInput(PatchBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const id = ctx.params.id;
    const at = scheduled_at === undefined ? undefined : scheduleTime(scheduled_at, app.clock.now());
    const flags = Object.values(patch).some((v) => v !== undefined);
    // Where rspamd is the filter, a move into or out of Spam is told to it once committed.
    const before = patch.category !== undefined && app.config.spamFilter === 'rspamd' ? (await app.store.read(getEmail(workspaceId, id, { recipients: false })))?.category : undefined;
    const answer = await app.store.write(function* () {
      if (at !== undefined && !(yield* reschedule(app, workspaceId, id, at))) return null;
      return flags ? yield* patchEmail(app.clock.now(), workspaceId, id, patch) : yield* getEmail(workspaceId, id, { recipients: false });
    });
    if (!answer) throw notFound('Email');
    if (at !== undefined) app.scheduler.wake();
    if (before !== undefined && 'category' in answer && (before === 'spam') !== (answer.category === 'spam')) teachRspamd(app, workspaceId, id, answer.category === 'spam' ? 'spam' : 'ham');
    // A move to or from Spam was queued for the spam filter in that commit (emails/mailbox.ts teachFilter).
    if (patch.category !== undefined) app.spamTrainer?.wake();
    const e = flags ? null : (answer as EmailRecord);
    ctx.body = e
      ? { id: e.id, status: e.status, scheduledAt: e.scheduledAt, readAt: e.readAt, archivedAt: e.archivedAt, trashedAt: e.trashedAt, category: e.category, important: e.important, classification: e.classification }
      : answer;
  });

  r.post('/emails/:id/cancel', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    if (!(await app.store.write(() => cancelScheduled(app, workspaceId, ctx.params.id)))) throw notFound('Email');
    ctx.body = { id: ctx.params.id, status: 'canceled' };
  });

  // DESIGN.md "trash": deletes for good every email that was in the Trash when asked; `deleted` says how many.
  r.post('/emails/trash/empty', auth, async (ctx) => {
    ctx.body = { deleted: await emptyTrash(app, principalOf(ctx).workspaceId) };
  });

  // Permanent, as the API contract names it; the dashboard's Delete moves to the Trash (PATCH trashed) instead.
  r.delete('/emails/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    if (!(await app.store.write(() => deleteEmail(workspaceId, ctx.params.id)))) throw notFound('Email');
    ctx.body = { ok: true };
  });

  // Trashed messages are left out, or with ?trashed=true are the only ones shown (DESIGN.md "trash").
  r.get('/threads/:id', auth, async (ctx) => {
    const trashed = ctx.query.trashed;
    if (trashed !== undefined && trashed !== 'true' && trashed !== 'false') throw validationError('trashed', 'must be true or false');
    const principal = principalOf(ctx);
    const found = await app.store.read(getThread(principal.workspaceId, ctx.params.id, trashed === 'true'));
    // An inbox key sees its inboxes' messages of the thread; a thread it has none of is not found.
    const data = found && (await app.store.read(withinScope(principal.workspaceId, scopeOf(principal), found)));
    if (!data || (found!.length > 0 && data.length === 0)) throw notFound('Thread');
    ctx.body = { id: ctx.params.id, data, count: data.length };
  });

  return r;
}

/**
 * The owner's correction told to rspamd's controller, after the answer: it learns from the message as
 * stored. rspamd down or refusing is a log line; the move itself is done either way.
 */
function teachRspamd(app: App, workspaceId: string, id: string, as: 'spam' | 'ham'): void {
  const { rspamdControllerUrl: controllerUrl, rspamdPassword: password } = app.config;
  void (async () => {
    const found = await emailRaw(app.store, workspaceId, id);
    if (!found?.raw) return;
    const answer = await learnInRspamd({ controllerUrl, password, timeoutMs: RSPAMD_LEARN_TIMEOUT_MS }, found.raw, as);
    if (answer.ok) app.log.info("told rspamd the owner's correction", { emailId: id, as, answer: answer.value });
    else app.log.warn("could not tell rspamd the owner's correction", { emailId: id, as, problem: answer.problem });
  })().catch((err: unknown) => app.log.warn("could not tell rspamd the owner's correction", { emailId: id, as, err }));
}
