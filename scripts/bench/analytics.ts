// Benchmark: GET /api/v1/analytics?days=7|30|90 through the real HTTP API, on the emails the search benchmark
// builds (search.ts: BENCH_SEARCH_MESSAGES, default 1,000,000, over two years, 25 % sent, every subject its own;
// BENCH_SEARCH_DIR reuses a build). Its events are laid out in time twice, each time taken afresh from the
// emails' times (a sent email: `sent` then `delivered` 2 s later; a received one: `received`):
//   * as built: two years, moved so that the newest email is a minute old (about 31,000 sent subjects in the
//     90-day window at 1,000,000 emails, 340 sent emails a day);
//   * squeezed: the same emails over the last 90 days only, and a ninetieth of them today whatever the hour
//     (every email in the 90-day window, each subject its own, 2,800 sent and 8,300 received a day: the most
//     the subject ranking, and the reading of today's events at each request, meet at that many emails).
// The build writes events with SQL, not through addEvent, so daily_stats (kept by addEvent) is counted here
// from the events as addEvent counts them, and what analytics.ts counts once a day is over (domains,
// subjects, the windows' sums) dropped: the first request counts it (timed apart, with the first of the other
// windows, which sum it). Then
// `scripts/mailwright serve` on that data directory (a process of its own), BENCH_ANALYTICS_REQUESTS (default
// 200) requests per window, one at a time over a keep-alive connection, after 20 unmeasured ones, in
// BENCH_ANALYTICS_ROUNDS rounds (default 3); medians of p50/p95/p99. Target: p95 under 100 ms.
import { existsSync, readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { migrate } from '../../src/db/migrate.ts';
import { databasePath } from '../../src/db/open.ts';
import { startAppProcess, testEnv } from '../../src/testkit/app.ts';
import { fmt, percentile, table } from './lib.ts';
import { searchData, warmUp, type Meta } from './search.ts';

const REQUESTS = Number(process.env.BENCH_ANALYTICS_REQUESTS ?? 200);
const ROUNDS = Number(process.env.BENCH_ANALYTICS_ROUNDS ?? 3);
const WARMUP = 20;
const TARGET_P95_MS = 100;
const DAY_MS = 86_400_000;
const WINDOWS = [7, 30, 90] as const;
const COUNTERS = ['sent', 'delivered', 'bounced', 'blocked', 'opened', 'clicked', 'complained'];

/**
 * Lays the events out in time: each at `at(t)` (SQL; t is its time as built); then daily_stats counted from
 * them as addEvent counts, and what analytics.ts counts from events once a day is over dropped.
 */
function layOut(db: Database.Database, at: (t: string) => string): number {
  const started = performance.now();
  db.transaction(() => {
    db.prepare(`UPDATE events SET created_at = (SELECT ${at("(em.created_at + (events.type = 'delivered') * 2000)")} FROM emails em WHERE em.id = events.email_id)`).run();
    for (const table of ['daily_stats', 'daily_domain_stats', 'daily_subject_stats', 'counted_days', 'subject_windows', 'subject_window_spans']) db.prepare(`DELETE FROM ${table}`).run();
    db.prepare(
      `INSERT INTO daily_stats (workspace_id, day, received, ${COUNTERS.join(', ')}) SELECT workspace_id, strftime('%Y-%m-%d', created_at / 1000, 'unixepoch'), sum(type = 'received'), ${COUNTERS.map((c) => `sum(type = '${c}')`).join(', ')} FROM events GROUP BY 1, 2`,
    ).run();
  })();
  return (performance.now() - started) / 1000;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function measure(dataDir: string, meta: Meta, layout: string) {
  const app = await startAppProcess(testEnv(dataDir, { MAILWRIGHT_LOG_LEVEL: 'info', MAILWRIGHT_RATE_LIMIT: '0' }), 120_000);
  const rows: Array<Array<string | number>> = [];
  const failures: string[] = [];
  const shapes: string[] = [];
  try {
    const get = async (days: number) => {
      const t0 = performance.now();
      const res = await fetch(`${app.url}/api/v1/analytics?days=${days}`, { headers: { authorization: `Bearer ${meta.key}` } });
      const body = (await res.json()) as { metrics: Record<string, number>; topContent: unknown[]; domains: unknown[] };
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`GET /analytics?days=${days} answered ${res.status}: ${JSON.stringify(body)}`);
      return { ms, body };
    };
    const first = new Map<number, number>();
    for (const days of WINDOWS) {
      const r = await get(days);
      first.set(days, r.ms);
      shapes.push(`${days}d: ${fmt(r.body.metrics.sent)} sent, ${fmt(r.body.metrics.received)} received, ${r.body.domains.length} domains, ${r.body.topContent.length} subjects`);
    }
    const runs = new Map<number, Array<{ p50: number; p95: number; p99: number; max: number }>>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const days of WINDOWS) {
        for (let i = 0; i < WARMUP; i++) await get(days);
        const times: number[] = [];
        for (let i = 0; i < REQUESTS; i++) times.push((await get(days)).ms);
        times.sort((a, b) => a - b);
        const run = { p50: percentile(times, 50), p95: percentile(times, 95), p99: percentile(times, 99), max: times.at(-1)! };
        runs.set(days, [...(runs.get(days) ?? []), run]);
        console.error(`bench: ${layout}, round ${round + 1}, days=${days}: p50 ${fmt(run.p50, 2)} ms, p95 ${fmt(run.p95, 2)} ms`);
      }
    }
    for (const days of WINDOWS) {
      const all = runs.get(days)!;
      const p95 = median(all.map((r) => r.p95));
      if (p95 >= TARGET_P95_MS) failures.push(`${layout}, days=${days}: p95 ${fmt(p95, 1)} ms`);
      rows.push([`days=${days}`, `${ROUNDS} × ${REQUESTS}`, fmt(first.get(days)!, 1), fmt(median(all.map((r) => r.p50)), 2), `**${fmt(p95, 2)}**`, fmt(median(all.map((r) => r.p99)), 2), fmt(Math.max(...all.map((r) => r.max)), 1), p95 < TARGET_P95_MS ? 'yes' : '**no**']);
    }
  } finally {
    await app.stop('SIGTERM');
  }
  return { rows, failures, shapes };
}

export async function benchAnalytics() {
  const parent = existsSync(`/proc/${process.ppid}/cmdline`) ? readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8') : '';
  if (!parent.includes('bench/run.ts')) console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`);
  const { dataDir, meta, done } = searchData();
  const failures: string[] = [];
  try {
    const open = () => new Database(databasePath(dataDir));
    const db = open();
    migrate(db); // a build made before migration 0015
    const { oldest, newest } = db.prepare('SELECT min(created_at) AS oldest, max(created_at) AS newest FROM emails').get() as { oldest: number; newest: number };
    db.close();
    // The newest a minute old; today's part of a day from midnight to then.
    const target = Date.now() - 60_000;
    const today = Date.parse(`${new Date(target).toISOString().slice(0, 10)}T00:00:00Z`);
    const from = today - 89 * DAY_MS;
    const cut = newest - (newest - oldest) / 90;
    const layouts = [
      { name: 'as built (two years, the newest a minute old)', at: (t: string) => `${t} + ${target - newest}` },
      {
        name: 'squeezed into the last 90 days (a full day of it today)',
        at: (t: string) =>
          `CASE WHEN ${t} < ${cut} THEN ${from} + CAST((${t} - ${oldest}) * ${(today - from) / (cut - oldest)} AS INTEGER) ELSE ${today} + CAST((${t} - ${cut}) * ${(target - today) / Math.max(1, newest - cut)} AS INTEGER) END`,
      },
    ];
    for (const layout of layouts) {
      const db = open();
      const seconds = layOut(db, layout.at);
      const count = (sql: string) => Number(db.prepare(sql).pluck().get(meta.workspaceId, from));
      const sent = count("SELECT count(*) FROM events WHERE workspace_id = ? AND created_at >= ? AND type = 'sent'");
      const events = count('SELECT count(*) FROM events WHERE workspace_id = ? AND created_at >= ?');
      const todays = Number(db.prepare('SELECT count(*) FROM events WHERE workspace_id = ? AND created_at >= ?').pluck().get(meta.workspaceId, today));
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
      const warm = await warmUp(dataDir);
      const r = await measure(dataDir, meta, layout.name);
      failures.push(...r.failures);
      console.log(`\n### GET /api/v1/analytics at ${fmt(meta.messages)} emails, ${layout.name}: one request at a time, medians of ${ROUNDS} rounds\n`);
      table(['request', 'requests', 'first request ms (counts the subjects)', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', `p95 < ${TARGET_P95_MS} ms`], r.rows);
      console.log(
        `\nIn the 90-day window of the measured workspace: ${fmt(events)} events, ${fmt(sent)} of them \`sent\` (each its own subject); today (read from the events at every request): ${fmt(todays)} events. ` +
          `Events laid out and counted in ${fmt(seconds, 1)} s; page cache warmed in ${fmt(warm)} s.`,
      );
      console.log(`Answers: ${r.shapes.join('; ')}.`);
    }
  } finally {
    done();
  }
  if (failures.length) {
    console.log(`\nMissed: ${failures.join('; ')}`);
    process.exitCode = 1;
  }
}

// Run by scripts/bench/run.ts in a process of its own; also runnable alone: node --import tsx scripts/bench/analytics.ts
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await benchAnalytics();
