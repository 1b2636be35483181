// Subscriptions and checkout sessions (migration 0014): recording a checkout, activating the plan it was for
// (one active subscription per workspace and message class, so the new one replaces the old in the same
// transaction), canceling. SQL and dates only: no provider is called from here (billing/ opens checkouts).
import type { Plan } from '../config/config.ts';
import { all, get, run, type Query } from '../db/query.ts';
import { newId } from '../db/ids.ts';

export type CheckoutState = 'open' | 'completed' | 'canceled';
export type MessageClass = Plan['messageClass'];

export interface Checkout {
  /** `chk_…`: the `session_id` POST /billing/checkout answers. */
  id: string;
  workspaceId: string;
  planKey: string;
  provider: string;
  /** The provider's own id for it (Stripe's `cs_…`), or null (manual). */
  providerSessionId: string | null;
  url: string;
  state: CheckoutState;
  createdAt: number;
  completedAt: number | null;
}

export interface Subscription {
  /** `sub_…` */
  id: string;
  workspaceId: string;
  planKey: string;
  messageClass: MessageClass;
  state: 'active' | 'canceled';
  provider: string;
  providerRef: string | null;
  periodStart: number;
  periodEnd: number;
  createdAt: number;
  canceledAt: number | null;
}

// Prefixed ULIDs like every id of the box (db/ids.ts has no prefix for these two yet).
export const newCheckoutId = (now: number) => newId('chk', now);
const newSubscriptionId = (now: number) => newId('sub', now);

interface CheckoutRow {
  id: string;
  workspace_id: string;
  plan_key: string;
  provider: string;
  provider_session_id: string | null;
  url: string;
  state: CheckoutState;
  created_at: number;
  completed_at: number | null;
}

const checkoutOf = (r: CheckoutRow): Checkout => ({
  id: r.id,
  workspaceId: r.workspace_id,
  planKey: r.plan_key,
  provider: r.provider,
  providerSessionId: r.provider_session_id,
  url: r.url,
  state: r.state,
  createdAt: r.created_at,
  completedAt: r.completed_at,
});

export function* recordCheckout(input: Omit<Checkout, 'state' | 'completedAt'>): Query<Checkout> {
  yield* run(
    `INSERT INTO checkout_sessions (id, workspace_id, plan_key, provider, provider_session_id, url, state, created_at)
     VALUES (?, ?, ?, ?, ?, ?, 'open', ?)`,
    input.id, input.workspaceId, input.planKey, input.provider, input.providerSessionId, input.url, input.createdAt,
  );
  return { ...input, state: 'open', completedAt: null };
}

/** A checkout of this workspace (another workspace's id is not found). */
export function* getCheckout(workspaceId: string, id: string): Query<Checkout | null> {
  const row = yield* get<CheckoutRow>('SELECT * FROM checkout_sessions WHERE id = ? AND workspace_id = ?', id, workspaceId);
  return row ? checkoutOf(row) : null;
}

/** The checkout a provider's webhook names by the provider's own session id. */
export function* findCheckoutByProviderSession(provider: string, providerSessionId: string): Query<Checkout | null> {
  const row = yield* get<CheckoutRow>('SELECT * FROM checkout_sessions WHERE provider = ? AND provider_session_id = ?', provider, providerSessionId);
  return row ? checkoutOf(row) : null;
}

/** Closes an open checkout without activating anything (expired, or its plan is held already). */
export function* cancelCheckout(id: string): Query<boolean> {
  return (yield* run("UPDATE checkout_sessions SET state = 'canceled' WHERE id = ? AND state = 'open'", id)) > 0;
}

/** The end of a period of one billing interval from `start`: the same day and time one month or year later (UTC), clamped to the month's last day (Jan 31 -> Feb 28). */
export function periodEnd(start: number, interval: Plan['interval']): number {
  const d = new Date(start);
  const months = interval === 'yearly' ? 12 : 1;
  const target = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d.getUTCDate(), lastDay));
  return target.getTime();
}

export type Activation = { activated: true; subscription: Subscription; replaced: string | null } | { activated: false; state: CheckoutState };

/**
 * Completes an open checkout and makes its plan the workspace's active subscription of that message class,
 * canceling the one it replaces, all in the caller's transaction. A checkout that is no longer open changes
 * nothing, so a second delivery of the same provider event is harmless.
 */
export function* activateCheckout(checkoutId: string, plan: Pick<Plan, 'key' | 'messageClass' | 'interval'>, input: { now: number; providerRef: string | null }): Query<Activation> {
  const row = yield* get<CheckoutRow>('SELECT * FROM checkout_sessions WHERE id = ?', checkoutId);
  if (!row) throw new Error(`checkout ${checkoutId} does not exist`);
  if (row.state !== 'open') return { activated: false, state: row.state };
  if (row.plan_key !== plan.key) throw new Error(`checkout ${checkoutId} is for ${row.plan_key}, not ${plan.key}`);
  const { now } = input;
  yield* run("UPDATE checkout_sessions SET state = 'completed', completed_at = ? WHERE id = ?", now, checkoutId);
  const old = yield* get<{ id: string }>("SELECT id FROM subscriptions WHERE workspace_id = ? AND message_class = ? AND state = 'active'", row.workspace_id, plan.messageClass);
  if (old) yield* run("UPDATE subscriptions SET state = 'canceled', canceled_at = ? WHERE id = ?", now, old.id);
  const subscription: Subscription = {
    id: newSubscriptionId(now),
    workspaceId: row.workspace_id,
    planKey: plan.key,
    messageClass: plan.messageClass,
    state: 'active',
    provider: row.provider,
    providerRef: input.providerRef,
    periodStart: now,
    periodEnd: periodEnd(now, plan.interval),
    createdAt: now,
    canceledAt: null,
  };
  yield* run(
    `INSERT INTO subscriptions (id, workspace_id, plan_key, message_class, state, provider, provider_ref, period_start, period_end, created_at)
     VALUES (?, ?, ?, ?, 'active', ?, ?, ?, ?, ?)`,
    subscription.id, subscription.workspaceId, subscription.planKey, subscription.messageClass, subscription.provider, subscription.providerRef, subscription.periodStart, subscription.periodEnd, now,
  );
  return { activated: true, subscription, replaced: old?.id ?? null };
}

/**
 * Cancels the workspace's active subscriptions (of one message class, or all), at once and only in this
 * database: the payment provider is not told. Returns the ids canceled; none is not an error.
 */
export function* cancelSubscriptions(workspaceId: string, now: number, messageClass?: MessageClass): Query<string[]> {
  const rows = messageClass
    ? yield* all<{ id: string }>("SELECT id FROM subscriptions WHERE workspace_id = ? AND state = 'active' AND message_class = ?", workspaceId, messageClass)
    : yield* all<{ id: string }>("SELECT id FROM subscriptions WHERE workspace_id = ? AND state = 'active'", workspaceId);
  for (const r of rows) yield* run("UPDATE subscriptions SET state = 'canceled', canceled_at = ? WHERE id = ?", now, r.id);
  return rows.map((r) => r.id);
}

interface SubscriptionRow {
  id: string;
  workspace_id: string;
  plan_key: string;
  message_class: MessageClass;
  state: 'active' | 'canceled';
  provider: string;
  provider_ref: string | null;
  period_start: number;
  period_end: number;
  created_at: number;
  canceled_at: number | null;
}

/** The workspace's subscriptions, active first, then the most recent; at most `limit`. */
export function* listSubscriptions(workspaceId: string, limit = 50): Query<Subscription[]> {
  const rows = yield* all<SubscriptionRow>("SELECT * FROM subscriptions WHERE workspace_id = ? ORDER BY state = 'active' DESC, created_at DESC, id DESC LIMIT ?", workspaceId, limit);
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspace_id,
    planKey: r.plan_key,
    messageClass: r.message_class,
    state: r.state,
    provider: r.provider,
    providerRef: r.provider_ref,
    periodStart: r.period_start,
    periodEnd: r.period_end,
    createdAt: r.created_at,
    canceledAt: r.canceled_at,
  }));
}
