// The outbox of webhook deliveries (rows made with each event by emails/events.ts addEvent): claiming what is
// due, recording each attempt's outcome with the retry schedule and the rules that disable an endpoint, the
// deliveries list, and replays. Queries for the caller's transaction (db/query.ts).
import { newId } from '../db/ids.ts';
import { all, get, run, value, type Query } from '../db/query.ts';
import { iso } from '../clock.ts';
import { handOut, type DueEndpoint, type Held, type Shares } from './fair-share.ts';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** When attempt n+1 is due after attempt n failed: 0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const RETRY_SCHEDULE = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];
/** An endpoint failing this long without a success is disabled. */
export const FAILING_LIMIT_MS = 5 * 24 * HOUR;
/** A claimed delivery is tried again after this if its process died mid-attempt (at least once). */
const LEASE_MS = 2 * MINUTE;
const SNIPPET = 500;

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  workspace_id: string;
  event_id: string | null;
  email_id: string | null;
  type: string;
  payload: string | null;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: number | null;
  last_status: number | null;
  last_response: string | null;
  last_error: string | null;
  last_duration_ms: number | null;
  created_at: number;
  updated_at: number;
}

/**
 * Due deliveries of enabled endpoints, each the earliest pending one of its email for its endpoint (so an
 * email's events arrive in order), at most `free` of them, shared out by fair-share.ts given the slots `held`.
 * Claimed by moving their next attempt a lease ahead, so another process leaves them alone.
 */
export function* claimDue(now: number, free: number, shares: Shares, held: Held): Query<DeliveryRow[]> {
  const due = yield* all<DueEndpoint>(
    `SELECT * FROM (SELECT w.id, w.workspace_id AS workspaceId,
         (SELECT min(d.next_attempt_at) FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.status = 'pending') AS dueAt
       FROM webhooks w WHERE w.enabled = 1) endpoints WHERE dueAt <= ?`,
    now,
  );
  if (due.length === 0) return [];
  // Each endpoint's next few, read once the first time it is given a slot.
  const heads = new Map<string, DeliveryRow[]>();
  for (;;) {
    const { taken, unread } = pick(due, held, free, shares, heads);
    if (unread.size === 0) {
      for (const d of taken) yield* run('UPDATE webhook_deliveries SET next_attempt_at = ?, updated_at = ? WHERE id = ?', now + LEASE_MS, now, d.id);
      return taken;
    }
    for (const id of unread) {
      heads.set(
        id,
        yield* all<DeliveryRow>(
          `SELECT d.* FROM webhook_deliveries d
     WHERE d.webhook_id = ? AND d.status = 'pending' AND d.next_attempt_at <= ?
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.webhook_id = d.webhook_id AND p.email_id = d.email_id AND p.status = 'pending' AND p.id < d.id)
     ORDER BY d.next_attempt_at, d.id LIMIT ?`,
          id, now, shares.perEndpoint,
        ),
      );
    }
  }
}

/**
 * One run of handOut over the queues read so far. handOut asks for a delivery synchronously, and a query can
 * read only between statements: an endpoint not read yet counts as having one, and is named in `unread`; the
 * caller reads those and runs it again. handOut is deterministic, so the run that asks for nothing unread
 * hands out what reading each queue on demand would have.
 */
function pick(due: DueEndpoint[], held: Held, free: number, shares: Shares, heads: ReadonlyMap<string, DeliveryRow[]>) {
  const queues = new Map([...heads].map(([id, queue]) => [id, [...queue]]));
  const taken: DeliveryRow[] = [];
  const unread = new Set<string>();
  handOut(due, held, free, shares, (e) => {
    const queue = queues.get(e.id);
    if (!queue) {
      unread.add(e.id);
      return true;
    }
    const d = queue.shift();
    if (d) taken.push(d);
    return d !== undefined;
  });
  return { taken, unread };
}

/** Gives up on a delivery that can never be made (its event is gone with its email). */
export function* markFailed(now: number, id: string, error: string): Query<void> {
  yield* run("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = ?, updated_at = ? WHERE id = ?", error, now, id);
}

/** Hands a claimed delivery back untried (its endpoint was disabled meanwhile): due again once it is enabled. */
export function* unclaim(now: number, id: string): Query<void> {
  yield* run("UPDATE webhook_deliveries SET next_attempt_at = ?, updated_at = ? WHERE id = ? AND status = 'pending'", now, now, id);
}

/** Finished deliveries are kept this long for the deliveries list and replays, unless configured otherwise. */
export const KEEP_FINISHED_MS = 30 * 24 * HOUR;

/** Forgets finished deliveries older than `keepMs`; pending ones are never dropped. */
export const pruneFinished = (now: number, keepMs = KEEP_FINISHED_MS) => run("DELETE FROM webhook_deliveries WHERE status IN ('delivered', 'failed') AND updated_at < ?", now - keepMs);

export const storePayload = (id: string, payload: string) => run('UPDATE webhook_deliveries SET payload = ? WHERE id = ?', payload, id);

export interface Attempt {
  status: number | null;
  response: string;
  error: string | null;
  durationMs: number;
}

/** Records an attempt: delivered on a 2xx; 410 disables the endpoint; otherwise the next try, or failed. */
export function* recordAttempt(now: number, d: DeliveryRow, a: Attempt): Query<void> {
  const ok = a.status !== null && a.status >= 200 && a.status < 300;
  const attempts = d.attempts + 1;
  const gone = a.status === 410;
  const last = ok || gone || attempts >= RETRY_SCHEDULE.length;
  yield* run(
    `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status = ?, last_response = ?, last_error = ?,
       last_duration_ms = ?, updated_at = ? WHERE id = ?`,
    ok ? 'delivered' : last ? 'failed' : 'pending', attempts, last ? null : now + RETRY_SCHEDULE[attempts], a.status, a.response.slice(0, SNIPPET), a.error, Math.round(a.durationMs), now, d.id,
  );
  if (ok) {
    yield* run('UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL', d.webhook_id);
    return;
  }
  if (gone) {
    yield* disable(now, d.webhook_id, `the endpoint answered 410 Gone at ${iso(now)}`);
    return;
  }
  yield* run('UPDATE webhooks SET failing_since = coalesce(failing_since, ?) WHERE id = ?', now, d.webhook_id);
  const since = (yield* value<number | null>('SELECT failing_since FROM webhooks WHERE id = ?', d.webhook_id)) as number | null;
  if (since !== null && now - since >= FAILING_LIMIT_MS) yield* disable(now, d.webhook_id, `every delivery failed for 5 days, since ${iso(since)}`);
}

const disable = (now: number, webhookId: string, reason: string) =>
  run('UPDATE webhooks SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1', reason, now, webhookId);

/** A delivery that is not an event's: webhook.test, with its payload made now. */
export function* addTestDelivery(now: number, webhookId: string, workspaceId: string, payload: string): Query<string> {
  const id = newId('whmsg', now);
  yield* run(
    `INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, type, payload, next_attempt_at, created_at, updated_at)
     VALUES (?, ?, ?, 'webhook.test', ?, ?, ?, ?)`,
    id, webhookId, workspaceId, payload, now, now, now,
  );
  return id;
}

export function listDeliveries(webhookId: string, f: { status?: string; limit: number; offset: number }): Query<DeliveryRow[]> {
  const where = f.status ? 'AND status = ?' : '';
  const args: unknown[] = f.status ? [webhookId, f.status] : [webhookId];
  return all<DeliveryRow>(`SELECT * FROM webhook_deliveries WHERE webhook_id = ? ${where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, ...args, f.limit, f.offset);
}

export const deliveryById = (webhookId: string, id: string) => get<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND id = ?', webhookId, id);

/**
 * Sends deliveries again, now, with the same id and body (a receiver dedupes on webhook-id): one, or every
 * one of the endpoint created in [since, until) with the given status. Answers how many.
 */
export function replay(now: number, webhookId: string, which: { id: string } | { since: number; until: number; status?: 'delivered' | 'failed' | 'pending' }): Query<number> {
  const set = `status = 'pending', attempts = 0, next_attempt_at = ?, updated_at = ?`;
  if ('id' in which) return run(`UPDATE webhook_deliveries SET ${set} WHERE webhook_id = ? AND id = ?`, now, now, webhookId, which.id);
  const status = which.status ? 'AND status = ?' : '';
  const args: unknown[] = [now, now, webhookId, which.since, which.until, ...(which.status ? [which.status] : [])];
  return run(`UPDATE webhook_deliveries SET ${set} WHERE webhook_id = ? AND created_at >= ? AND created_at < ? ${status}`, ...args);
}

export function presentDelivery(d: DeliveryRow) {
  return {
    id: d.id,
    type: d.type,
    eventId: d.event_id,
    emailId: d.email_id,
    status: d.status,
    attempts: d.attempts,
    lastStatusCode: d.last_status,
    lastResponse: d.last_response,
    lastError: d.last_error,
    durationMs: d.last_duration_ms,
    nextAttemptAt: d.status === 'pending' && d.next_attempt_at !== null ? iso(d.next_attempt_at) : null,
    createdAt: iso(d.created_at),
    updatedAt: iso(d.updated_at),
  };
}
