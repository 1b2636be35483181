// GET /analytics (API-SPEC.md sections 2 and 6.2): a workspace's totals over the last 7, 30 or 90 UTC days, a
// zero-filled day-by-day timeline, its top sending domains and best subjects. Never by grouping a whole window's
// emails or events: the totals from daily_stats (kept by addEvent); domains and subjects from what is counted
// here once a day is over (daily_domain_stats, daily_subject_stats, from that day's events), the subjects'
// sums per window (subject_windows), and the events of the days still open.
//
// Why not counted by addEvent in the event's transaction, as daily_stats is: measured, a row per subject is a
// new row in a random place of an index at every send (+14 µs a send in group commits of 20 on disk), and
// even the one row a day per domain cost API sends 9 % (scripts/bench/api-send.ts, queue stopped: 3,530/s
// against 3,890/s, medians of 7 alternating runs; likely one more page in every commit's WAL). Counting a day
// once it is over costs the send path nothing.
import { all, get, run, value, type Query } from '../db/query.ts';
import { utcDay } from './events.ts';

export const WINDOWS = [7, 30, 90] as const;
export type WindowDays = (typeof WINDOWS)[number];

const DAY_MS = 86_400_000;
/** At most this many entries in `domains` and `topContent`. */
export const TOP = 10;
/**
 * A day counts as over this long after its end: an event is counted on the day it happens, and one that
 * happened just before midnight may be committed just after it (a send is stamped when it is planned).
 */
const OVER_AFTER_MS = 10 * 60_000;
/** At most this many days are counted, added to or taken from a window in one transaction (it holds the write lock). */
const STEP_DAYS = 5;

/** The outcomes of sent mail, named as in `metrics`. */
export interface Outcomes {
  sent: number;
  delivered: number;
  bounced: number;
  blocked: number;
  opened: number;
  clicks: number;
  complaints: number;
}

export interface Analytics {
  window: string;
  days: WindowDays;
  metrics: Outcomes & { received: number };
  timeline: Array<{ date: string; sent: number; received: number }>;
  domains: Array<{ domain: string } & Outcomes>;
  topContent: Array<{ subject: string } & Outcomes>;
}

// The counters' columns, and their sums as the response names them. Fixed text, never a client's.
const COUNTERS = ['sent', 'delivered', 'bounced', 'blocked', 'opened', 'clicked', 'complained'] as const;
const COLUMNS = COUNTERS.join(', ');
const SUMS = 'sum(sent) AS sent, sum(delivered) AS delivered, sum(bounced) AS bounced, sum(blocked) AS blocked, sum(opened) AS opened, sum(clicked) AS clicks, sum(complained) AS complaints';
// The outcome events of sent mail from @since to @until: events `ev` (events_workspace walks them) joined to their emails `em`.
// Test sends and the box's own notices (emails.counted = 0) are left out, as daily_stats leaves them out.
const OUTCOMES = `FROM events ev JOIN emails em ON em.id = ev.email_id
  WHERE ev.workspace_id = @ws AND ev.created_at >= @since AND ev.created_at < @until AND em.direction = 'out' AND em.counted = 1
    AND ev.type IN (${COUNTERS.map((c) => `'${c}'`).join(', ')})`;
const COUNTED = COUNTERS.map((c) => `count(*) FILTER (WHERE ev.type = '${c}') AS ${c}`).join(', ');
// The orders of the answer; subject_windows_best walks the subjects' one.
const BEST_DOMAINS = 'sent DESC, delivered DESC, domain';
const BEST_SUBJECTS = 'opened DESC, clicked DESC, delivered DESC, sent DESC, subject';

export const addDays = (day: string, n: number) => utcDay(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS);
const startOf = (day: string) => Date.parse(`${day}T00:00:00Z`);
const minDay = (a: string, b: string) => (a < b ? a : b);

/** The UTC days of a window ending today: the first, the last (today), and the last that is over. */
export function windowOf(days: number, now: number) {
  const today = utcDay(now);
  return { first: addDays(today, 1 - days), today, lastOver: addDays(utcDay(now - OVER_AFTER_MS), -1) };
}

/**
 * The analytics of a workspace over the window ending today; null while its subject window is not settled
 * for today (settleSubjectWindow moves it on, in transactions of its own; a day may also end in between).
 */
export function* analyticsOf(workspaceId: string, days: WindowDays, now: number): Query<Analytics | null> {
  const w = windowOf(days, now);
  // Meant for one read transaction (analytics-routes.ts): every part from the same moment.
  const span = yield* spanOf('subject_window_spans', workspaceId, days);
  if (!span || span.first !== w.first || span.last !== w.lastOver) return null;
  return { window: `${days}d`, days, ...(yield* totals(workspaceId, w.first, w.today, days)), ...(yield* rankings(workspaceId, days, w)) };
}

function* totals(workspaceId: string, first: string, today: string, days: number) {
  const rows = yield* all<Record<(typeof COUNTERS)[number] | 'received', number> & { day: string }>(
    `SELECT day, received, ${COLUMNS} FROM daily_stats WHERE workspace_id = ? AND day BETWEEN ? AND ?`,
    workspaceId,
    first,
    today,
  );
  const metrics = { sent: 0, received: 0, bounced: 0, blocked: 0, delivered: 0, opened: 0, clicks: 0, complaints: 0 };
  for (const r of rows) {
    metrics.sent += r.sent;
    metrics.received += r.received;
    metrics.bounced += r.bounced;
    metrics.blocked += r.blocked;
    metrics.delivered += r.delivered;
    metrics.opened += r.opened;
    metrics.clicks += r.clicked;
    metrics.complaints += r.complained;
  }
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const timeline = Array.from({ length: days }, (_, i) => {
    const date = addDays(first, i);
    const r = byDay.get(date);
    return { date, sent: r?.sent ?? 0, received: r?.received ?? 0 };
  });
  return { metrics, timeline };
}

/**
 * The top domains (most sent) and the best subjects (most opens, then clicks, then deliveries), in one
 * statement that reads the events of the open days (today, and yesterday in its first minutes) once. Domains:
 * the counted days of the window plus the open days (a row a day per domain). Subjects: the window's sums plus
 * the open days, exactly: a subject with no event in the open days keeps its window sum, so if it is not among
 * the window's best ten, ten others rank above it whatever the open days add to them (counts only grow, the
 * order is lexicographic, ties go by subject).
 */
function* rankings(workspaceId: string, days: number, w: { first: string; today: string; lastOver: string }) {
  const rows = yield* all<{ kind: 'domain' | 'subject'; rank: number; name: string } & Outcomes>(
    `WITH live AS MATERIALIZED (SELECT em.domain AS domain, em.subject AS subject, ${COUNTED} ${OUTCOMES} GROUP BY em.domain, em.subject),
            best AS (SELECT subject FROM subject_windows WHERE workspace_id = @ws AND days = @days ORDER BY ${BEST_SUBJECTS} LIMIT ${TOP}),
            domains AS (SELECT domain AS name, ${SUMS} FROM (
              SELECT domain, ${COLUMNS} FROM live WHERE domain IS NOT NULL
              UNION ALL SELECT domain, ${COLUMNS} FROM daily_domain_stats WHERE workspace_id = @ws AND day BETWEEN @first AND @lastOver
            ) AS d GROUP BY domain ORDER BY ${BEST_DOMAINS} LIMIT ${TOP}),
            subjects AS (SELECT subject AS name, ${SUMS} FROM (
              SELECT subject, ${COLUMNS} FROM live
              UNION ALL SELECT subject, ${COLUMNS} FROM subject_windows
              WHERE workspace_id = @ws AND days = @days AND subject IN (SELECT subject FROM live UNION SELECT subject FROM best)
            ) AS s GROUP BY subject ORDER BY ${BEST_SUBJECTS.replace('clicked', 'clicks')} LIMIT ${TOP})
       SELECT 'domain' AS kind, row_number() OVER (ORDER BY ${BEST_DOMAINS.replace('domain', 'name')}) AS rank, * FROM domains
       UNION ALL
       SELECT 'subject', row_number() OVER (ORDER BY ${BEST_SUBJECTS.replace('clicked', 'clicks').replace('subject', 'name')}), * FROM subjects`,
    { ws: workspaceId, days, first: w.first, lastOver: w.lastOver, since: startOf(addDays(w.lastOver, 1)), until: startOf(addDays(w.today, 1)) },
  );
  const of = (kind: string) =>
    rows
      .filter((r) => r.kind === kind)
      .sort((a, b) => a.rank - b.rank)
      .map(({ name, sent, delivered, bounced, blocked, opened, clicks, complaints }) => ({ name, sent, delivered, bounced, blocked, opened, clicks, complaints }));
  return {
    domains: of('domain').map(({ name, ...o }) => ({ domain: name, ...o })),
    topContent: of('subject').map(({ name, ...o }) => ({ subject: name, ...o })),
  };
}

interface Span {
  first: string;
  last: string;
}

function* spanOf(table: 'counted_days' | 'subject_window_spans', workspaceId: string, days?: number): Query<Span | null> {
  const where = table === 'counted_days' ? 'workspace_id = ?' : 'workspace_id = ? AND days = ?';
  return (yield* get<Span>(`SELECT first_day AS first, last_day AS last FROM ${table} WHERE ${where}`, workspaceId, ...(days ? [days] : []))) ?? null;
}

/**
 * One step of bringing a workspace's subject window up to the window ending today: counting a few more days
 * that are over (countDays), or adding or taking off a few days of the window's sums. Its caller's transaction
 * holds the write lock, so the caller commits and calls again until it answers true (settled). Usually one
 * step a day: the day that ended is counted and added, the one that left the window taken off.
 */
export function* settleSubjectWindow(workspaceId: string, days: WindowDays, now: number): Query<boolean> {
  const w = windowOf(days, now);
  if (!(yield* countDays(workspaceId, now))) return false;
  let span = yield* spanOf('subject_window_spans', workspaceId, days);
  const args = (from: string, to: string) => ({ ws: workspaceId, days, from, to });
  if (!span || span.first > w.first || span.last > w.lastOver || span.last < addDays(w.first, -1)) {
    // None yet, the clock went back, or wholly before the window: start empty at the window's first day.
    yield* run('DELETE FROM subject_windows WHERE workspace_id = ? AND days = ?', workspaceId, days);
    span = { first: w.first, last: addDays(w.first, -1) };
  } else if (span.first < w.first) {
    // Days that left the window come off; a subject left with nothing is dropped.
    const to = minDay(addDays(w.first, -1), addDays(span.first, STEP_DAYS - 1));
    yield* run(
      `UPDATE subject_windows AS w SET ${COUNTERS.map((c) => `${c} = w.${c} - d.${c}`).join(', ')}
       FROM (SELECT subject, ${COUNTERS.map((c) => `sum(${c}) AS ${c}`).join(', ')} FROM daily_subject_stats WHERE workspace_id = @ws AND day BETWEEN @from AND @to GROUP BY subject) AS d
       WHERE w.workspace_id = @ws AND w.days = @days AND w.subject = d.subject`,
      args(span.first, to),
    );
    yield* run(
      `DELETE FROM subject_windows WHERE workspace_id = @ws AND days = @days AND ${COUNTERS.map((c) => `${c} = 0`).join(' AND ')}
       AND subject IN (SELECT subject FROM daily_subject_stats WHERE workspace_id = @ws AND day BETWEEN @from AND @to)`,
      args(span.first, to),
    );
    span = { first: addDays(to, 1), last: span.last };
  } else if (span.last < w.lastOver) {
    const from = addDays(span.last, 1);
    const to = minDay(w.lastOver, addDays(from, STEP_DAYS - 1));
    yield* run(
      `INSERT INTO subject_windows (workspace_id, days, subject, ${COLUMNS})
       SELECT @ws, @days, subject, ${COUNTERS.map((c) => `sum(${c})`).join(', ')} FROM daily_subject_stats WHERE workspace_id = @ws AND day BETWEEN @from AND @to GROUP BY subject
       ON CONFLICT (workspace_id, days, subject) DO UPDATE SET ${COUNTERS.map((c) => `${c} = subject_windows.${c} + excluded.${c}`).join(', ')}`,
      args(from, to),
    );
    span = { first: span.first, last: to };
  } else {
    return true;
  }
  yield* run(
    'INSERT INTO subject_window_spans (workspace_id, days, first_day, last_day) VALUES (?, ?, ?, ?) ON CONFLICT (workspace_id, days) DO UPDATE SET first_day = excluded.first_day, last_day = excluded.last_day',
    workspaceId,
    days,
    span.first,
    span.last,
  );
  return false;
}

/**
 * Counts the outcomes of sent mail per domain and per subject (daily_domain_stats, daily_subject_stats) for a
 * few more days that are over, from their events, and drops the days no window holds any more. True when
 * every day of the longest window that is over is counted, with nothing done.
 */
function* countDays(workspaceId: string, now: number): Query<boolean> {
  const w = windowOf(Math.max(...WINDOWS), now);
  let span = yield* spanOf('counted_days', workspaceId);
  // Days before the longest window are still wanted until every subject window has taken them off.
  const held = (yield* value<string | null>('SELECT min(first_day) FROM subject_window_spans WHERE workspace_id = ?', workspaceId)) ?? null;
  const keep = held && held < w.first ? held : w.first;
  if (!span || span.first > w.first || span.last > w.lastOver || span.last < addDays(w.first, -1)) {
    // None yet, the clock went back, or a gap longer than the longest window: everything counted again.
    for (const table of ['daily_domain_stats', 'daily_subject_stats', 'subject_windows', 'subject_window_spans']) yield* run(`DELETE FROM ${table} WHERE workspace_id = ?`, workspaceId);
    span = { first: w.first, last: addDays(w.first, -1) };
  } else if (span.first < keep) {
    for (const table of ['daily_domain_stats', 'daily_subject_stats']) yield* run(`DELETE FROM ${table} WHERE workspace_id = ? AND day < ?`, workspaceId, keep);
    span = { first: keep, last: span.last };
  } else if (span.last < w.lastOver) {
    const from = addDays(span.last, 1);
    const to = minDay(w.lastOver, addDays(from, STEP_DAYS - 1));
    const day = "strftime('%Y-%m-%d', ev.created_at / 1000, 'unixepoch')";
    const range = { ws: workspaceId, since: startOf(from), until: startOf(addDays(to, 1)) };
    for (const [table, column] of [['daily_domain_stats', 'domain'], ['daily_subject_stats', 'subject']] as const) {
      yield* run(
        `INSERT INTO ${table} (workspace_id, day, ${column}, ${COLUMNS}) SELECT @ws, ${day}, em.${column}, ${COUNTED} ${OUTCOMES} AND em.${column} IS NOT NULL GROUP BY 2, 3
         ON CONFLICT (workspace_id, day, ${column}) DO UPDATE SET ${COUNTERS.map((c) => `${c} = excluded.${c}`).join(', ')}`,
        range,
      );
    }
    span = { first: span.first, last: to };
  } else {
    return true;
  }
  yield* run('INSERT INTO counted_days (workspace_id, first_day, last_day) VALUES (?, ?, ?) ON CONFLICT (workspace_id) DO UPDATE SET first_day = excluded.first_day, last_day = excluded.last_day', workspaceId, span.first, span.last);
  return false;
}
