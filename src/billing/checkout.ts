// Billing between the front doors and the store: opening a checkout for a plan the workspace does not hold,
// what a checkout's page shows, confirming a manual checkout, acting on Stripe's checkout events, canceling.
// API failures are ApiErrors; the page routes turn views into pages. Cancel never calls a provider.
import type { Plan } from '../config/config.ts';
import type { App } from '../context.ts';
import type { Query } from '../db/query.ts';
import { ApiError } from '../errors.ts';
import { findPlan, heldPlans } from '../account/plans.ts';
import { recordAudit, systemActor, type AuditActor } from '../account/audit.ts';
import {
  activateCheckout,
  cancelCheckout,
  cancelSubscriptions,
  findCheckoutByProviderSession,
  getCheckout,
  newCheckoutId,
  recordCheckout,
  type Activation,
  type Checkout,
  type MessageClass,
} from '../account/subscriptions.ts';
import type { StripeEvent } from './stripe.ts';

/** `<tier>_<message_class>_<billing_interval>`, as config/config.ts requires of every plan key. */
export const PLAN_KEY = /^[a-z0-9]{1,32}_(transactional|marketing)_(monthly|yearly)$/;

/** A manual checkout left unconfirmed this long is closed (Stripe's Checkout Sessions also expire after 24 h). */
export const MANUAL_CHECKOUT_TTL_MS = 24 * 60 * 60 * 1000;

function* isHeld(config: App['config'], workspaceId: string, key: string): Query<boolean> {
  return (yield* heldPlans(config, workspaceId)).some((h) => h.plan.key === key);
}

/** POST /billing/checkout: 404 for a key not in the config, 409 for a plan held; records the checkout. */
export async function startCheckout(app: App, workspaceId: string, planKey: string, actor: AuditActor): Promise<{ url: string; sessionId: string }> {
  const { store, config, clock } = app;
  const plan = findPlan(config, planKey);
  if (!plan) throw new ApiError(404, 'not_found', `Plan ${planKey} not found: the plans this box offers are listed by GET /account`);
  if (await store.read(isHeld(config, workspaceId, plan.key))) throw new ApiError(409, 'plan_already_held', `This workspace already holds the plan ${plan.key}`);
  if (plan.key === config.defaultPlan) {
    throw new ApiError(409, 'default_plan', `${plan.key} is the default plan, held whenever no other ${plan.messageClass} plan is: POST /billing/cancel returns to it`);
  }
  const now = clock.now();
  const id = newCheckoutId(now);
  const started = await app.billing.checkout({ checkoutId: id, workspaceId, plan });
  await store.write(function* () {
    yield* recordCheckout({ id, workspaceId, planKey: plan.key, provider: app.billing.name, providerSessionId: started.providerSessionId, url: started.url, createdAt: now });
    yield* recordAudit(now, actor, { workspaceId, action: 'billing.checkout_started', target: { type: 'plan', id: plan.key, name: plan.key }, data: { checkoutId: id, provider: app.billing.name } });
  });
  app.log.info('checkout opened', { workspaceId, checkoutId: id, planKey: plan.key, provider: app.billing.name, providerSessionId: started.providerSessionId });
  return { url: started.url, sessionId: id };
}

export type CheckoutView =
  | { kind: 'missing' }
  /** Waiting: for the owner's confirmation (manual) or for Stripe's event. `replaces` is the plan of that class held now. */
  | { kind: 'open'; checkout: Checkout; plan: Plan; replaces: Plan | null }
  | { kind: 'completed'; checkout: Checkout; plan: Plan; justNow: boolean }
  | { kind: 'closed'; checkout: Checkout; plan: Plan | null; reason: 'expired' | 'held' | 'canceled' | 'withdrawn' };

/** What a checkout's view reads besides the database: the plans on offer and the time. */
type Settings = Pick<App, 'config' | 'clock'>;

const expired = (app: Settings, c: Checkout) => c.provider === 'manual' && app.clock.now() - c.createdAt > MANUAL_CHECKOUT_TTL_MS;

/** What the checkout page shows; changes nothing (GET). Another workspace's checkout is missing. */
export function* viewCheckout(app: Settings, workspaceId: string, id: string): Query<CheckoutView> {
  const checkout = yield* getCheckout(workspaceId, id);
  if (!checkout) return { kind: 'missing' };
  const plan = findPlan(app.config, checkout.planKey);
  if (checkout.state === 'completed' && plan) return { kind: 'completed', checkout, plan, justNow: false };
  if (checkout.state !== 'open') return { kind: 'closed', checkout, plan, reason: 'canceled' };
  if (!plan) return { kind: 'closed', checkout, plan, reason: 'withdrawn' };
  if (expired(app, checkout)) return { kind: 'closed', checkout, plan, reason: 'expired' };
  if (checkout.provider === 'manual' && (yield* isHeld(app.config, workspaceId, plan.key))) return { kind: 'closed', checkout, plan, reason: 'held' };
  const replaces = (yield* heldPlans(app.config, workspaceId)).find((h) => h.plan.messageClass === plan.messageClass)?.plan ?? null;
  return { kind: 'open', checkout, plan, replaces };
}

/**
 * The owner confirmed a manual checkout: in one transaction its plan becomes the workspace's subscription of
 * that message class (the old one canceled). A checkout no longer open, expired, or for a plan held or
 * withdrawn meanwhile activates nothing; a Stripe checkout cannot be confirmed here (it is missing).
 */
export async function confirmCheckout(app: App, workspaceId: string, id: string, actor: AuditActor): Promise<CheckoutView> {
  // The activation is logged once committed: the write may run more than once.
  const { view, activated } = await app.store.write(function* (): Query<{ view: CheckoutView; activated?: Activation & { activated: true } }> {
    const view = yield* viewCheckout(app, workspaceId, id);
    if (view.kind === 'missing' || view.checkout.provider !== 'manual') return { view: { kind: 'missing' } };
    if (view.kind === 'closed') {
      if (view.checkout.state === 'open') yield* cancelCheckout(id);
      return { view };
    }
    if (view.kind !== 'open') return { view };
    const done = yield* activateCheckout(id, view.plan, { now: app.clock.now(), providerRef: null });
    if (!done.activated) return { view: yield* viewCheckout(app, workspaceId, id) };
    yield* recordAudit(app.clock.now(), actor, { workspaceId, action: 'billing.plan_activated', target: { type: 'plan', id: view.plan.key, name: view.plan.key }, data: { checkoutId: id, provider: 'manual', subscriptionId: done.subscription.id } });
    return { view: { kind: 'completed', checkout: { ...view.checkout, state: 'completed', completedAt: done.subscription.createdAt }, plan: view.plan, justNow: true }, activated: done };
  });
  if (activated && view.kind === 'completed') {
    app.log.info('subscription activated', { workspaceId, checkoutId: id, subscriptionId: activated.subscription.id, planKey: view.plan.key, provider: 'manual', replaced: activated.replaced });
  }
  return view;
}

/** Stripe events that mean a checkout is paid (https://docs.stripe.com/checkout/fulfillment). */
const PAID_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded']);

export type StripeOutcome = 'activated' | 'already_done' | 'not_paid' | 'unknown_checkout' | 'ignored';

/**
 * A verified Stripe event: a paid checkout of ours activates its plan (replacing that class's subscription);
 * a second delivery finds the checkout completed and changes nothing; every other event is ignored.
 */
export async function actOnStripeEvent(app: App, event: StripeEvent): Promise<StripeOutcome> {
  if (!PAID_EVENTS.has(event.type)) return 'ignored';
  const session = event.object;
  if (typeof session.id !== 'string') return 'ignored';
  // Delayed payment methods complete the session unpaid and send async_payment_succeeded later.
  if (session.payment_status !== 'paid' && session.payment_status !== 'no_payment_required') return 'not_paid';
  const sessionId = session.id;
  // The activation is logged once committed: the write may run more than once.
  const result = await app.store.write(function* (): Query<StripeOutcome | { checkout: Checkout; planKey: string; done: Activation & { activated: true } }> {
    const checkout = yield* findCheckoutByProviderSession('stripe', sessionId);
    if (!checkout || (session.client_reference_id != null && session.client_reference_id !== checkout.id)) return 'unknown_checkout';
    // The plan as the key says, even if the config no longer lists it: the owner paid (plans.ts then does not count it).
    const [, messageClass, interval] = PLAN_KEY.exec(checkout.planKey) ?? [];
    if (!messageClass) return 'unknown_checkout';
    const plan = { key: checkout.planKey, messageClass: messageClass as MessageClass, interval: interval as Plan['interval'] };
    const providerRef = typeof session.subscription === 'string' ? session.subscription : sessionId;
    const done = yield* activateCheckout(checkout.id, plan, { now: app.clock.now(), providerRef });
    if (!done.activated) return 'already_done';
    yield* recordAudit(app.clock.now(), systemActor('stripe'), { workspaceId: checkout.workspaceId, action: 'billing.plan_activated', target: { type: 'plan', id: plan.key, name: plan.key }, data: { checkoutId: checkout.id, provider: 'stripe', subscriptionId: done.subscription.id, eventId: event.id } });
    return { checkout, planKey: plan.key, done };
  });
  if (typeof result === 'string') return result;
  const { checkout, planKey, done } = result;
  app.log.info('subscription activated', { workspaceId: checkout.workspaceId, checkoutId: checkout.id, subscriptionId: done.subscription.id, planKey, provider: 'stripe', eventId: event.id, replaced: done.replaced });
  if (!findPlan(app.config, planKey)) app.log.warn('a paid plan is no longer in the config, so it allows nothing', { workspaceId: checkout.workspaceId, planKey });
  return 'activated';
}

/** POST /billing/cancel: the active subscriptions of one class, or all; in this box only (no provider call). */
export async function cancelPlans(app: App, workspaceId: string, actor: AuditActor, messageClass?: MessageClass): Promise<string[]> {
  const canceled = await app.store.write(function* () {
    const ids = yield* cancelSubscriptions(workspaceId, app.clock.now(), messageClass);
    if (ids.length) yield* recordAudit(app.clock.now(), actor, { workspaceId, action: 'billing.plan_canceled', data: { subscriptionIds: ids, messageClass: messageClass ?? 'all' } });
    return ids;
  });
  if (canceled.length) app.log.info('subscriptions canceled', { workspaceId, subscriptionIds: canceled, messageClass: messageClass ?? 'all' });
  return canceled;
}
