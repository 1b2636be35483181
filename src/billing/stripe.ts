// Stripe Checkout over Stripe's REST API, hand-rolled (no SDK: one form POST and one HMAC check): creating
// a Checkout Session for a plan (POST /v1/checkout/sessions, form-encoded, the secret key as a bearer), and
// verifying the Stripe-Signature header of a webhook delivery as Stripe documents it. Never called by cancel.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Plan } from '../config/config.ts';
import type { CheckoutProvider } from '../context.ts';
import { checkUrl, FetchFailed, FetchRefused, type FetchPolicy } from '../dns/safe-fetch.ts';
import { ApiError } from '../errors.ts';
import { postForm } from './https-post.ts';
import { checkoutPageUrl } from './manual.ts';

export interface StripeOptions {
  apiUrl: string;
  secretKey: string;
  publicUrl: string;
  fetch: FetchPolicy;
  /** Lab mode (allow_private_fetch): the Checkout URL Stripe answers may name a private host. */
  allowPrivate: boolean;
}

/** The form fields of the Checkout Session for one plan (https://docs.stripe.com/api/checkout/sessions/create). */
export function checkoutSessionForm(input: { checkoutId: string; workspaceId: string; plan: Plan; publicUrl: string }): URLSearchParams {
  const { plan, checkoutId, workspaceId } = input;
  const page = checkoutPageUrl(input.publicUrl, checkoutId);
  return new URLSearchParams([
    ['mode', 'subscription'],
    ['client_reference_id', checkoutId],
    ['success_url', `${page}?result=success`],
    ['cancel_url', `${page}?result=canceled`],
    ['line_items[0][quantity]', '1'],
    ['line_items[0][price_data][currency]', plan.currency.toLowerCase()],
    ['line_items[0][price_data][unit_amount]', String(plan.price)],
    ['line_items[0][price_data][recurring][interval]', plan.interval === 'yearly' ? 'year' : 'month'],
    ['line_items[0][price_data][product_data][name]', productName(plan)],
    ['metadata[workspace_id]', workspaceId],
    ['metadata[plan_key]', plan.key],
    ['metadata[checkout_id]', checkoutId],
    ['subscription_data[metadata][workspace_id]', workspaceId],
    ['subscription_data[metadata][plan_key]', plan.key],
  ]);
}

export const productName = (plan: Plan) => `Mailwright ${plan.tier} (${plan.messageClass}, ${plan.interval})`;

export function stripeProvider(opts: StripeOptions): CheckoutProvider {
  const endpoint = `${opts.apiUrl.replace(/\/+$/, '')}/v1/checkout/sessions`;
  return {
    name: 'stripe',
    async checkout(input) {
      let res: { status: number; body: unknown };
      try {
        // Stripe's idempotency key: a retried request can never open a second session for one checkout.
        res = await postForm(endpoint, checkoutSessionForm({ ...input, publicUrl: opts.publicUrl }), { authorization: `Bearer ${opts.secretKey}`, 'idempotency-key': input.checkoutId }, opts.fetch);
      } catch (err) {
        if (err instanceof FetchFailed || err instanceof FetchRefused) throw new ApiError(502, 'billing_provider_unreachable', `Stripe could not be reached: ${err.message}`);
        throw err;
      }
      const body = (res.body ?? {}) as { id?: unknown; url?: unknown; error?: { message?: unknown } };
      if (res.status < 200 || res.status >= 300) {
        const why = typeof body.error?.message === 'string' ? body.error.message.slice(0, 300) : 'no reason given';
        throw new ApiError(502, 'billing_provider_error', `Stripe refused to open the checkout (HTTP ${res.status}): ${why}`);
      }
      if (typeof body.id !== 'string' || !/^cs_[A-Za-z0-9_]{1,250}$/.test(body.id) || typeof body.url !== 'string') {
        throw new ApiError(502, 'billing_provider_error', 'Stripe answered without a checkout session id and url');
      }
      // The browser is sent there: an https URL without userinfo (catalogue API-10b), never javascript: or data:.
      try {
        checkUrl(body.url, { allowPrivate: opts.allowPrivate });
      } catch {
        throw new ApiError(502, 'billing_provider_error', 'Stripe answered a checkout url that is not a plain https URL');
      }
      return { url: body.url, providerSessionId: body.id };
    },
  };
}

/** Stripe's default: a signed timestamp further than this from now is refused (a replay). */
export const SIGNATURE_TOLERANCE_S = 300;

export type SignatureCheck = { ok: true; timestamp: number } | { ok: false; reason: string };

/**
 * https://docs.stripe.com/webhooks#verify-manually: the header is `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`
 * (other schemes such as v0 are ignored); a v1 is the HMAC-SHA256, keyed with the endpoint's signing secret,
 * of `<t>.<raw body>`. One matching v1 (compared in constant time) and a timestamp within the tolerance pass.
 */
export function verifyStripeSignature(header: string, payload: Buffer, secret: string, nowMs: number, toleranceS = SIGNATURE_TOLERANCE_S): SignatureCheck {
  let timestamp: string | null = null;
  const signatures: Buffer[] = [];
  for (const item of header.split(',')) {
    const at = item.indexOf('=');
    if (at < 0) continue;
    const [name, value] = [item.slice(0, at).trim(), item.slice(at + 1).trim()];
    if (name === 't') timestamp = value;
    else if (name === 'v1' && /^[0-9a-f]{64}$/i.test(value)) signatures.push(Buffer.from(value, 'hex'));
  }
  if (timestamp === null || !/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'no timestamp in the Stripe-Signature header' };
  if (signatures.length === 0) return { ok: false, reason: 'no v1 signature in the Stripe-Signature header' };
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(payload).digest();
  // Every candidate is compared (no early exit), each in constant time.
  let matched = false;
  for (const s of signatures) matched = timingSafeEqual(s, expected) || matched;
  if (!matched) return { ok: false, reason: 'no v1 signature matches the body' };
  const t = Number(timestamp);
  if (Math.abs(nowMs / 1000 - t) > toleranceS) return { ok: false, reason: `the signed timestamp is more than ${toleranceS} s from now` };
  return { ok: true, timestamp: t };
}

/** The part of a Stripe event this box acts on, or null when the JSON is not an event. */
export interface StripeEvent {
  id: string;
  type: string;
  object: Record<string, unknown>;
}

export function parseStripeEvent(payload: Buffer): StripeEvent | null {
  let event: unknown;
  try {
    event = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  const e = event as { id?: unknown; type?: unknown; data?: { object?: unknown } } | null;
  if (!e || typeof e !== 'object' || typeof e.id !== 'string' || typeof e.type !== 'string') return null;
  const object = e.data && typeof e.data === 'object' ? e.data.object : null;
  if (!object || typeof object !== 'object') return null;
  return { id: e.id, type: e.type, object: object as Record<string, unknown> };
}
