// Shared pieces of the sending benchmarks (outbound.ts, api-send.ts): Postfix's smtp-sink as the receiving
// end, CPU and memory accounting from /proc, and a Mailwright started in this process the way tests start it
// (testkit config, a test DNS server that knows a verified sending domain and routes the recipient domain to
// the sink), but logging at the production level instead of the tests' debug.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config/config.ts';
import { startApp, type RunningApp } from '../../src/app.ts';
import { createLog } from '../../src/log.ts';
import { request, seedWorkspace, testEnv, type TestApp } from '../../src/testkit/app.ts';
import { startDnsServer, type DnsServer } from '../../src/testkit/dns-server.ts';
import { BOX } from '../../src/testkit/outbound.ts';

export const SINK_BIN = '/usr/sbin/smtp-sink';
export const SENDER_DOMAIN = 'sender.bench.test';
export const RECIPIENT_DOMAIN = 'sink.bench.test';

export const benchDir = (label: string) => mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), label));

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

export { freePort } from '../../src/testkit/app.ts';

/** Runs a shell command as root for an install, its stderr shown; false when it exits non-zero. */
function aptSh(cmd: string): boolean {
  return spawnSync('sh', ['-c', cmd], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
}

function mustSh(cmd: string): void {
  if (!aptSh(cmd)) throw new Error(`bench: "${cmd}" failed`);
}

/** Installs Debian's postfix (for smtp-sink, smtp-source and the Postfix comparison) when it is missing. */
export function ensurePostfixInstalled(): void {
  if (existsSync(SINK_BIN) && existsSync('/usr/sbin/postfix') && existsSync('/usr/sbin/smtp-source')) return;
  if (process.getuid?.() !== 0) throw new Error('Postfix is not installed and installing it needs root: apt-get install postfix');
  console.error('bench: installing Debian postfix (for smtp-sink, smtp-source and the Postfix comparison)...');
  mustSh("echo 'postfix postfix/main_mailer_type select No configuration' | debconf-set-selections");
  mustSh('apt-get update -q');
  mustSh('apt-get install -y -q postfix');
}

/** English words, one per line: Debian's wamerican. The search and storage benchmarks draw their text from it. */
export const WORDS_FILE = '/usr/share/dict/words';

/**
 * Installs Debian's wamerican when WORDS_FILE is missing and this is root. Without it the storage benchmark
 * would fall back to a list of 200 words, whose text packs far smaller than real mail (0.83x instead of
 * 1.09-1.12x for received mail on 2026-11-26): its figures would not compare with any other run.
 */
export function ensureWordsInstalled(): boolean {
  if (!existsSync(WORDS_FILE) && process.getuid?.() === 0) {
    console.error('bench: installing Debian wamerican (for /usr/share/dict/words)...');
    spawnSync('sh', ['-c', 'apt-get install -y -q wamerican || (apt-get update -q && apt-get install -y -q wamerican)'], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  return existsSync(WORDS_FILE);
}

export const OPENDKIM_BIN = '/usr/sbin/opendkim';

/**
 * Installs Debian's opendkim (the milter of the outbound benchmark's Postfix + OpenDKIM) when it is missing,
 * with `apt-get update` first only when the package lists do not know it. The package's own service is
 * stopped again if its install started it: the benchmark runs its own instance, on a loopback port, and
 * leaves nothing listening.
 */
export function ensureOpendkimInstalled(): void {
  if (existsSync(OPENDKIM_BIN)) return;
  if (process.getuid?.() !== 0) throw new Error('OpenDKIM is not installed and installing it needs root: apt-get install opendkim');
  console.error('bench: installing Debian opendkim (the milter of the Postfix + OpenDKIM comparison)...');
  if (!aptSh('apt-get install -y -q opendkim')) {
    mustSh('apt-get update -q');
    mustSh('apt-get install -y -q opendkim');
  }
  aptSh('if [ -d /run/systemd/system ]; then systemctl stop opendkim.service; elif [ -x /etc/init.d/opendkim ]; then /etc/init.d/opendkim stop; fi >/dev/null 2>&1');
  if (!existsSync(OPENDKIM_BIN)) throw new Error(`bench: apt-get installed opendkim but ${OPENDKIM_BIN} is missing`);
}

/**
 * µs per RSA-2048 signature on this machine from `openssl speed -seconds 1 rsa2048` (1e6 / its sign/s), so that
 * runs on different machines can be compared; NaN when openssl is missing or its output is not understood.
 */
export function opensslRsa2048SignMicros(): number {
  const run = spawnSync('openssl', ['speed', '-seconds', '1', 'rsa2048'], { encoding: 'utf8' });
  const lines = (run.stdout ?? '').split('\n');
  // OpenSSL 3.0: "sign verify sign/s verify/s" over "rsa 2048 bits 0.000689s 0.000020s 1451.9 49225.5"
  // (3.2 and later add encrypt/decrypt columns); the row's values follow "bits".
  const header = lines.findIndex((l) => /(^|\s)sign\/s(\s|$)/.test(l));
  const row = lines.slice(header + 1).find((l) => /^rsa\s+2048\s+bits?\s/.test(l.trim()));
  if (header < 0 || !row) return NaN;
  const column = lines[header].trim().split(/\s+/).indexOf('sign/s');
  const perSecond = Number(row.trim().split(/\s+/).slice(3)[column]);
  return perSecond > 0 ? 1e6 / perSecond : NaN;
}

// ---------------------------------------------------------------------------------------------------------
// CPU and memory

/** utime + stime of one process or thread, in microseconds. */
export function procCpuMicros(statPath: string): number {
  try {
    const stat = readFileSync(statPath, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
  } catch {
    return 0; // the process or thread is gone
  }
}

/**
 * CPU of a process and all its descendants, µs: each one's utime + stime plus what it has reaped of its children
 * (cutime + cstime), so that a child that exits between two readings still counts once. For Postfix's master,
 * that is all of Postfix, apart from the other users of a shared machine.
 */
export function processTreeCpuMicros(rootPid: number): number {
  const stats = new Map<number, { ppid: number; micros: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(entry), { ppid: Number(f[1]), micros: ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1e6) / CLK_TCK });
    } catch {} // gone meanwhile
  }
  let total = 0;
  const inTree = new Set<number>([rootPid]);
  // Parents have lower pids in the usual case, but not always (pid wrap): repeat until nothing joins.
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, { ppid }] of stats) {
      if (inTree.has(pid) || !inTree.has(ppid)) continue;
      inTree.add(pid);
      grew = true;
    }
  }
  for (const pid of inTree) total += stats.get(pid)?.micros ?? 0;
  return total;
}

/** Resident memory of another process from /proc/<pid>/status: now (VmRSS) and its peak so far (VmHWM), MiB. */
export function procMemoryMiB(pid: number): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
  } catch {
    return { rss: NaN, peak: NaN }; // the process is gone
  }
}

/**
 * CPU of a process's threads summed by what they are: `event loop` (the main thread), the thread names our
 * worker pools give themselves (mw-writer, mw-sign, mw-analyze), and the rest under their own names (V8's
 * GC and compiler helpers are "node", libuv's pool "libuv-worker").
 */
export function threadCpuByName(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // the process is gone
  }
  for (const tid of tids) {
    let comm = '?';
    try {
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {}
    const name = Number(tid) === pid ? 'event loop' : comm === 'node' ? 'V8 helpers (GC, compiler)' : comm;
    out.set(name, (out.get(name) ?? 0) + procCpuMicros(`/proc/${pid}/task/${tid}/stat`));
  }
  return out;
}

/** Busy CPU time of the whole machine (all cores, everything but idle and iowait), in microseconds. */
export function machineBusyMicros(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = cpu;
  return ((user + nice + system + irq + softirq + (steal ?? 0)) * 1e6) / CLK_TCK;
}

/** CPU of each thread of this process, by thread id. */
function threadCpu(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) out.set(Number(tid), procCpuMicros(`/proc/self/task/${tid}/stat`));
  return out;
}

export interface CpuSnapshot {
  process: NodeJS.CpuUsage;
  threads: Map<number, number>;
  machine: number;
  at: number;
}

export function cpuSnapshot(): CpuSnapshot {
  return { process: process.cpuUsage(), threads: threadCpu(), machine: machineBusyMicros(), at: performance.now() };
}

export interface CpuSpent {
  seconds: number;
  /** This process, every thread (process.cpuUsage), µs. */
  process: number;
  /** The main (event loop) thread, µs. */
  main: number;
  /** Threads started during the interval (the sign workers), µs; a thread that ended meanwhile is missing here. */
  newThreads: number;
  /** Every core of the machine, µs. */
  machine: number;
}

export function cpuSince(start: CpuSnapshot, end: CpuSnapshot = cpuSnapshot()): CpuSpent {
  const processMicros = end.process.user + end.process.system - start.process.user - start.process.system;
  let newThreads = 0;
  for (const [tid, micros] of end.threads) if (!start.threads.has(tid)) newThreads += micros;
  return {
    seconds: (end.at - start.at) / 1000,
    process: processMicros,
    main: (end.threads.get(process.pid) ?? 0) - (start.threads.get(process.pid) ?? 0),
    newThreads,
    machine: end.machine - start.machine,
  };
}

/** Samples this process's RSS every 100 ms; peak() is the highest seen since start (or the last reset). */
export function rssSampler() {
  let start = process.memoryUsage.rss();
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 100);
  timer.unref();
  return {
    reset: () => void (peak = start = process.memoryUsage.rss()),
    /** "start → peak" in MiB. */
    range: () => `${fmt(start / 2 ** 20)} → ${fmt(Math.max(peak, process.memoryUsage.rss()) / 2 ** 20)}`,
    peakMiB: () => Math.max(peak, process.memoryUsage.rss()) / 2 ** 20,
    stop: () => clearInterval(timer),
  };
}

/** A seeded generator (mulberry32): the same corpus on every run. */
export { mulberry32 } from '../../src/testkit/random.ts';

/** Walker's alias table: rank i (0-based) drawn with weight 1/(i+1)^s, O(1) per draw. */
export function zipf(n: number, s: number, rand: () => number): () => number {
  const weights = Array.from({ length: n }, (_, i) => 1 / Math.pow(i + 1, s));
  const total = weights.reduce((a, b) => a + b, 0);
  const prob = new Float64Array(n);
  const alias = new Int32Array(n);
  const scaled = weights.map((w) => (w * n) / total);
  const small: number[] = [];
  const large: number[] = [];
  scaled.forEach((p, i) => (p < 1 ? small : large).push(i));
  while (small.length && large.length) {
    const l = small.pop()!;
    const g = large.pop()!;
    prob[l] = scaled[l];
    alias[l] = g;
    scaled[g] = scaled[g] + scaled[l] - 1;
    (scaled[g] < 1 ? small : large).push(g);
  }
  for (const i of [...small, ...large]) prob[i] = 1;
  return () => {
    const i = Math.floor(rand() * n);
    return rand() < prob[i] ? i : alias[i];
  };
}

/** A benchmark goal as one benchmark measured it; `npm run bench` gathers them into one summary table. */
export interface GoalResult {
  goal: string;
  /** The ratio or figure measured, as printed. */
  measured: string;
  target: string;
  /** null: not measured in this run (a failed or skipped part). */
  pass: boolean | null;
}

/** Appends to the file run.ts names in BENCH_GOALS_FILE (nothing when a benchmark runs alone). */
export function reportGoal(result: GoalResult): void {
  const file = process.env.BENCH_GOALS_FILE;
  if (file) appendFileSync(file, `${JSON.stringify(result)}\n`);
}

/** Goal 1's second half for one load: serve's RSS `seconds` after it, under 160 MiB within a minute. */
export function reportRssAfterGoal(load: string, seconds: number, mib: number | undefined): void {
  if (mib === undefined) return;
  // Under 160 later than 60 s, or still over before 60 s, says nothing either way.
  const pass = mib < 160 ? (seconds <= 60 ? true : null) : seconds >= 60 ? false : null;
  reportGoal({ goal: `memory, ${load}: RSS ${fmt(seconds)} s after the load`, measured: `${fmt(mib)} MiB`, target: '< 160 MiB within 60 s', pass });
}

/** A process's RSS every 10 s for `seconds` (a load just ended): the samples as notes, and the last in MiB. */
export async function rssSettling(pid: number, seconds: number): Promise<{ samples: string[]; last?: number }> {
  const samples: string[] = [];
  let last: number | undefined;
  for (let s = 10; s <= seconds; s += 10) {
    await new Promise((r) => setTimeout(r, 10_000));
    last = procMemoryMiB(pid).rss;
    samples.push(`${s} s ${fmt(last)}`);
  }
  return { samples, last };
}

export const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–');

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function table(header: string[], rows: Array<Array<string | number>>): void {
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

// ---------------------------------------------------------------------------------------------------------
// smtp-sink: Postfix's C sink, one process per measured run, counting on its -c counter ("mesg=N" at each ".")

export class Sink {
  /** Every sink not stopped yet, so that a benchmark that failed half-way can still end them all. */
  private static readonly live = new Set<Sink>();
  private count = 0;
  private waiters: Array<{ n: number; resolve: (at: number) => void }> = [];
  private exited: Promise<void>;
  readonly dumpFile: string | null;

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    dumpFile: string | null,
  ) {
    this.dumpFile = dumpFile;
    let tail = '';
    child.stdout!.setEncoding('latin1');
    child.stdout!.on('data', (chunk: string) => {
      tail = (tail + chunk).slice(-200);
      const all = [...tail.matchAll(/mesg=(\d+)/g)];
      const last = all.length ? Number(all[all.length - 1][1]) : this.count;
      if (last === this.count) return;
      this.count = last;
      const now = performance.now();
      this.waiters = this.waiters.filter((w) => {
        if (this.count < w.n) return true;
        w.resolve(now);
        return false;
      });
    });
    child.stderr!.on('data', (d: Buffer) => process.stderr.write(`smtp-sink: ${d}`));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** Starts smtp-sink on 127.0.0.1:port; with `dumpDir`, every message is appended to one dump file there. */
  static async start(port: number, dumpDir?: string): Promise<Sink> {
    const args = ['-c'];
    let dumpFile: string | null = null;
    if (dumpDir) {
      dumpFile = join(dumpDir, 'messages.dump');
      args.push('-D', dumpFile);
    }
    if (process.getuid?.() === 0) {
      // smtp-sink refuses to run as root; it drops to this user after binding.
      args.push('-u', 'nobody');
      if (dumpDir) {
        const uid = Number(spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout.trim());
        chownSync(dumpDir, uid, -1);
      }
    }
    args.push(`127.0.0.1:${port}`, '256');
    const child = spawn(SINK_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const sink = new Sink(child, port, dumpFile);
    Sink.live.add(sink);
    // Ready when it accepts a connection.
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`smtp-sink exited with code ${child.exitCode}`);
      if (await canConnect(port)) return sink;
      if (i > 100) throw new Error('smtp-sink did not start listening');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  get messages(): number {
    return this.count;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** CPU the sink has used so far, µs. */
  cpuMicros(): number {
    return procCpuMicros(`/proc/${this.child.pid}/stat`);
  }

  /** Resolves with performance.now() of the moment the counter reached n (fails after timeoutMs). */
  reached(n: number, timeoutMs: number): Promise<number> {
    if (this.count >= n) return Promise.resolve(performance.now());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`smtp-sink has ${this.count} of ${n} messages after ${timeoutMs / 1000} s`)), timeoutMs);
      this.waiters.push({
        n,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      });
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
    Sink.live.delete(this);
  }

  static async stopAll(): Promise<void> {
    await Promise.all([...Sink.live].map((s) => s.stop()));
  }
}

/** Something listens on 127.0.0.1:port. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The last lines of a log file, or '' when there is none. */
export function logTail(file: string, lines = 10): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** Polls `check` every `everyMs` until it returns something truthy, and returns that; throws after `timeoutMs`. */
export async function until<T>(what: string, check: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs: number, everyMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** One message of an smtp-sink dump (-D): its envelope recipients and the message bytes (LF line ends). */
export interface Dumped {
  rcpts: string[];
  message: Buffer;
}

/**
 * Splits a dump file into messages. Each starts with smtp-sink's own X-Client-Addr ... Received lines, then the
 * message as received (lines end in LF), then an empty line.
 */
export function* readDump(file: string): Generator<Dumped> {
  // Read in chunks, so that 100 MB of dump never sits in memory at once (this process's RSS is reported).
  const marker = Buffer.from('\nX-Client-Addr: ');
  const fd = openSync(file, 'r');
  try {
    let carry = Buffer.alloc(0);
    const chunk = Buffer.alloc(4 * 2 ** 20);
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      // A leading newline lets the first message match the marker like every other one.
      carry = Buffer.concat([carry.length ? carry : Buffer.from('\n'), chunk.subarray(0, n)]);
      let at = carry.indexOf(marker);
      for (;;) {
        const next = at >= 0 ? carry.indexOf(marker, at + 1) : -1;
        if (next < 0) break;
        yield parseDumped(carry.subarray(at + 1, next + 1));
        at = next;
      }
      carry = at >= 0 ? Buffer.from(carry.subarray(at)) : carry;
      if (n === 0) {
        if (at >= 0) yield parseDumped(carry.subarray(1));
        return;
      }
    }
  } finally {
    closeSync(fd);
  }
}

function parseDumped(chunk: Buffer): Dumped {
  // smtp-sink's header block ends with its three-line Received header.
  const head = chunk.subarray(0, Math.min(chunk.length, 2048)).toString('latin1');
  const rcpts = [...head.matchAll(/^X-Rcpt-Args: <([^>]*)>/gm)].map((m) => m[1]);
  const received = /^Received: [^\n]*\n\t[^\n]*\n\t[^\n]*\n/m.exec(head);
  return { rcpts, message: chunk.subarray(received ? received.index + received[0].length : 0) };
}

// ---------------------------------------------------------------------------------------------------------
// Mailwright in this process

export interface BenchApp {
  running: RunningApp;
  config: Config;
  /** The MAILWRIGHT_* environment it runs with: `serve` as a process of its own on the same data directory takes it too. */
  env: Record<string, string>;
  dataDir: string;
  api: string;
  key: string;
  workspaceId: string;
  /** warn and error lines the app logged. */
  problems: string[];
  /** Starts the app again on the same data directory (after stop()). */
  restart(): Promise<RunningApp>;
  stop(): Promise<void>;
}

/** A test DNS server that knows the box, and routes RECIPIENT_DOMAIN to 127.0.0.1 by MX. */
export async function startBenchDns(): Promise<DnsServer> {
  const dns = await startDnsServer();
  dns.add(BOX, 'A', '127.0.0.1');
  dns.set(RECIPIENT_DOMAIN, 'MX', [{ preference: 10, exchange: `mx.${RECIPIENT_DOMAIN}` }]);
  dns.set(`mx.${RECIPIENT_DOMAIN}`, 'A', ['127.0.0.1']);
  return dns;
}

/** Mailwright with a workspace, an API key and SENDER_DOMAIN verified, delivering to 127.0.0.1:sinkPort. */
export async function startBenchApp(dns: DnsServer, sinkPort: number, env: Record<string, string> = {}): Promise<BenchApp> {
  const dataDir = benchDir('mw-bench-app-');
  const appEnv = testEnv(dataDir, {
    MAILWRIGHT_DNS_SERVERS: dns.address,
    MAILWRIGHT_MTA_PORT: String(sinkPort),
    MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true',
    MAILWRIGHT_RATE_LIMIT: '0',
    MAILWRIGHT_LOG_LEVEL: 'info',
    ...env,
  });
  const config = loadConfig(appEnv);
  const problems: string[] = [];
  // The production log level (info) and its JSON formatting, kept in memory instead of stdout.
  const log = createLog({
    level: 'info',
    write: (line) => {
      if (/"level":"(warn|error)"/.test(line) && problems.length < 50) problems.push(line);
    },
  });
  const start = () => startApp(config, { log });
  let running = await start();
  const api = `http://127.0.0.1:${running.http.port}/api/v1`;
  const { key, workspace } = await seedWorkspace({ app: running.app } as TestApp);
  const domain = (await request(`${api}/domains`, { body: { name: SENDER_DOMAIN }, key })).body;
  dns.publish(domain.records);
  const verified = await request(`${api}/domains/${domain.id}/verify`, { method: 'POST', key });
  if (verified.body.status !== 'verified') throw new Error(`could not verify ${SENDER_DOMAIN}: ${JSON.stringify(verified.body)}`);
  const bench: BenchApp = {
    get running() {
      return running;
    },
    config,
    env: appEnv,
    dataDir,
    get api() {
      return `http://127.0.0.1:${running.http.port}/api/v1`;
    },
    key,
    workspaceId: workspace.id,
    problems,
    async restart() {
      running = await start();
      return running;
    },
    async stop() {
      await running.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return bench;
}

/** About `bytes` of plain text in lines of at most 76 characters (7bit, as real text mail would be). */
export function textOfSize(bytes: number, seed = 0): string {
  const words = ['mail', 'queue', 'delivery', 'signature', 'postfix', 'benchmark', 'sender', 'recipient', 'message', 'domain', 'relay', 'throughput', 'appliance', 'header', 'body', 'the', 'and', 'of', 'to', 'a'];
  const lines: string[] = [];
  let size = 0;
  let n = seed;
  while (size < bytes) {
    let line = '';
    while (line.length < 66) line += (line ? ' ' : '') + words[(n = (n * 1103515245 + 12345) >>> 0) % words.length];
    lines.push(line);
    size += line.length + 2;
  }
  return lines.join('\n');
}
