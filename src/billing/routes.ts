// Billing endpoints of API-SPEC.md 4.7 (session only) and the Stripe webhook:
//   POST /billing/checkout {plan_key}   opens a checkout with the configured provider -> {url, session_id}
//   POST /billing/cancel {message_class?} cancels in this box only, never calling the provider -> {ok: true}
//   POST /billing/stripe/webhook        no credential: authenticated by its Stripe-Signature over the raw body
//                                       (http/server.ts lets it past the gate and leaves its body unread)
import { z } from 'zod';
import type { Context } from 'koa';
import type { App } from '../context.ts';
import { ApiError, notFound } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireSession } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { readRawBody } from '../http/raw-body.ts';
import { SMALL_BODY_TIMEOUT_MS } from '../http/body.ts';
import { actOnStripeEvent, cancelPlans, PLAN_KEY, startCheckout } from './checkout.ts';
import { actorOf } from '../account/audit.ts';
import { parseStripeEvent, verifyStripeSignature } from './stripe.ts';

const CheckoutBody = z.object({
  plan_key: z.string({ error: 'is required' }).regex(PLAN_KEY, 'must be <tier>_<message_class>_<billing_interval>, such as pro_marketing_monthly'),
});

// Strict: a misspelt field must not widen a cancel of one class into a cancel of all.
const CancelBody = z.object({ message_class: z.enum(['transactional', 'marketing']).optional() }).strict();

/** Stripe's events are a few kilobytes; this is far above any of them. */
const WEBHOOK_BODY_LIMIT = 1024 * 1024;

export function billingRoutes(app: App) {
  const { config, log, clock } = app;
  const r = apiRouter();
  const session = requireSession(config.publicUrl);

  r.post('/billing/checkout', session, async (ctx) => {
    const { plan_key } = parseInput(CheckoutBody, ctx.request.body);
    const started = await startCheckout(app, principalOf(ctx).workspaceId, plan_key, actorOf(principalOf(ctx), ctx.ip));
    ctx.body = { url: started.url, session_id: started.sessionId };
  });

  r.post('/billing/cancel', session, async (ctx) => {
    const { message_class } = parseInput(CancelBody, ctx.request.body);
    await cancelPlans(app, principalOf(ctx).workspaceId, actorOf(principalOf(ctx), ctx.ip), message_class);
    ctx.body = { ok: true };
  });

  r.post('/billing/stripe/webhook', async (ctx) => {
    const secret = config.stripeWebhookSecret;
    if (!secret) throw notFound();
    const payload = await rawBody(ctx, WEBHOOK_BODY_LIMIT);
    const check = verifyStripeSignature(ctx.get('Stripe-Signature'), payload, secret, clock.now());
    if (!check.ok) {
      log.warn('stripe webhook refused', { requestId: ctx.state.requestId, reason: check.reason });
      throw new ApiError(400, 'invalid_signature', `Stripe-Signature is not valid: ${check.reason}`);
    }
    const event = parseStripeEvent(payload);
    if (!event) throw new ApiError(400, 'invalid_json', 'The body is not a Stripe event');
    const outcome = await actOnStripeEvent(app, event);
    if (outcome === 'unknown_checkout') log.warn('stripe event for a checkout this box did not open', { eventId: event.id, type: event.type });
    else log.info('stripe event', { eventId: event.id, type: event.type, outcome });
    // Any 2xx stops Stripe's retries; an event we do not act on is still received.
    ctx.body = { received: true };
  });

  return r;
}

/**
 * The request body exactly as sent (a signature is over these bytes), up to `limit`, arriving within
 * SMALL_BODY_TIMEOUT_MS: the caller is a stranger until the signature is checked (catalogue API-21).
 */
const rawBody = (ctx: Context, limit: number): Promise<Buffer> =>
  readRawBody(ctx, {
    maxBytes: limit,
    timeoutMs: SMALL_BODY_TIMEOUT_MS,
    tooLarge: () => new ApiError(413, 'payload_too_large', 'Request body is too large'),
    tooSlow: () => new ApiError(408, 'request_timeout', `The request body did not arrive within ${SMALL_BODY_TIMEOUT_MS / 1000} s`),
  });
