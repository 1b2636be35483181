// Sender reputation of a workspace over the last 30 days, from the daily event counters: bounce and complaint
// rates against the config's thresholds, judged once enough mail was sent. Past the pause threshold sending is
// paused (403 sending_paused on every send path) until the owner resumes it; after a resume only the days
// after it count toward a new pause, so the old bounces do not pause it again at once.
import type { Config } from '../config/config.ts';
import { get, run, type Query } from '../db/query.ts';
import { ApiError } from '../errors.ts';
import type { NodeCache } from '../db/node-cache.ts';

const WINDOW_DAYS = 30;
const DAY_MS = 86_400_000;

type Thresholds = Pick<Config, 'reputationMinSent' | 'reputationBounceAtRisk' | 'reputationBouncePause' | 'reputationComplaintAtRisk' | 'reputationComplaintPause'>;

export type ReputationStatus = 'healthy' | 'at_risk' | 'paused';

export interface Reputation {
  windowDays: number;
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  /** Bounced and complained over sent (recipients accepted), null below the minimum volume. */
  bounceRate: number | null;
  complaintRate: number | null;
  status: ReputationStatus;
  thresholds: { minSent: number; bounceAtRisk: number; bouncePause: number; complaintAtRisk: number; complaintPause: number };
}

interface PauseRow {
  sending_paused_at: number | null;
  sending_pause_reason: string | null;
  sending_resumed_at: number | null;
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function* counts(workspaceId: string, fromDay: string) {
  return (yield* get<{ sent: number; delivered: number; bounced: number; complained: number }>(
    'SELECT coalesce(sum(sent), 0) AS sent, coalesce(sum(delivered), 0) AS delivered, coalesce(sum(bounced), 0) AS bounced, coalesce(sum(complained), 0) AS complained FROM daily_stats WHERE workspace_id = ? AND day >= ?',
    workspaceId,
    fromDay,
  ))!;
}

/** What the rates say over days from `fromDay`: healthy, at_risk or pause. */
function judge(c: { sent: number; bounced: number; complained: number }, t: Thresholds) {
  if (c.sent < t.reputationMinSent) return { bounceRate: null, complaintRate: null, verdict: 'healthy' as const };
  const bounceRate = c.bounced / c.sent;
  const complaintRate = c.complained / c.sent;
  const verdict =
    bounceRate >= t.reputationBouncePause || complaintRate >= t.reputationComplaintPause
      ? ('pause' as const)
      : bounceRate >= t.reputationBounceAtRisk || complaintRate >= t.reputationComplaintAtRisk
        ? ('at_risk' as const)
        : ('healthy' as const);
  return { bounceRate, complaintRate, verdict };
}

const pauseOf = (workspaceId: string) => get<PauseRow>('SELECT sending_paused_at, sending_pause_reason, sending_resumed_at FROM workspaces WHERE id = ?', workspaceId);

export function* reputationOf(t: Thresholds, workspaceId: string, now: number): Query<Reputation> {
  const c = yield* counts(workspaceId, day(now - (WINDOW_DAYS - 1) * DAY_MS));
  const { bounceRate, complaintRate, verdict } = judge(c, t);
  const paused = (yield* pauseOf(workspaceId))?.sending_paused_at != null;
  return {
    windowDays: WINDOW_DAYS,
    ...c,
    bounceRate,
    complaintRate,
    status: paused ? 'paused' : verdict === 'healthy' ? 'healthy' : 'at_risk',
    thresholds: { minSent: t.reputationMinSent, bounceAtRisk: t.reputationBounceAtRisk, bouncePause: t.reputationBouncePause, complaintAtRisk: t.reputationComplaintAtRisk, complaintPause: t.reputationComplaintPause },
  };
}

/** Whether sending is paused, since when and why. */
export function* sendingPause(workspaceId: string): Query<{ pausedAt: number; reason: string } | null> {
  const row = yield* pauseOf(workspaceId);
  return row?.sending_paused_at != null ? { pausedAt: row.sending_paused_at, reason: row.sending_pause_reason ?? '' } : null;
}

/**
 * Every send path asks this first: 403 `sending_paused` while paused; and the send that finds the rates past
 * the pause threshold (counting only days after the last resume) pauses the workspace. The pause is written
 * before the refusal is thrown: run it outside a write transaction (as a read), or the refusal undoes the pause.
 *
 * With a node's cache (PostgreSQL), a workspace found free to send is kept so until a pause, a resume, a bounce or a
 * complaint is heard (postgres/0052), for its window's first day and these thresholds: the sends made meanwhile
 * only lower its rates. Not kept below reputation_min_sent, where the next sends could bring the judgement on.
 */
export function* assertSendingAllowed(t: Thresholds, workspaceId: string, now: number, cache?: NodeCache | null): Query<void> {
  const firstDay = day(now - (WINDOW_DAYS - 1) * DAY_MS);
  const key = `sending ${workspaceId} ${firstDay} ${t.reputationMinSent} ${t.reputationBouncePause} ${t.reputationComplaintPause}`;
  if (cache?.get(key)) return;
  const ticket = cache?.ticket();
  // One statement for the pause and the counts (each statement on the event loop's connection costs a few µs
  // of its own): the days counted start at the window's first, or the day after the last resume.
  const row = yield* get<PauseRow & { sent: number; bounced: number; complained: number }>(
    `SELECT w.sending_paused_at, w.sending_pause_reason, w.sending_resumed_at, coalesce(sum(s.sent), 0) AS sent, coalesce(sum(s.bounced), 0) AS bounced,
       coalesce(sum(s.complained), 0) AS complained
     FROM workspaces w LEFT JOIN daily_stats s ON s.workspace_id = w.id
       AND s.day >= max(?, coalesce(strftime('%Y-%m-%d', (w.sending_resumed_at + ?) / 1000, 'unixepoch'), ''))
     WHERE w.id = ? GROUP BY w.id`,
    firstDay,
    DAY_MS,
    workspaceId,
  );
  if (!row) return;
  if (row.sending_paused_at == null) {
    const since = Math.max(now - (WINDOW_DAYS - 1) * DAY_MS, row.sending_resumed_at == null ? 0 : row.sending_resumed_at + DAY_MS);
    const c = row;
    const { bounceRate, complaintRate, verdict } = judge(c, t);
    if (verdict !== 'pause') {
      if (cache && c.sent >= t.reputationMinSent) cache.set(key, true, ticket!);
      return;
    }
    const reason = `bounce rate ${percent(bounceRate!)} (pause at ${percent(t.reputationBouncePause)}), complaint rate ${percent(complaintRate!)} (pause at ${percent(t.reputationComplaintPause)}) over ${c.sent} recipients since ${day(since)}`;
    yield* run('UPDATE workspaces SET sending_paused_at = ?, sending_pause_reason = ? WHERE id = ? AND sending_paused_at IS NULL', now, reason, workspaceId);
    row.sending_pause_reason = reason;
  }
  throw new ApiError(403, 'sending_paused', `Sending is paused for this workspace: ${row.sending_pause_reason}. The owner can resume it from the dashboard (POST /api/v1/account/sending/resume) after fixing the cause.`);
}

/** The owner resumes sending; returns false when it was not paused. */
export function* resumeSending(workspaceId: string, now: number): Query<boolean> {
  return (yield* run('UPDATE workspaces SET sending_paused_at = NULL, sending_pause_reason = NULL, sending_resumed_at = ? WHERE id = ? AND sending_paused_at IS NOT NULL', now, workspaceId)) > 0;
}

const percent = (r: number) => `${(r * 100).toFixed(2)} %`;
