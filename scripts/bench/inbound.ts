// Benchmark: inbound SMTP, messages accepted per second. smtp-source (Postfix's load generator) sends 10 KB
// messages (`-l 10240`, one recipient each) over 20 and then 100 concurrent sessions that reuse their connection
// (`-d`), a fixed count per run, to four servers in the same run, one after the other:
//   * smtp-sink: Postfix's C sink, which reads and discards: the transport limit of this machine;
//   * Postfix 3.7 (Debian's package) in a directory of its own: smtpd on a free loopback port, the recipient's
//     domain a relay domain with one listed recipient, delivered to discard:, every queue file fsynced by cleanup
//     before the 250 (Postfix's default);
//   * Mailwright in a process of its own (scripts/mailwright serve, fresh data directory per run), its inbox
//     domain set up for inbound mail through the HTTP API, every message authenticated (SPF and DMARC records
//     published in a test DNS server this process runs), parsed, classified, indexed and fsynced before its 250;
//   * the libraries' floor (inbound-floor.ts): smtp-server running the box's analyze() (mailauth and mailparser)
//     on its one thread and storing nothing. Its CPU per message, with smtp-source's, gives the most any server
//     built on these libraries could accept on this machine's cores: the ceiling a goal set as a ratio to
//     Postfix meets here before the box stores a byte.
// The clock runs from smtp-source's start to its exit (exit 0: every message got its 250). Beside the load a
// probe client of this process sends the same kind of message on one more session, 10 ms apart, and times each
// final dot to its 250 (p50, p99); its messages acknowledged inside the window count towards msgs/s. Server CPU is read from /proc; Mailwright's RSS at the end of the load and its peak
// (VmHWM) too. Afterwards every accepted message must be there: smtp-sink's counter, Postfix's cleanup log lines,
// Mailwright's received emails in its store (read once the app has stopped).
import { fork, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { databasePath } from '../../src/db/open.ts';
import { request } from '../../src/testkit/app.ts';
import { startDnsServer, type DnsServer } from '../../src/testkit/dns-server.ts';
import { BOX } from '../../src/testkit/outbound.ts';
import { SENDER_DOMAIN, Sink, ensurePostfixInstalled, fmt, freePort, logTail, machineBusyMicros, percentile, procCpuMicros, procMemoryMiB, reportGoal, reportRssAfterGoal, rssSettling, table, threadCpuByName, until } from './lib.ts';
import { Postfix } from './postfix.ts';
import { heapSampler } from './heap-split.ts';
import { BENCH_STORE, startServe, type FreshServe } from './serve-process.ts';
import { readBox } from '../../src/testkit/postgres.ts';
import { all, value } from '../../src/db/query.ts';
import { benchFilterCost } from './inbound-filter.ts';
import { benchSpamEndToEnd } from './spam-e2e.ts';

const MESSAGES = Number(process.env.BENCH_INBOUND_MESSAGES ?? 20_000);
/**
 * Sent (same shape, unmeasured) before each measured run: start-up, JIT and caches out of the figures. A fresh
 * serve's three isolates take 3,000-4,000 messages to optimise what they run (V8's --trace-opt: 302 functions
 * compiled by TurboFan in the first 500 messages, 107 in the next 500, 74, 71, 35, 31, 17, 12, then a handful;
 * about 3 s of a helper thread's CPU in all), which a box that runs for months pays once.
 */
const WARMUP = Number(process.env.BENCH_INBOUND_WARMUP ?? 4000);
const SHAPES = (process.env.BENCH_INBOUND_SESSIONS ?? '20,100').split(',').map(Number);
/** Which servers to run (all four by default); the ratios need Postfix and smtp-sink in the same run. */
// `filter`: the spam filter's cost, spam_filter off and builtin taking turns on real text (inbound-filter.ts).
// `spam` (not by default; `BENCH_ONLY=spam npm run bench` runs it): the spam defence end to end (spam-e2e.ts).
const SERVERS = (process.env.BENCH_INBOUND_SERVERS ?? 'smtp-sink,Postfix,libraries,Mailwright,filter').split(',').map((s) => s.trim().toLowerCase());
/** A directory: Mailwright runs under node --cpu-prof and leaves one .cpuprofile per run there. */
const PROFILE_DIR = process.env.BENCH_INBOUND_PROFILE;
// BENCH_NODE_OPTIONS: node flags for Mailwright's process (e.g. --max-semi-space-size=2, --heapsnapshot-signal=SIGUSR2);
// BENCH_MEMORY_PROFILE: its memory_profile (default, small); BENCH_SERVE_ENV: more of its environment, as
// space-separated NAME=value (e.g. MALLOC_ARENA_MAX=2).
/** Seconds Mailwright is left idle after the load, its RSS read at the end (under 160 MiB within a minute). */
const SETTLE_S = Number(process.env.BENCH_INBOUND_SETTLE_S ?? 60);
const BODY_BYTES = 10 * 1024;
const SOURCE_BIN = '/usr/sbin/smtp-source';
const INBOX_DOMAIN = 'inbound.bench.test';
const INBOX = `bench@${INBOX_DOMAIN}`;
const SENDER = `sender@${SENDER_DOMAIN}`;
/** The HELO name of smtp-source (-M) and of the probe; it has an A record, and 127.0.0.1's PTR names it. */
const CLIENT_HOST = `mail.${SENDER_DOMAIN}`;
const SUBJECT = 'Inbound benchmark';
const RUN_TIMEOUT_MS = 15 * 60_000;
const REPLY_TIMEOUT_MS = 60_000;
/** The probe's pause between messages: it samples latency and adds at most about 100 messages/s of load. */
const PROBE_PAUSE_MS = 10;
/** Cores busy on an idle machine above which a run's figures are flagged as skewed by other processes. */
const BUSY_LIMIT = 0.1;
/** Postfix's smtpd process limit: 100 by default, which would leave the probe's 101st session waiting. */
const POSTFIX_SMTPD_LIMIT = 150;

type Server = 'smtp-sink' | 'Postfix' | 'libraries' | 'Mailwright' | 'Mailwright on PostgreSQL';

interface Row {
  sessions: number;
  server: Server;
  /** Messages that got their 250 inside the window: smtp-source's and the probe's. */
  accepted: number;
  seconds: number;
  /** CPU of the server per accepted message, µs (Postfix: the machine less this process and smtp-source). */
  serverCpu: number;
  machineCpu: number;
  /** MiB: at the end of the load, the peak, and SETTLE_S after the load (when waited for). */
  rss?: { rss: number; peak: number; after?: number };
  p50: number;
  p99: number;
  notes: string[];
  /** Cores busy on the machine just before the run, with the server idle (other people's work). */
  busyBefore: number;
  /** smtp-source's CPU per message, µs (kept for the libraries' floor, whose ceiling counts it). */
  sourceCpu?: number;
  error?: string;
}

const rate = (r: Row) => r.accepted / r.seconds;

// ---------------------------------------------------------------------------------------------------------
// smtp-source, and a probe session beside it

const sourceArgs = (sessions: number, count: number, port: number) => [
  '-s', String(sessions), '-m', String(count), '-d', '-l', String(BODY_BYTES), '-S', SUBJECT, '-M', CLIENT_HOST, '-f', SENDER, '-t', INBOX, `127.0.0.1:${port}`,
];

const sourceCommand = (sessions: number, count: number) => `smtp-source ${sourceArgs(sessions, count, 0).slice(0, -1).map((a) => (/\s/.test(a) ? `'${a}'` : a)).join(' ')} 127.0.0.1:PORT`;

interface SourceResult {
  code: number | null;
  /** smtp-source's own CPU (user + system), µs. */
  cpu: number;
  output: string;
}

/** Runs smtp-source to the end; bash's `times` reports the CPU of the child it waited for. */
function smtpSource(sessions: number, count: number, port: number): Promise<SourceResult> {
  return new Promise((resolve) => {
    let out = '';
    let err = '';
    // In a process group of its own, so that a run that hangs can be ended with smtp-source and all.
    const child = spawn('bash', ['-c', '"$@"; rc=$?; times; exit $rc', 'bash', SOURCE_BIN, ...sourceArgs(sessions, count, port)], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const timer = setTimeout(() => {
      err += `killed after ${RUN_TIMEOUT_MS / 1000} s\n`;
      process.kill(-child.pid!, 'SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      clearTimeout(timer);
      const children = out.trim().split('\n').pop() ?? '';
      const cpu = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + (Number(m[1]) * 60 + Number(m[2])) * 1e6, 0);
      resolve({ code, cpu, output: (err + out.split('\n').slice(0, -3).join('\n')).trim() });
    });
  });
}

async function mustSource(sessions: number, count: number, port: number): Promise<SourceResult> {
  const result = await smtpSource(sessions, count, port);
  if (result.code !== 0) throw new Error(`smtp-source exited with code ${result.code}: ${result.output.split('\n').slice(0, 3).join(' | ') || '(no output)'}`);
  return result;
}

/** The probe's message: what smtp-source -l sends (its headers, then lines of 78 characters), with a unique Message-Id. */
function probeMessage(n: number): string {
  const head = `From: <${SENDER}>\r\nTo: <${INBOX}>\r\nDate: ${new Date().toUTCString()}\r\nMessage-Id: <probe.${process.pid}.${n}@${CLIENT_HOST}>\r\nSubject: ${SUBJECT} (probe)\r\n\r\n`;
  let body = '';
  for (let i = 1; body.length < BODY_BYTES; i++) body += `${i % 10}${'X'.repeat(77)}\r\n`;
  return head + body;
}

/** A minimal SMTP client on one connection: whole replies (multi-line included) in order. */
class Session {
  private buffer = '';
  private readonly replies: string[] = [];
  private waiter: { resolve: (reply: string) => void; reject: (err: Error) => void } | null = null;
  private closed: Error | null = null;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      for (;;) {
        let at = 0;
        let end = -1;
        for (;;) {
          const eol = this.buffer.indexOf('\r\n', at);
          if (eol < 0) break;
          const line = this.buffer.slice(at, eol);
          at = eol + 2;
          if (line.length < 4 || line[3] !== '-') {
            end = at;
            break;
          }
        }
        if (end < 0) return;
        const reply = this.buffer.slice(0, end - 2);
        this.buffer = this.buffer.slice(end);
        if (this.waiter) {
          const w = this.waiter;
          this.waiter = null;
          w.resolve(reply);
        } else this.replies.push(reply);
      }
    });
    const gone = (err?: Error) => {
      this.closed ??= err ?? new Error('connection closed');
      this.waiter?.reject(this.closed);
      this.waiter = null;
    };
    socket.on('error', gone);
    socket.on('close', () => gone());
  }

  static open(port: number): Promise<Session> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.off('error', reject);
        resolve(new Session(socket));
      });
      socket.once('error', reject);
    });
  }

  read(): Promise<string> {
    const ready = this.replies.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (this.closed) return Promise.reject(this.closed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply in ${REPLY_TIMEOUT_MS / 1000} s`)), REPLY_TIMEOUT_MS);
      this.waiter = {
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
    });
  }

  write(data: string): void {
    this.socket.write(data, 'latin1');
  }

  /** Sends a command and expects a reply with this code. */
  async expect(line: string | null, code: number): Promise<string> {
    if (line !== null) this.write(`${line}\r\n`);
    const reply = await this.read();
    if (!reply.startsWith(String(code))) throw new Error(`${line ?? 'greeting'}: ${reply.replace(/\r\n/g, ' | ')}`);
    return reply;
  }

  close(): void {
    this.socket.destroy();
  }
}

interface ProbeResult {
  /** dot → 250, ms, sorted. */
  latencies: number[];
  /** performance.now() of each 250 to a dot. */
  acceptedAt: number[];
  error: string | null;
}

/**
 * One more session beside the load: the same kind of message again and again until stop(), PROBE_PAUSE_MS apart,
 * timing each dot → 250. Unpaced, it would take a large share of a fast server (a third of smtp-sink's messages in
 * a trial) and measure itself more than the server.
 */
class Probe {
  private stopping = false;
  private readonly latencies: number[] = [];
  private readonly acceptedAt: number[] = [];
  private error: string | null = null;
  private loop: Promise<void> = Promise.resolve();

  private constructor(private readonly session: Session) {}

  static async open(port: number): Promise<Probe> {
    const session = await Session.open(port);
    await session.expect(null, 220);
    await session.expect(`EHLO ${CLIENT_HOST}`, 250);
    return new Probe(session);
  }

  run(): void {
    this.loop = (async () => {
      try {
        for (let n = 0; !this.stopping; n++) {
          await this.session.expect(`MAIL FROM:<${SENDER}>`, 250);
          await this.session.expect(`RCPT TO:<${INBOX}>`, 250);
          await this.session.expect('DATA', 354);
          this.session.write(probeMessage(n));
          const sent = performance.now();
          this.session.write('.\r\n');
          await this.session.expect(null, 250);
          const now = performance.now();
          this.latencies.push(now - sent);
          this.acceptedAt.push(now);
          await new Promise((r) => setTimeout(r, PROBE_PAUSE_MS));
        }
        await this.session.expect('QUIT', 221);
      } catch (err) {
        this.error = `probe: ${(err as Error).message}`;
      } finally {
        this.session.close();
      }
    })();
  }

  async stop(): Promise<ProbeResult> {
    this.stopping = true;
    await this.loop;
    return { latencies: [...this.latencies].sort((a, b) => a - b), acceptedAt: this.acceptedAt, error: this.error };
  }
}

interface Measured {
  accepted: number;
  seconds: number;
  serverCpu: number;
  machineCpu: number;
  /** This process (the probe and the DNS server), µs per accepted message. */
  selfCpu: number;
  sourceCpu: number;
  probe: ProbeResult;
  /** Messages the server acknowledged in all: warm-up, smtp-source and every probe message. */
  total: number;
  /** Cores the machine kept busy while the server sat idle just before the run: other people's work. */
  busyBefore: number;
}

/** Cores busy on the whole machine over the next `ms`. */
async function machineBusyCores(ms = 500): Promise<number> {
  const before = machineBusyMicros();
  const at = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return (machineBusyMicros() - before) / ((performance.now() - at) * 1000);
}

/**
 * A warm-up run, then the measured one with the probe beside it. `serverCpu` reads the server's CPU so far (µs);
 * null for Postfix, whose CPU is the machine's less this process and smtp-source.
 */
async function measure(sessions: number, port: number, serverCpu: (() => number) | null): Promise<Measured> {
  const busyBefore = await machineBusyCores();
  if (WARMUP > 0) await mustSource(sessions, WARMUP, port);
  const probe = await Probe.open(port);
  const cpu0 = serverCpu?.() ?? 0;
  const machine0 = machineBusyMicros();
  const self0 = process.cpuUsage();
  const started = performance.now();
  const source = smtpSource(sessions, MESSAGES, port);
  probe.run();
  const result = await source;
  const ended = performance.now();
  const cpu = (serverCpu?.() ?? 0) - cpu0;
  const machine = machineBusyMicros() - machine0;
  const selfUsage = process.cpuUsage(self0);
  const self = selfUsage.user + selfUsage.system;
  const probed = await probe.stop();
  if (result.code !== 0) throw new Error(`smtp-source exited with code ${result.code}: ${result.output.split('\n').slice(0, 3).join(' | ') || '(no output)'}${probed.error ? `; ${probed.error}` : ''}`);
  if (probed.error) throw new Error(probed.error);
  const accepted = MESSAGES + probed.acceptedAt.filter((t) => t <= ended).length;
  return {
    accepted,
    seconds: (ended - started) / 1000,
    serverCpu: (serverCpu ? cpu : machine - self - result.cpu) / accepted,
    machineCpu: machine / accepted,
    selfCpu: self / accepted,
    sourceCpu: result.cpu / accepted,
    probe: probed,
    total: WARMUP + MESSAGES + probed.latencies.length,
    busyBefore,
  };
}

function row(sessions: number, server: Server, m: Measured, notes: string[], rss?: Row['rss']): Row {
  return {
    sessions,
    server,
    accepted: m.accepted,
    seconds: m.seconds,
    serverCpu: m.serverCpu,
    machineCpu: m.machineCpu,
    rss,
    p50: percentile(m.probe.latencies, 50),
    p99: percentile(m.probe.latencies, 99),
    busyBefore: m.busyBefore,
    notes: [
      `${fmt(m.accepted)} messages in ${fmt(m.seconds, 2)} s (${fmt(m.probe.latencies.length)} of them the probe's); smtp-source ${fmt(m.sourceCpu)} µs/msg, this process (probe, DNS server) ${fmt(m.selfCpu)} µs/msg`,
      ...notes,
      ...(m.busyBefore > BUSY_LIMIT ? [`**the machine was already ${fmt(m.busyBefore * 100)} % of a core busy before this run with the server idle: other processes, which skew these figures**`] : []),
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------
// 1. smtp-sink

async function sinkRun(sessions: number): Promise<Row> {
  const sink = await Sink.start(await freePort());
  try {
    const m = await measure(sessions, sink.port, () => sink.cpuMicros());
    const rss = procMemoryMiB(sink.pid);
    await sink.reached(m.total, 10_000);
    return row(sessions, 'smtp-sink', m, [`the sink counted ${fmt(sink.messages)} messages (warm-up ${fmt(WARMUP)} + ${fmt(MESSAGES)} + the probe's ${fmt(m.probe.latencies.length)})`], rss);
  } finally {
    await sink.stop();
  }
}

// ---------------------------------------------------------------------------------------------------------
// 2. Postfix in a directory of its own (postfix -c): smtpd on one loopback port only, never on 25

/** A relay domain with one listed recipient, delivered to discard: (every queue file still fsynced by cleanup). */
const createPostfix = () =>
  Postfix.create({
    label: 'mw-bench-inbound-postfix-',
    main: [
      // smtp-source connects from 127.0.0.1, in mynetworks (127.0.0.0/8), so anvil's per-client limits (50
      // connections) do not refuse the 100-session run; the recipient is still checked against relay_recipient_maps.
      `relay_domains = ${INBOX_DOMAIN}`,
      `relay_recipient_maps = inline:{ ${INBOX}=ok }`,
      `transport_maps = inline:{ ${INBOX_DOMAIN}=discard: }`,
      'smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination',
    ],
    smtpdProcessLimit: POSTFIX_SMTPD_LIMIT,
  });

/** Messages cleanup has written to the queue (one `message-id=` line each). */
function cleanupLogged(pf: Postfix): number {
  try {
    return readFileSync(pf.maillog, 'utf8').match(/ postfix\/cleanup\[\d+\]: \w+: message-id=/g)?.length ?? 0;
  } catch {
    return 0;
  }
}

async function postfixRun(sessions: number): Promise<Row> {
  const pf = await createPostfix();
  try {
    await pf.start();
    const m = await measure(sessions, pf.port, null);
    // postlogd writes the log a little after the fact.
    const logged = await until('Postfix to log every accepted message', () => cleanupLogged(pf) >= m.total && cleanupLogged(pf), 30_000).catch(() => cleanupLogged(pf));
    const notes = [`cleanup logged ${fmt(logged)} queued messages (warm-up ${fmt(WARMUP)} + ${fmt(MESSAGES)} + the probe's ${fmt(m.probe.latencies.length)})`];
    if (logged !== m.total) notes.push(`**expected ${fmt(m.total)} queued messages in Postfix's log, found ${fmt(logged)}**`);
    return row(sessions, 'Postfix', m, notes);
  } finally {
    await pf.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------------
// 3. The libraries' floor: smtp-server, mailauth and mailparser on one thread, nothing stored

const FLOOR = fileURLToPath(new URL('./inbound-floor.ts', import.meta.url));

/**
 * Messages per second the machine's cores could accept at most with the floor's CPU per message and the load
 * generator's beside it, every core busy: what no server built on these libraries can beat here.
 */
const ceiling = (r: Row) => (cpus().length * 1e6) / (r.serverCpu + (r.sourceCpu ?? 0));

async function floorRun(sessions: number): Promise<Row> {
  const child = fork(FLOOR, [JSON.stringify({ hostname: BOX, client: CLIENT_HOST, senderDomain: SENDER_DOMAIN })], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m: { port: number }) => resolve(m.port));
      child.once('exit', (code) => reject(new Error(`inbound-floor.ts exited with code ${code} before listening`)));
    });
    const m = await measure(sessions, port, () => procCpuMicros(`/proc/${child.pid}/stat`));
    const rss = procMemoryMiB(child.pid!);
    const r = { ...row(sessions, 'libraries', m, [], rss), sourceCpu: m.sourceCpu };
    r.notes.push(`one thread (and V8's helpers): at ${fmt(m.serverCpu)} µs of CPU per message, with smtp-source's ${fmt(m.sourceCpu)}, ${cpus().length} cores could accept at most ${fmt(ceiling(r))} msgs/s`);
    return r;
  } finally {
    child.kill('SIGTERM');
  }
}

// ---------------------------------------------------------------------------------------------------------
// 4. Mailwright in a process of its own

/** The test DNS server: the box, and a sender domain with SPF for 127.0.0.1, DMARC p=none, its client's A and PTR. */
async function startInboundDns(): Promise<DnsServer> {
  const dns = await startDnsServer();
  dns.addZone('bench.test');
  dns.add(BOX, 'A', '127.0.0.1');
  dns.set(SENDER_DOMAIN, 'TXT', ['v=spf1 ip4:127.0.0.1 -all']);
  dns.set(`_dmarc.${SENDER_DOMAIN}`, 'TXT', ['v=DMARC1; p=none']);
  dns.set(CLIENT_HOST, 'A', ['127.0.0.1']);
  dns.set('1.0.0.127.in-addr.arpa', 'PTR', [CLIENT_HOST]);
  return dns;
}

type AppProcess = FreshServe;

/** `scripts/mailwright serve` (serve-process.ts) with its MX listener on a free loopback port, set for the load. */
const startMailwright = (dns: DnsServer, nodeOptions = '', env: Record<string, string> = {}): Promise<AppProcess> =>
  startServe({
    label: 'mw-bench-inbound-app-',
    nodeOptions,
    profileDir: PROFILE_DIR,
    env: {
      MAILWRIGHT_DNS_SERVERS: dns.address,
      MAILWRIGHT_SMTP_HOST: '127.0.0.1',
      MAILWRIGHT_HOSTNAME: BOX,
      MAILWRIGHT_RATE_LIMIT: '0',
      // smtp-source -d sends every message of a session over one connection (1,000 each at 20 sessions), and
      // neither peer caps messages per session: the default cap of 1,000 would end the run, not measure it.
      MAILWRIGHT_SMTP_MAX_MESSAGES: '1000000',
      // Every session of smtp-source and of the probe comes from 127.0.0.1: up to 101 open at once, and about 200
      // connections within a minute at 100 sessions (warm-up, run, probe). The per-client limits (20 open, 60 a
      // minute) are for the internet's clients, not one load generator; the Postfix under test exempts it too
      // (smtpd_client_event_limit_exceptions is $mynetworks, here 127.0.0.0/8). smtp_max_clients (200) still holds,
      // and 101 is within the 160 of them open to a sender the box does not know yet (smtp_reserved_clients 40).
      MAILWRIGHT_SMTP_MAX_CLIENTS_PER_IP: '200',
      MAILWRIGHT_SMTP_MAX_CLIENTS_PER_NETWORK: '200',
      // BENCH_MEMORY_PROFILE=small measures the profile for a 1 GiB VPS.
      MAILWRIGHT_MEMORY_PROFILE: process.env.BENCH_MEMORY_PROFILE ?? 'default',
      MAILWRIGHT_SMTP_CONNECTION_RATE_PER_IP: '0',
      ...env,
    },
  });

/** Through the API: the inbox domain, its records and MX published, inbound verified `ready`, the inbox. */
async function setUpInbox(app: AppProcess, dns: DnsServer): Promise<string> {
  const must = async (what: string, reply: Promise<{ status: number; body: any }>, ok = [200, 201]) => {
    const r = await reply;
    if (!ok.includes(r.status)) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
    return r.body;
  };
  const { api, key } = app;
  const domain = await must('POST /domains', request(`${api}/domains`, { body: { name: INBOX_DOMAIN }, key }));
  dns.publish(domain.records);
  const setup = await must('POST /domains/:id/inbound/setup', request(`${api}/domains/${domain.id}/inbound/setup`, { method: 'POST', key }));
  // The record it asks for: MX "10 mx.mailwright.test" on the domain.
  const [preference, exchange] = String(setup.record.value).split(/\s+/);
  dns.set(setup.record.name, 'MX', [{ preference: Number(preference), exchange }]);
  dns.set(exchange, 'A', ['127.0.0.1']);
  await until(
    `inbound status ready for ${INBOX_DOMAIN}`,
    async () => (await must('POST /domains/:id/inbound/verify', request(`${api}/domains/${domain.id}/inbound/verify`, { method: 'POST', key }))).status === 'ready',
    10_000,
  );
  const inbox = await must('POST /inboxes', request(`${api}/inboxes`, { body: { domain_id: domain.id, local_part: 'bench', name: 'Bench' }, key }));
  return inbox.id as string;
}

/** Read after the app stopped: received emails, by category, and the database's size. */
async function countReceived(app: FreshServe): Promise<{ received: number; categories: string; dbMiB: number }> {
  if (app.env.MAILWRIGHT_DATABASE_URL) {
    const rows = await readBox(app.env, all<{ category: string; n: number }>("SELECT coalesce(category, 'none') AS category, count(*) AS n FROM emails WHERE direction = 'in' GROUP BY 1 ORDER BY 2 DESC"));
    const bytes = (await readBox(app.env, value<number>('SELECT pg_database_size(current_database())')))!;
    return { received: rows.reduce((n, r) => n + r.n, 0), categories: rows.map((r) => `${r.category} ${fmt(r.n)}`).join(', '), dbMiB: bytes / 2 ** 20 };
  }
  const file = databasePath(app.dataDir);
  const dbMiB = ['', '-wal'].reduce((sum, suffix) => sum + (existsSync(file + suffix) ? statSync(file + suffix).size : 0), 0) / 2 ** 20;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const received = db.prepare("SELECT count(*) FROM emails WHERE direction = 'in'").pluck().get() as number;
    let categories = '';
    try {
      const rows = db.prepare("SELECT coalesce(category, 'none') AS category, count(*) AS n FROM emails WHERE direction = 'in' GROUP BY 1 ORDER BY 2 DESC").all() as Array<{ category: string; n: number }>;
      categories = rows.map((r) => `${r.category} ${fmt(r.n)}`).join(', ');
    } catch {}
    return { received, categories, dbMiB };
  } finally {
    db.close();
  }
}

async function mailwrightRun(sessions: number, dns: DnsServer): Promise<Row> {
  const heaps = heapSampler();
  const app = await startMailwright(dns, heaps.nodeOptions);
  let stopped = false;
  try {
    await setUpInbox(app, dns);
    dns.resetQueries();
    const idle = procMemoryMiB(app.pid).rss;
    heaps.start(app.pid);
    // measure() samples once at the start and once at the end.
    const threads: Array<Map<string, number>> = [];
    const m = await measure(sessions, app.smtpPort, () => {
      threads.push(threadCpuByName(app.pid));
      return procCpuMicros(`/proc/${app.pid}/stat`);
    });
    const rss = procMemoryMiB(app.pid);
    const split = await heaps.stop();
    const queries = dns.queries.length;
    const settled = await rssSettling(app.pid, SETTLE_S);
    const after = `${SETTLE_S} s after the load, ${await heaps.last()}`;
    const code = await app.stop();
    stopped = true;
    // Threads that ended during the window (none, normally) are left out of this split but not of the total.
    const cpuSplit = [...threads[1]]
      .map(([name, cpu]) => [name, (cpu - (threads[0].get(name) ?? 0)) / Math.max(1, m.accepted)] as const)
      .filter(([, perMessage]) => perMessage >= 1)
      .sort((a, b) => b[1] - a[1]);
    const notes = [
      `RSS MiB idle before the load ${fmt(idle)}, at its end ${fmt(rss.rss)}, peak ${fmt(rss.peak)}; after it${settled.samples.length ? `: ${settled.samples.join(', ')}` : ' (not waited for)'}`,
      split,
      after,
      `of the server CPU, µs/msg by thread: ${cpuSplit.map(([name, perMessage]) => `${name} ${fmt(perMessage)}`).join(', ')}`,
      `${fmt(queries / m.total, 2)} DNS queries per message; serve exited with code ${code} after SIGTERM`,
    ];
    const { received, categories, dbMiB } = await countReceived(app);
    notes.push(`${fmt(received)} received emails in the database (${categories || 'no category column'}), ${fmt(dbMiB)} MiB on disk`);
    if (received !== m.total) notes.push(`**expected ${fmt(m.total)} received emails (warm-up ${fmt(WARMUP)} + ${fmt(MESSAGES)} + the probe's ${fmt(m.probe.latencies.length)}), found ${fmt(received)}**`);
    const log = readFileSync(app.logFile, 'utf8').trimEnd().split('\n');
    const problems = log.filter((line) => /"level":"(warn|error)"/.test(line));
    notes.push(`logged ${fmt(log.length)} lines${problems.length ? `, ${fmt(problems.length)} warnings or errors, the first: ${problems[0].slice(0, 300)}` : ''}`);
    return row(sessions, BENCH_STORE === 'postgres' ? 'Mailwright on PostgreSQL' : 'Mailwright', m, notes, { ...rss, after: settled.last });
  } catch (err) {
    const tail = logTail(app.logFile, 3);
    throw new Error(`${(err as Error).message}${tail ? `\nlast lines of its log:\n${tail}` : ''}`);
  } finally {
    if (!stopped) await app.stop();
    await app.dispose();
  }
}

// ---------------------------------------------------------------------------------------------------------

async function attempt(sessions: number, server: Server, run: () => Promise<Row>): Promise<Row> {
  try {
    return await run();
  } catch (err) {
    process.exitCode = 1;
    return { sessions, server, accepted: 0, seconds: NaN, serverCpu: NaN, machineCpu: NaN, p50: NaN, p99: NaN, notes: [], busyBefore: 0, error: (err as Error).message };
  }
}

export async function benchInbound(): Promise<Row[]> {
  const throughput = SERVERS.some((s) => ['smtp-sink', 'postfix', 'libraries', 'mailwright'].includes(s));
  if (throughput) ensurePostfixInstalled();
  if (throughput)
    console.log(
    `\ninbound: ${fmt(MESSAGES)} messages of 10 KB per run (after ${fmt(WARMUP)} unmeasured), one recipient each, over reused sessions: ${SHAPES.map((s) => `\`${sourceCommand(s, MESSAGES)}\``).join(', ')}. ` +
      `Postfix 3.7: default queue (cleanup fsyncs each queue file before the 250), relay domain with one listed recipient, delivered to discard:. ` +
      `Mailwright: \`scripts/mailwright serve\` in its own process, fresh data directory per run; SPF and DMARC published for the sender. ` +
      `libraries: smtp-server running the box's analyze() (mailauth, mailparser) on one thread, storing nothing (inbound-floor.ts). ` +
      `A probe session beside the load times each final dot to its 250.`,
  );
  const dns = await startInboundDns();
  const rows: Row[] = [];
  try {
    for (const sessions of SHAPES) {
      if (SERVERS.includes('smtp-sink')) rows.push(await attempt(sessions, 'smtp-sink', () => sinkRun(sessions)));
      if (SERVERS.includes('postfix')) rows.push(await attempt(sessions, 'Postfix', () => postfixRun(sessions)));
      if (SERVERS.includes('libraries')) rows.push(await attempt(sessions, 'libraries', () => floorRun(sessions)));
      if (SERVERS.includes('mailwright')) rows.push(await attempt(sessions, 'Mailwright', () => mailwrightRun(sessions, dns)));
    }
    if (SERVERS.includes('spam')) {
      await benchSpamEndToEnd({ dns, startMailwright, setUpInbox, inbox: INBOX }).catch((err: Error) => {
        process.exitCode = 1;
        console.log(`\nthe spam defence end to end: **failed**: ${err.message}`);
      });
    }
    if (SERVERS.includes('filter')) {
      await benchFilterCost({ dns, startMailwright, setUpInbox, inbox: INBOX }).catch((err: Error) => {
        process.exitCode = 1;
        console.log(`\nthe spam filter's cost: **failed**: ${err.message}`);
      });
    }
  } finally {
    await Sink.stopAll();
    await dns.close();
  }
  // Only the spam runs (their tables are printed): no throughput rows, no throughput goals.
  if (rows.length === 0) return rows;

  const find = (sessions: number, server: Server) => rows.find((r) => r.sessions === sessions && r.server === server && !r.error);
  const ratio = (r: Row, to: Server) => {
    const base = find(r.sessions, to);
    return r.error || !base ? '–' : `${(rate(r) / rate(base)).toFixed(2)}x`;
  };
  table(
    ['sessions', 'server', 'msgs/s', '÷ Postfix', '÷ smtp-sink', 'server CPU µs/msg', 'machine CPU µs/msg', 'RSS MiB end / peak', 'dot → 250 ms p50 / p99'],
    rows.map((r) =>
      r.error
        ? [`${r.sessions}, reuse`, r.server, 'failed', '–', '–', '–', '–', '–', '–']
        : [
            `${r.sessions}, reuse`,
            r.server,
            fmt(rate(r)),
            ratio(r, 'Postfix'),
            ratio(r, 'smtp-sink'),
            fmt(r.serverCpu),
            fmt(r.machineCpu),
            r.rss ? `${fmt(r.rss.rss)} / ${fmt(r.rss.peak)}` : 'many processes',
            `${fmt(r.p50, 2)} / ${fmt(r.p99, 2)}`,
          ],
    ),
  );
  /** The libraries' ceiling as a ratio to Postfix's rate in the same shape, when both ran. */
  const reachable = (sessions: number) => {
    const floor = find(sessions, 'libraries');
    const postfix = find(sessions, 'Postfix');
    return floor && postfix ? { perSecond: ceiling(floor), ratio: `${(ceiling(floor) / rate(postfix)).toFixed(2)}x` } : null;
  };
  for (const [sessions, min] of [[20, 1.5], [100, 2.0]] as const) {
    const mw = find(sessions, 'Mailwright');
    const measured = mw ? ratio(mw, 'Postfix') : '–';
    const reach = reachable(sessions) ? ` (the libraries' ceiling on this machine: ${reachable(sessions)!.ratio})` : '';
    reportGoal({ goal: `inbound, ${sessions} sessions, vs Postfix`, measured: `${measured}${measured === '–' ? '' : reach}`, target: `≥ ${min.toFixed(1)}x`, pass: measured === '–' ? null : parseFloat(measured) >= min });
    if (sessions !== 100) continue;
    reportGoal({ goal: `memory, inbound at 100 sessions (peak RSS, ${process.env.BENCH_MEMORY_PROFILE ?? 'default'} profile)`, measured: mw?.rss ? `${fmt(mw.rss.peak)} MiB` : '–', target: '≤ 256 MiB', pass: mw?.rss ? mw.rss.peak <= 256 : null });
    reportRssAfterGoal('inbound at 100 sessions', SETTLE_S, mw?.rss?.after);
  }
  const skewed = rows.filter((r) => r.busyBefore > BUSY_LIMIT).length;
  if (skewed) console.log(`\n**${skewed} of ${rows.length} runs started on a machine other processes kept busy (see the notes): their figures, and the ratios between them, are not those of a quiet machine.**`);
  for (const sessions of SHAPES) {
    const reach = reachable(sessions);
    if (reach) console.log(`\n${sessions} sessions: the libraries' ceiling on this machine (smtp-server, mailauth and mailparser on every core, nothing stored) is ${fmt(reach.perSecond)} msgs/s, ${reach.ratio} Postfix.`);
  }
  console.log(`\nserver CPU: smtp-sink's, the libraries' and Mailwright's own process; for Postfix the whole machine less this process (probe, DNS server) and smtp-source. Notes:`);
  for (const r of rows) {
    if (r.error) console.log(`- ${r.sessions} sessions, ${r.server}: **failed**: ${r.error.replace(/\n/g, '\n  ')}`);
    for (const note of r.notes) console.log(`- ${r.sessions} sessions, ${r.server}: ${note}`);
  }
  return rows;
}

// Run by scripts/bench/run.ts in a process of its own; also runnable alone: node --import tsx scripts/bench/inbound.ts
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // run.ts prints the machine before it starts this file.
  const parent = existsSync(`/proc/${process.ppid}/cmdline`) ? readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8') : '';
  if (!parent.includes('bench/run.ts')) console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`);
  await benchInbound();
}
