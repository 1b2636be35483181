// Plans a workspace holds and what they allow (DESIGN.md plans): the active subscriptions, one per message
// class, plus the config's default transactional plan when no transactional subscription replaces it. Limits
// of held plans add up (any unlimited one makes the sum unlimited) and count per calendar month (UTC).
// Metering checks and counts a send's recipients and attachment bytes in the transaction that queues it.
import type { Config, Plan } from '../config/config.ts';
import { all, change, get, type Query } from '../db/query.ts';
import { ApiError } from '../errors.ts';

export interface Holding {
  plan: Plan;
  /** The sub_ id, or null for the default plan every workspace holds. */
  subscriptionId: string | null;
  provider: string;
  periodStart: number | null;
  periodEnd: number | null;
}

interface SubscriptionRow {
  id: string;
  plan_key: string;
  provider: string;
  period_start: number;
  period_end: number;
}

export type PlanConfig = Pick<Config, 'plans' | 'defaultPlan'>;

export const findPlan = (config: PlanConfig, key: string) => config.plans.find((p) => p.key === key) ?? null;

/** The plans `workspaceId` holds now. A subscription to a plan no longer in the config is not held. */
export function* heldPlans(config: PlanConfig, workspaceId: string): Query<Holding[]> {
  const rows = yield* all<SubscriptionRow>("SELECT id, plan_key, provider, period_start, period_end FROM subscriptions WHERE workspace_id = ? AND state = 'active' ORDER BY created_at", workspaceId);
  const held: Holding[] = rows.flatMap((r) => {
    const plan = findPlan(config, r.plan_key);
    return plan ? [{ plan, subscriptionId: r.id, provider: r.provider, periodStart: r.period_start, periodEnd: r.period_end }] : [];
  });
  if (!held.some((h) => h.plan.messageClass === 'transactional')) {
    held.unshift({ plan: findPlan(config, config.defaultPlan)!, subscriptionId: null, provider: 'default', periodStart: null, periodEnd: null });
  }
  return held;
}

export interface Limits {
  recipients: number | null;
  attachmentBytes: number | null;
}

/** The sum of the held plans' limits; null (unlimited) when any held plan is unlimited in it. */
export function limitsOf(held: Holding[]): Limits {
  const sum = (pick: (l: Limits) => number | null) => held.reduce<number | null>((total, h) => (total === null || pick(h.plan.limits) === null ? null : total + pick(h.plan.limits)!), 0);
  return { recipients: sum((l) => l.recipients), attachmentBytes: sum((l) => l.attachmentBytes) };
}

/** The calendar month (UTC) `now` falls in: its key and bounds. */
export function periodOf(now: number): { key: string; start: number; end: number } {
  const d = new Date(now);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return { key: new Date(start).toISOString().slice(0, 7), start, end };
}

export function* usageOf(workspaceId: string, now: number): Query<{ recipients: number; attachmentBytes: number }> {
  const row = yield* get<{ recipients: number; attachment_bytes: number }>('SELECT recipients, attachment_bytes FROM usage WHERE workspace_id = ? AND period = ?', workspaceId, periodOf(now).key);
  return { recipients: row?.recipients ?? 0, attachmentBytes: row?.attachment_bytes ?? 0 };
}

/**
 * Counts a send against the workspace's plans, or refuses it with 429 `quota_exceeded` (no retry-after: the
 * limit holds until the next period) and counts nothing. A query for the transaction that queues it (db/query.ts),
 * so concurrent sends can never together pass a limit.
 */
/** `limits`: the workspace's, read before the transaction (send/submit.ts readsOutsideTheLock); read here when absent. */
export function* meter(config: PlanConfig, workspaceId: string, now: number, send: { recipients: number; attachmentBytes: number }, limits?: Limits): Query<void> {
  limits ??= limitsOf(yield* heldPlans(config, workspaceId));
  const period = periodOf(now);
  // Unlimited plans (the default) need not read the usage: only counting it.
  if (limits.recipients !== null || limits.attachmentBytes !== null) {
    const used = yield* usageOf(workspaceId, now);
    for (const [what, limit, used_, adding] of [
      ['recipients', limits.recipients, used.recipients, send.recipients],
      ['attachment bytes', limits.attachmentBytes, used.attachmentBytes, send.attachmentBytes],
    ] as const) {
      if (limit !== null && adding > 0 && used_ + adding > limit) {
        throw new ApiError(429, 'quota_exceeded', `Plan limit reached: this send needs ${adding} ${what}, and ${used_} of ${limit} are used this period (until ${new Date(period.end).toISOString()})`);
      }
    }
  }
  yield* change(
    `INSERT INTO usage (workspace_id, period, recipients, attachment_bytes) VALUES (?, ?, ?, ?)
     ON CONFLICT (workspace_id, period) DO UPDATE SET recipients = usage.recipients + excluded.recipients, attachment_bytes = usage.attachment_bytes + excluded.attachment_bytes`,
    workspaceId, period.key, send.recipients, send.attachmentBytes,
  );
}

/** What a canceled send had counted, given back to the period it was counted in (never below zero). */
export function* giveBack(workspaceId: string, meteredAt: number, send: { recipients: number; attachmentBytes: number }): Query<void> {
  yield* change(
    'UPDATE usage SET recipients = max(0, recipients - ?), attachment_bytes = max(0, attachment_bytes - ?) WHERE workspace_id = ? AND period = ?',
    send.recipients,
    send.attachmentBytes,
    workspaceId,
    periodOf(meteredAt).key,
  );
}
