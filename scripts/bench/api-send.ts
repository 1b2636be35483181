// Benchmark: POST /api/v1/emails accepted per second with 20 concurrent keep-alive clients sending about 1 KB of
// JSON each (one recipient), 2 s of warm-up then 10 s counted. The clients run in a child process
// (api-load.ts) so the server's CPU is this process's alone. Four servers, in the same run:
//   * node:http that reads the body, JSON.parses it and answers 200: the ceiling of HTTP plus this load
//     generator on this machine, the baseline the ratios are to, measured first and again after the libraries'
//     and the API-alone runs (the baseline is the mean of the two);
//   * the libraries' floor (api-floor.ts): Koa, @koa/router, koa-body and zod taking the same request and
//     committing one row per send to SQLite before the 200, and nothing else: the most a durable API built on
//     the box's libraries reaches here, so how far the goal's ratio is the libraries' and how far the box's own;
//   * Mailwright with its queue and its signing at acceptance stopped: the API alone (validate, group-committed
//     insert of the email, its queue row and its event, 200 after the commit), what every send costs before
//     the work after the commit (signing, delivery), as this run measured before signing moved to acceptance;
//   * Mailwright with the queue composing, signing and delivering to smtp-sink at the same time (realistic).
// Every 200 must mean committed: after each Mailwright run the deliveries table must hold one row per 200.
// A fourth run, `serve`, is the delivering one again with `scripts/mailwright serve` in a process of its own
// (serve-process.ts), the only honest figure of the server's own memory: the runs above share this process with
// the benchmark's DNS server and tsx. Its RSS peak (VmHWM), its split per thread (heap-split.ts) and its RSS
// BENCH_API_SETTLE_S (60) seconds after the load are reported.
// BENCH_API_RUNS=libraries,alone,delivering,serve picks the runs (node:http is always measured, it is the baseline).
// BENCH_API_PROFILE=<dir>: each Mailwright run's counted window is profiled, every thread (profile.ts), and
// its .cpuprofile files are left in that directory.
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Queue } from '../../src/send/queue.ts';
import { Presigner } from '../../src/send/presign.ts';
import type { LoadOptions, LoadResult } from './api-load.ts';
import { startProfiling, type Profiling } from './profile.ts';
import { heapSampler } from './heap-split.ts';
import { BENCH_STORE, startServe } from './serve-process.ts';
import { freshDatabase, readBox } from '../../src/testkit/postgres.ts';
import { value } from '../../src/db/query.ts';
import { FLOOR_KEY, startApiFloor } from './api-floor.ts';
import { request } from '../../src/testkit/app.ts';
import type { Histogram } from 'prom-client';
import type { Metrics } from '../../src/metrics/metrics.ts';
import {
  RECIPIENT_DOMAIN, SENDER_DOMAIN, Sink, cpuSince, cpuSnapshot, ensurePostfixInstalled, fmt, freePort, machineBusyMicros, percentile, procCpuMicros, procMemoryMiB, reportGoal, reportRssAfterGoal, rssSampler, rssSettling, startBenchApp, startBenchDns,
  table, threadCpuByName, type CpuSnapshot,
} from './lib.ts';

const CONCURRENCY = Number(process.env.BENCH_API_CLIENTS ?? 20);
const WARMUP_MS = Number(process.env.BENCH_API_WARMUP_MS ?? 2000);
const DURATION_MS = Number(process.env.BENCH_API_MS ?? 10_000);
const BODY_BYTES = 1024;
const LOAD = fileURLToPath(new URL('./api-load.ts', import.meta.url));
const RUNS = (process.env.BENCH_API_RUNS ?? 'libraries,alone,delivering,serve').split(',').map((r) => r.trim());
const SETTLE_S = Number(process.env.BENCH_API_SETTLE_S ?? 60);
const PROFILE_DIR = process.env.BENCH_API_PROFILE;

interface ApiRun {
  server: string;
  perSecond: number;
  p50: number;
  p99: number;
  /** Server CPU per accepted request, µs: the whole process, and its event-loop thread. */
  cpu: number;
  mainCpu: number;
  /** The writer thread's CPU per accepted request, µs (NaN for node:http, which has none). */
  writerCpu: number;
  /** Server CPU per accepted request by thread name (threadCpuByName), µs, largest first. */
  byThread: Array<[string, number]>;
  machineCpu: number;
  /** RSS of this process at the window's start → its peak in the window, MiB. */
  rss: string;
  rssPeakMiB: number;
  /** serve's RSS SETTLE_S after the load, MiB (the run in a process of its own). */
  rssAfterMiB?: number;
  notes: string[];
}

/** Runs the load generator against `url`; `during` is told when the counted window starts and ends. */
export function load(url: string, key: string | null, during: { start(): void; end(): void }): Promise<LoadResult> {
  const opts: LoadOptions = { url, key, concurrency: CONCURRENCY, warmupMs: WARMUP_MS, durationMs: DURATION_MS, from: `Bench <bench@${SENDER_DOMAIN}>`, recipientDomain: RECIPIENT_DOMAIN, bodyBytes: BODY_BYTES };
  return new Promise((resolve, reject) => {
    const child = fork(LOAD, [JSON.stringify(opts)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let result: LoadResult | null = null;
    child.on('message', (m: { type: string; result?: LoadResult }) => {
      if (m.type === 'start') during.start();
      else if (m.type === 'end') during.end();
      else if (m.type === 'result') result = m.result!;
    });
    child.on('error', reject);
    child.on('exit', (code) => (result ? resolve(result) : reject(new Error(`load generator exited with code ${code} and no result`))));
  });
}

/** One measured run: CPU and RSS over the window the load generator reports. */
async function measure(server: string, url: string, key: string | null, extra?: { start(): void; end(): string[] }): Promise<ApiRun & { result: LoadResult }> {
  const rss = rssSampler();
  let start: CpuSnapshot | null = null;
  let cpu: ReturnType<typeof cpuSince> | null = null;
  let threadsAtStart = new Map<string, number>();
  let threadsAtEnd = new Map<string, number>();
  let extraNotes: string[] = [];
  const result = await load(url, key, {
    start: () => {
      start = cpuSnapshot();
      threadsAtStart = threadCpuByName(process.pid);
      rss.reset();
      extra?.start();
    },
    end: () => {
      cpu = cpuSince(start!);
      threadsAtEnd = threadCpuByName(process.pid);
      extraNotes = extra?.end() ?? [];
    },
  });
  const rssRange = rss.range();
  const rssPeakMiB = rss.peakMiB();
  rss.stop();
  const spent = cpu as ReturnType<typeof cpuSince> | null;
  if (!spent) throw new Error('the load generator never reported its window');
  const ok = Math.max(1, result.windowOk);
  const other = Object.entries(result.statuses).filter(([s]) => s !== '200');
  // Threads that ended during the window (none, normally) are left out of this split but not of the total.
  const byThread = [...threadsAtEnd]
    .map(([name, micros]) => [name, (micros - (threadsAtStart.get(name) ?? 0)) / ok] as [string, number])
    .filter(([, perRequest]) => perRequest >= 1)
    .sort((a, b) => b[1] - a[1]);
  return {
    server,
    perSecond: result.windowOk / result.windowSeconds,
    p50: percentile(result.latencies, 50),
    p99: percentile(result.latencies, 99),
    cpu: spent.process / ok,
    mainCpu: spent.main / ok,
    writerCpu: byThread.find(([name]) => name === 'mw-writer')?.[1] ?? NaN,
    byThread,
    machineCpu: spent.machine / ok,
    rss: rssRange,
    rssPeakMiB,
    notes: [...(other.length ? [`answers other than 200: ${other.map(([s, n]) => `${s === '0' ? 'no answer' : s} x${n}`).join(', ')}; first: ${result.firstError}`] : []), ...extraNotes],
    result,
  };
}

const BARE_AGAIN = 'node:http again, after the runs above (the baseline is the mean of the two)';

async function bareHttp(): Promise<ApiRun> {
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { to: string };
      const body = JSON.stringify({ id: `em_${++n}`, to: parsed.to });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await measure('node:http: read body, JSON.parse, 200 (no validation, no database)', `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/emails`, null);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** The libraries' floor (api-floor.ts), in this process as node:http is; every 200 must be a committed row. */
async function librariesFloor(): Promise<ApiRun> {
  const floor = await startApiFloor();
  let rows = 0;
  let run: ApiRun & { result: LoadResult };
  try {
    run = await measure('the libraries alone: Koa, @koa/router, koa-body, zod, one row committed per send (api-floor.ts)', floor.url, FLOOR_KEY);
  } finally {
    rows = await floor.close();
  }
  const accepted = run.result.statuses['200'] ?? 0;
  if (rows !== accepted) throw new Error(`the libraries' floor answered ${accepted} sends with 200 but committed ${rows}`);
  return run;
}

async function mailwright(delivering: boolean): Promise<ApiRun> {
  const dns = await startBenchDns();
  const sinkPort = await freePort();
  const sink = delivering ? await Sink.start(sinkPort) : null;
  const database = BENCH_STORE === 'postgres' ? await freshDatabase() : null;
  const app = await startBenchApp(dns, sinkPort, database ? { MAILWRIGHT_DATABASE_URL: database.url } : {});
  try {
    const count = async (sql: string) => (await app.running.app.store.read(value<number>(sql)))!;
    const queue = app.running.app.queue;
    if (!(queue instanceof Queue)) throw new Error('app.queue is not a Queue');
    if (!delivering) {
      await queue.stop();
      const presigner = app.running.app.presign;
      if (!(presigner instanceof Presigner)) throw new Error('app.presign is not a Presigner');
      await presigner.stop();
    }
    let sunk = 0;
    let queries = 0;
    let batchesAtStart: Promise<{ commits: number; calls: number }> | null = null;
    let batchesAtEnd: Promise<{ commits: number; calls: number }> | null = null;
    let profiling: Promise<Profiling> | null = null;
    let profiles: Promise<string[]> | null = null;
    let ioAtStart = procIo();
    let ioAtEnd = ioAtStart;
    const onStore = BENCH_STORE === 'postgres' ? ', on PostgreSQL' : '';
    const run = await measure(`${delivering ? 'Mailwright, queue delivering to smtp-sink meanwhile' : 'Mailwright, queue and signing stopped (the API alone)'}${onStore}`, `${app.api}/emails`, app.key, {
      start: () => {
        sunk = sink?.messages ?? 0;
        queries = dns.queries.length;
        batchesAtStart = writerBatches(app.running.app.metrics);
        ioAtStart = procIo();
        if (PROFILE_DIR) profiling = startProfiling(PROFILE_DIR, delivering ? 'delivering' : 'alone');
      },
      end: () => {
        if (profiling) profiles = profiling.then((p) => p.stop());
        batchesAtEnd = writerBatches(app.running.app.metrics);
        ioAtEnd = procIo();
        if (!sink) return [];
        const delivered = sink.messages - sunk;
        const lookups = dns.queries.length - queries;
        // The queue resolves the destination (MX, then A and AAAA of the MX host) once per batch: lookups tell the batch size.
        return [`delivered to the sink during the counted window: ${fmt(delivered / (DURATION_MS / 1000))}/s, with ${fmt(lookups)} DNS queries: about ${fmt(lookups / 3)} delivery batches of ${fmt(delivered / Math.max(1, lookups / 3), 1)} messages`];
      },
    });
    // Assigned in the callbacks, which TypeScript does not follow.
    const [before, after] = await Promise.all([batchesAtStart as Promise<{ commits: number; calls: number }> | null, batchesAtEnd as Promise<{ commits: number; calls: number }> | null]);
    if (before && after) {
      const commits = after.commits - before.commits;
      run.notes.push(`the writer thread made ${fmt(commits)} group commits in the counted window, ${fmt((after.calls - before.calls) / Math.max(1, commits), 1)} calls each`);
    }
    const counted = run.perSecond * (DURATION_MS / 1000);
    run.notes.push(`written by this process in the counted window: ${fmt((ioAtEnd.wchar - ioAtStart.wchar) / counted)} bytes per accepted send in ${fmt((ioAtEnd.syscw - ioAtStart.syscw) / counted, 1)} write calls`);
    const written = profiles as Promise<string[]> | null;
    if (written) run.notes.push(`profiles of the counted window: ${(await written).join(', ')}`);
    if (delivering) await queue.stop();
    const accepted = run.result.statuses['200'] ?? 0;
    const rows = await count('SELECT count(*) FROM deliveries');
    const emails = await count('SELECT count(*) FROM emails');
    if (rows !== accepted || emails !== accepted) throw new Error(`${accepted} answers of 200, but ${emails} emails and ${rows} deliveries in the database`);
    run.notes.push(`${fmt(accepted)} answers of 200 over the whole run, ${fmt(rows)} queue rows and ${fmt(emails)} emails committed: every 200 was on disk`);
    if (delivering) {
      const left = await count("SELECT count(*) FROM deliveries WHERE state IN ('queued', 'deferred', 'sending')");
      run.notes.push(`${fmt(left)} of them still waiting in the queue when the load stopped`);
    }
    if (app.problems.length) run.notes.push(`logged ${app.problems.length} warnings or errors, the first: ${app.problems[0]}`);
    return run;
  } finally {
    await app.stop();
    await database?.drop();
    await sink?.stop();
    await dns.close();
  }
}

/** The delivering run with `serve` in its own process: what the server alone holds in memory. */
async function serveDelivering(): Promise<ApiRun> {
  const dns = await startBenchDns();
  const sinkPort = await freePort();
  const sink = await Sink.start(sinkPort);
  const heaps = heapSampler();
  const app = await startServe({
    label: 'mw-bench-api-serve-',
    nodeOptions: heaps.nodeOptions,
    profileDir: PROFILE_DIR,
    env: {
      MAILWRIGHT_DNS_SERVERS: dns.address,
      MAILWRIGHT_MTA_PORT: String(sinkPort),
      MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true',
      MAILWRIGHT_RATE_LIMIT: '0',
      MAILWRIGHT_MEMORY_PROFILE: process.env.BENCH_MEMORY_PROFILE ?? 'default',
    },
  });
  let stopped = false;
  try {
    const domain = (await request(`${app.api}/domains`, { body: { name: SENDER_DOMAIN }, key: app.key })).body;
    dns.publish(domain.records);
    const verified = await request(`${app.api}/domains/${domain.id}/verify`, { method: 'POST', key: app.key });
    if (verified.body.status !== 'verified') throw new Error(`could not verify ${SENDER_DOMAIN}: ${JSON.stringify(verified.body)}`);
    const idle = procMemoryMiB(app.pid).rss;
    heaps.start(app.pid);
    let cpu0 = 0;
    let cpu = 0;
    let machine0 = 0;
    let machine = 0;
    let threads0 = new Map<string, number>();
    let threads1 = new Map<string, number>();
    let sunk = 0;
    const result = await load(`${app.api}/emails`, app.key, {
      start: () => {
        cpu0 = procCpuMicros(`/proc/${app.pid}/stat`);
        machine0 = machineBusyMicros();
        threads0 = threadCpuByName(app.pid);
        sunk = sink.messages;
      },
      end: () => {
        cpu = procCpuMicros(`/proc/${app.pid}/stat`) - cpu0;
        machine = machineBusyMicros() - machine0;
        threads1 = threadCpuByName(app.pid);
        sunk = sink.messages - sunk;
      },
    });
    const end = procMemoryMiB(app.pid);
    const settled = await rssSettling(app.pid, SETTLE_S);
    // Sampled through the settling too: the queue draining what the load left can be the peak.
    const split = await heaps.stop();
    const after = `${SETTLE_S} s after the load, ${await heaps.last()}`;
    // The queue goes on delivering what the load left queued: the peak of the whole run is read at its end.
    const whole = procMemoryMiB(app.pid).peak;
    const code = await app.stop();
    stopped = true;
    const ok = Math.max(1, result.windowOk);
    const byThread = [...threads1].map(([name, micros]) => [name, (micros - (threads0.get(name) ?? 0)) / ok] as [string, number]).filter(([, v]) => v >= 1).sort((a, b) => b[1] - a[1]);
    const accepted = result.statuses['200'] ?? 0;
    const rows = (await readBox(app.env, value<number>('SELECT count(*) FROM deliveries')))!;
    const emails = (await readBox(app.env, value<number>('SELECT count(*) FROM emails')))!;
    if (rows !== accepted || emails !== accepted) throw new Error(`${accepted} answers of 200, but ${emails} emails and ${rows} deliveries in the database`);
    const other = Object.entries(result.statuses).filter(([st]) => st !== '200');
    return {
      server: `Mailwright serve in its own process, queue delivering to smtp-sink meanwhile${BENCH_STORE === 'postgres' ? ', on PostgreSQL' : ''}`,
      perSecond: result.windowOk / result.windowSeconds,
      p50: percentile(result.latencies, 50),
      p99: percentile(result.latencies, 99),
      cpu: cpu / ok,
      mainCpu: byThread.find(([name]) => name === 'event loop')?.[1] ?? NaN,
      writerCpu: byThread.find(([name]) => name === 'mw-writer')?.[1] ?? NaN,
      byThread,
      machineCpu: machine / ok,
      rss: `${fmt(idle)} → ${fmt(end.peak)} (${fmt(whole)} with the queue draining after)`,
      rssPeakMiB: Math.max(end.peak, whole),
      rssAfterMiB: settled.last,
      notes: [
        ...(other.length ? [`answers other than 200: ${other.map(([st, n]) => `${st === '0' ? 'no answer' : st} x${n}`).join(', ')}; first: ${result.firstError}`] : []),
        `RSS MiB idle before the load ${fmt(idle)}, at its end ${fmt(end.rss)}, peak (VmHWM) ${fmt(end.peak)} at the end of the load, ${fmt(whole)} including the queue's draining after it; after it${settled.samples.length ? `: ${settled.samples.join(', ')}` : ' (not waited for)'}`,
        split,
        after,
        `delivered to the sink during the counted window: ${fmt(sunk / result.windowSeconds)}/s`,
        `${fmt(accepted)} answers of 200 over the whole run, ${fmt(rows)} queue rows and ${fmt(emails)} emails committed: every 200 was on disk; serve exited with code ${code} after SIGTERM`,
      ],
    };
  } finally {
    if (!stopped) await app.stop();
    await app.dispose();
    await sink.stop();
    await dns.close();
  }
}

/** This process's bytes passed to write calls and the calls' count so far (/proc/self/io). */
function procIo(): { wchar: number; syscw: number } {
  const text = readFileSync('/proc/self/io', 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { wchar: field('wchar'), syscw: field('syscw') };
}

/** Group commits the writer thread made so far, and the calls they carried (the metrics' batch histogram). */
async function writerBatches(metrics: Metrics | undefined): Promise<{ commits: number; calls: number }> {
  const values = (await (metrics?.registry.getSingleMetric('mailwright_writer_batch_size') as Histogram | undefined)?.get())?.values ?? [];
  const of = (name: string) => values.find((v) => v.metricName === name && v.labels.commit === 'writer')?.value ?? 0;
  return { commits: of('mailwright_writer_batch_size_count'), calls: of('mailwright_writer_batch_size_sum') };
}

export async function benchApiSend(): Promise<ApiRun[]> {
  ensurePostfixInstalled();
  let runs: ApiRun[];
  try {
    runs = [await bareHttp()];
    if (RUNS.includes('libraries')) runs.push(await librariesFloor());
    if (RUNS.includes('alone')) runs.push(await mailwright(false));
    // node:http again, so that the baseline brackets the runs its ratios are for: on a shared machine its rate
    // moved by half within minutes (11,470-19,245/s within five minutes once).
    if (RUNS.includes('libraries') || RUNS.includes('alone')) runs.push({ ...(await bareHttp()), server: BARE_AGAIN });
    if (RUNS.includes('delivering')) runs.push(await mailwright(true));
    if (RUNS.includes('serve')) runs.push(await serveDelivering());
  } finally {
    await Sink.stopAll();
  }
  // The baseline: the mean of node:http's rate before and after the libraries' and the API-alone runs.
  const again = runs.find((r) => r.server === BARE_AGAIN);
  const base = again ? (runs[0].perSecond + again.perSecond) / 2 : runs[0].perSecond;
  console.log(
    `\nAPI send: POST /api/v1/emails, ${CONCURRENCY} keep-alive clients in a separate process, about ${BODY_BYTES} bytes of JSON, one recipient each; ` +
      `${WARMUP_MS / 1000} s warm-up, then ${DURATION_MS / 1000} s counted; server CPU is this process's (every thread), per accepted request`,
  );
  table(
    ['server', 'accepted/s', again ? 'vs node:http (mean of its two runs)' : 'vs node:http', 'p50 ms', 'p99 ms', 'server CPU µs/req', 'main thread µs/req', 'writer thread µs/req', 'machine CPU µs/req', 'RSS MiB, start → peak'],
    runs.map((r) => [r.server, fmt(r.perSecond), `${(r.perSecond / base).toFixed(2)}x`, fmt(r.p50, 1), fmt(r.p99, 1), fmt(r.cpu), fmt(r.mainCpu), fmt(r.writerCpu), fmt(r.machineCpu), r.rss]),
  );
  for (const r of runs.slice(1).filter((r) => r !== again)) console.log(`- ${r.server}: server CPU µs/req by thread: ${r.byThread.map(([name, micros]) => `${name} ${fmt(micros)}`).join(', ')}`);
  // Goal 5 (and goal 1's API case): the API alone against node:http, and what the queue leaves of it.
  const alone = runs.find((r) => r.server.includes('API alone'));
  const delivering = runs.find((r) => r.server.includes('delivering') && !r.server.includes('own process'));
  const served = runs.find((r) => r.server.includes('own process'));
  if (alone && delivering) console.log(`- with the queue delivering, ${Math.round((100 * delivering.perSecond) / alone.perSecond)}% of the API-alone figure was accepted`);
  const floor = runs.find((r) => r.server.includes('libraries alone'));
  const floorRatio = floor ? `; the libraries alone ${(floor.perSecond / base).toFixed(2)}x` : '';
  if (alone && floor) console.log(`- the API alone spent ${fmt(alone.cpu)} µs of server CPU a send, ${(alone.cpu / floor.cpu).toFixed(1)} times the libraries' ${fmt(floor.cpu)}`);
  reportGoal({ goal: 'API alone, vs node:http', measured: alone ? `${(alone.perSecond / base).toFixed(2)}x${floorRatio}` : '–', target: '≥ 0.15x', pass: alone ? alone.perSecond / base >= 0.15 : null });
  reportGoal({
    goal: 'API with the queue delivering, share of the API-alone figure',
    measured: alone && delivering ? `${Math.round((100 * delivering.perSecond) / alone.perSecond)}%` : '–',
    target: '≥ 60%',
    pass: alone && delivering ? delivering.perSecond / alone.perSecond >= 0.6 : null,
  });
  if (served) {
    reportGoal({ goal: `memory, API at 20 clients with the queue delivering (peak RSS of serve, ${process.env.BENCH_MEMORY_PROFILE ?? 'default'} profile)`, measured: `${fmt(served.rssPeakMiB)} MiB`, target: '≤ 256 MiB', pass: served.rssPeakMiB <= 256 });
    reportRssAfterGoal('API', SETTLE_S, served.rssAfterMiB);
  } else if (delivering) reportGoal({ goal: 'memory, API at 20 clients with the queue delivering (peak RSS, app in the bench process)', measured: `${fmt(delivering.rssPeakMiB)} MiB`, target: '≤ 256 MiB', pass: delivering.rssPeakMiB <= 256 });
  for (const r of runs) for (const note of r.notes) console.log(`- ${r.server}: ${note}`);
  return runs;
}

// Run by scripts/bench/run.ts in a process of its own; also runnable alone: node --import tsx scripts/bench/api-send.ts
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await benchApiSend();
