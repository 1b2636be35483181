// Webhook endpoints: register, list, show, change, delete, rotate the secret; the deliveries of an
// endpoint with one replayed or a window replayed; a signed webhook.test; and the live event stream
// (GET /events/stream, Server-Sent Events). The secret is shown once, at creation and at rotation.
import { actorOf, type AuditAction, recordAudit } from '../account/audit.ts';
import type { PassThrough } from 'node:stream';
import { z } from 'zod';
import type { App } from '../context.ts';
import { notFound, validationError } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth, scopeOf, type Scope } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { iso } from '../clock.ts';
import { checkUrl, FetchRefused } from '../dns/safe-fetch.ts';
import { EVENT_TYPES, webhookEventType } from '../emails/events.ts';
import { DOMAIN_EVENT_TYPES } from '../domains/domain-events.ts';
import { getInbox } from '../inboxes/inboxes.ts';
import { boxSecret } from '../db/box-secret.ts';
import { get, type Query } from '../db/query.ts';
import { createWebhook, deleteWebhook, listWebhooks, present, rotateSecret, ROTATION_OVERLAP_MS, updateWebhook, webhookById, type WebhookRow, type WebhookSettings } from './endpoints.ts';
import { addTestDelivery, deliveryById, listDeliveries, presentDelivery, replay } from './outbox.ts';
import type { WebhookDispatcher } from './deliver.ts';
import { parseLastEventId, type EventStream } from './stream.ts';
import { StreamSlots, TooManyStreams } from './stream-slots.ts';
import { clientKey } from '../dns/ip-ranges.ts';

// Email events, then the events about a domain, an inbox or a key (domain.dmarc_failure, key.created, ...).
const TYPES: string[] = [...EVENT_TYPES.map(webhookEventType), ...DOMAIN_EVENT_TYPES];
const events = z
  .array(z.string().refine((t) => t === '*' || TYPES.includes(t), `must be "*" or one of ${TYPES.join(', ')}`))
  .min(1)
  .max(TYPES.length + 1);
const url = z.string().max(2000);
const id = z.string().max(100).nullable();
const description = z.string().max(500).regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters');
const CreateBody = z.object({ url, events, inbox_id: id.optional(), domain_id: id.optional(), description: description.optional() }).strict();
const PatchBody = z
  .object({ url: url.optional(), events: events.optional(), inbox_id: id.optional(), domain_id: id.optional(), description: description.optional(), enabled: z.boolean().optional() })
  .strict();
const DeliveryQuery = z.object({ status: z.enum(['pending', 'delivered', 'failed']).optional(), limit: z.string().optional(), offset: z.string().optional() }).strict();
const time = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 time').transform((s) => Date.parse(s));
const ReplayBody = z.object({ since: time, until: time.optional(), status: z.enum(['pending', 'delivered', 'failed']).optional() }).strict();
const StreamQuery = z.object({ types: z.string().max(2000).optional(), inbox_id: z.string().max(100).optional() }).strict();

export function webhookRoutes(app: App, dispatcher: Pick<WebhookDispatcher, 'wake'>, stream: Pick<EventStream, 'open'>) {
  const { store, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);
  const slots = new StreamSlots();

  function* foundWebhook(workspaceId: string, id: string): Query<WebhookRow> {
    const w = yield* webhookById(workspaceId, id);
    if (!w) throw notFound('Webhook');
    return w;
  }
  const webhookOf = (workspaceId: string, id: string) => store.read(foundWebhook(workspaceId, id));
  /** https (http only in lab mode), no user info, and no private address written as the host. */
  const checkedUrl = (url: string) => {
    try {
      checkUrl(url, { allowPrivate: app.config.allowPrivateFetch, allowHttp: app.config.allowPrivateFetch });
    } catch (err) {
      if (err instanceof FetchRefused) throw validationError('url', err.message);
      throw err;
    }
    return url;
  };
  // An inbox key's webhooks are each for one of its inboxes, so they carry that inbox's events alone.
  function* filters(workspaceId: string, inboxId: string | null | undefined, domainId: string | null | undefined, scope: Scope, creating = false): Query<void> {
    if (scope.permission === 'inbox_access' && creating && !inboxId) throw validationError('inbox_id', 'is required with an inbox_access key: one of its inboxes');
    if (inboxId && (!(yield* getInbox(workspaceId, inboxId)) || (scope.permission === 'inbox_access' && !scope.inboxIds.includes(inboxId)))) throw validationError('inbox_id', `no inbox ${inboxId} in this workspace`);
    if (domainId && !(yield* get('SELECT 1 FROM domains WHERE workspace_id = ? AND id = ?', workspaceId, domainId))) throw validationError('domain_id', `no domain ${domainId} in this workspace`);
  }

  /** The audit row of a change to an endpoint, named by its URL; never its secret. */
  const audit = (actor: ReturnType<typeof actorOf>, w: { id: string; workspace_id: string; url: string }, action: AuditAction, data: Record<string, unknown>) =>
    recordAudit(clock.now(), actor, { workspaceId: w.workspace_id, action, target: { type: 'webhook', id: w.id, name: w.url }, data });

  r.post('/webhooks', auth, async (ctx) => {
    const body = parseInput(CreateBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    await store.read(filters(workspaceId, body.inbox_id, body.domain_id, scopeOf(principalOf(ctx)), true));
    const settings: WebhookSettings = { url: checkedUrl(body.url), events: [...new Set(body.events)], inboxId: body.inbox_id ?? null, domainId: body.domain_id ?? null, description: body.description ?? '' };
    const actor = actorOf(principalOf(ctx), ctx.ip);
    const box = await boxSecret(store);
    const { webhook, secret } = await store.write(function* () {
      const made = yield* createWebhook(clock.now(), workspaceId, settings, box);
      yield* audit(actor, made.webhook, 'webhook.created', { url: settings.url, events: settings.events, inboxId: settings.inboxId, domainId: settings.domainId });
      return made;
    });
    ctx.status = 201;
    ctx.body = { ...present(webhook), secret };
  });

  r.get('/webhooks', auth, async (ctx) => {
    const page = parsePage(ctx.query);
    const scope = scopeOf(principalOf(ctx));
    const only = scope.permission === 'inbox_access' ? scope.inboxIds : undefined;
    const { data, count, hasMore } = pageOf(await store.read(listWebhooks(principalOf(ctx).workspaceId, page.limit + 1, page.offset, only)), page);
    ctx.body = { data: data.map(present), count, hasMore };
  });

  r.get('/webhooks/:id', auth, async (ctx) => {
    ctx.body = present(await webhookOf(principalOf(ctx).workspaceId, ctx.params.id));
  });

  r.patch('/webhooks/:id', auth, async (ctx) => {
    const body = parseInput(PatchBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const w = await store.read(
      (function* () {
        const w = yield* foundWebhook(workspaceId, ctx.params.id);
        yield* filters(workspaceId, body.inbox_id, body.domain_id, scopeOf(principalOf(ctx)));
        return w;
      })(),
    );
    const actor = actorOf(principalOf(ctx), ctx.ip);
    await store.write(function* () {
      yield* audit(actor, w, 'webhook.updated', body);
      yield* updateWebhook(clock.now(), w, {
        ...(body.url !== undefined ? { url: checkedUrl(body.url) } : {}),
        ...(body.events !== undefined ? { events: [...new Set(body.events)] } : {}),
        ...(body.inbox_id !== undefined ? { inboxId: body.inbox_id } : {}),
        ...(body.domain_id !== undefined ? { domainId: body.domain_id } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
      });
    });
    if (body.enabled) dispatcher.wake();
    ctx.body = present(await webhookOf(workspaceId, w.id));
  });

  r.delete('/webhooks/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const actor = actorOf(principalOf(ctx), ctx.ip);
    const deleted = await store.write(function* () {
      const w = yield* webhookById(workspaceId, ctx.params.id);
      if (!w || !(yield* deleteWebhook(workspaceId, w.id))) return false;
      yield* audit(actor, w, 'webhook.deleted', { url: w.url });
      return true;
    });
    if (!deleted) throw notFound('Webhook');
    ctx.body = { ok: true };
  });

  r.post('/webhooks/:id/rotate-secret', auth, async (ctx) => {
    const w = await webhookOf(principalOf(ctx).workspaceId, ctx.params.id);
    const now = clock.now();
    const actor = actorOf(principalOf(ctx), ctx.ip);
    const box = await boxSecret(store);
    const secret = await store.write(function* () {
      yield* audit(actor, w, 'webhook.secret_rotated', {});
      return yield* rotateSecret(now, w, box);
    });
    ctx.body = { id: w.id, secret, previousSecretExpiresAt: iso(now + ROTATION_OVERLAP_MS) };
  });

  r.post('/webhooks/:id/test', auth, async (ctx) => {
    const w = await webhookOf(principalOf(ctx).workspaceId, ctx.params.id);
    const now = clock.now();
    const payload = JSON.stringify({ type: 'webhook.test', created_at: iso(now), data: { webhookId: w.id, message: 'A test event from Mailwright' } });
    const id = await store.write(() => addTestDelivery(now, w.id, w.workspace_id, payload));
    dispatcher.wake();
    ctx.status = 201;
    ctx.body = { id, type: 'webhook.test' };
  });

  r.get('/webhooks/:id/deliveries', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const q = parseInput(DeliveryQuery, ctx.query, 'query');
    const page = parsePage(ctx.query);
    const rows = await store.read(
      (function* () {
        const w = yield* foundWebhook(workspaceId, ctx.params.id);
        return yield* listDeliveries(w.id, { status: q.status, limit: page.limit + 1, offset: page.offset });
      })(),
    );
    const { data, count, hasMore } = pageOf(rows, page);
    ctx.body = { data: data.map(presentDelivery), count, hasMore };
  });

  r.post('/webhooks/:id/deliveries/:delivery_id/replay', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const w = await store.read(
      (function* () {
        const w = yield* foundWebhook(workspaceId, ctx.params.id);
        if (!(yield* deliveryById(w.id, ctx.params.delivery_id))) throw notFound('Delivery');
        return w;
      })(),
    );
    await store.write(() => replay(clock.now(), w.id, { id: ctx.params.delivery_id }));
    dispatcher.wake();
    ctx.body = presentDelivery((await store.read(deliveryById(w.id, ctx.params.delivery_id)))!);
  });

  // Beyond the anchors: the morning after an outage, everything in a window at once.
  r.post('/webhooks/:id/replay', auth, async (ctx) => {
    const w = await webhookOf(principalOf(ctx).workspaceId, ctx.params.id);
    const body = parseInput(ReplayBody, ctx.request.body);
    const until = body.until ?? clock.now();
    if (until <= body.since) throw validationError('until', 'must be after since');
    const replayed = await store.write(() => replay(clock.now(), w.id, { since: body.since, until, ...(body.status ? { status: body.status } : {}) }));
    dispatcher.wake();
    ctx.body = { replayed };
  });

  r.get('/events/stream', auth, async (ctx) => {
    const q = parseInput(StreamQuery, ctx.query, 'query');
    const workspaceId = principalOf(ctx).workspaceId;
    const types = q.types ? new Set(q.types.split(',').map((t) => t.trim()).filter(Boolean)) : null;
    for (const t of types ?? []) if (!TYPES.includes(t)) throw validationError('types', `${t} is not an event type; use ${TYPES.join(', ')}`);
    const last = ctx.get('Last-Event-ID');
    if (last && !parseLastEventId(last)) throw validationError('Last-Event-ID', 'must be the id of an event this stream sent');
    // Refused before anything is sent (429 too_many_streams); the slot is given back when the stream closes.
    const principal = principalOf(ctx);
    const credential = principal.kind === 'key' ? `key:${principal.keyId}` : `session:${principal.sessionId}`;
    let release: () => void;
    try {
      release = slots.take({ credential, workspaceId, address: clientKey(ctx.ip) });
    } catch (err) {
      if (err instanceof TooManyStreams) app.metrics?.eventStream({ refused: err.limit });
      throw err;
    }
    let out: PassThrough;
    try {
      const scope = scopeOf(principal);
      if (scope.permission === 'inbox_access' && q.inbox_id && !scope.inboxIds.includes(q.inbox_id)) throw validationError('inbox_id', `no inbox ${q.inbox_id} in this workspace`);
      const inboxAddress = q.inbox_id ? ((await store.read(getInbox(workspaceId, q.inbox_id)))?.address.toLowerCase() ?? null) : null;
      const inboxes = scope.permission === 'inbox_access' ? { inboxIds: scope.inboxIds, addresses: scope.addresses } : { inboxIds: null };
      out = await stream.open({ workspaceId, types, inboxId: q.inbox_id ?? null, inboxAddress, ...inboxes }, last || null);
    } catch (err) {
      release();
      throw err;
    }
    out.once('close', release);
    // Even if the client left before the response was piped: the stream (and its slot) goes with its socket.
    ctx.res.once('close', () => out.destroy());
    // A stream stays open: no socket timeout, and nothing buffered on the way (proxies included).
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.set('Content-Type', 'text/event-stream; charset=utf-8');
    ctx.set('Cache-Control', 'no-cache, no-transform');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.status = 200;
    ctx.body = out;
  });

  return r;
}
