// Benchmark: outbound delivery of 10,000 10 KB text messages (one recipient each, all different) to Postfix's
// smtp-sink on loopback, Mailwright signing every message with DKIM (RSA-2048), in the same run as Postfix 3.7
// twice: relaying the same message unsigned, and with Debian's OpenDKIM as its milter (rsa-sha256, 2048-bit key,
// relaxed/relaxed), the stack a sysadmin would run to send signed mail. OpenDKIM signs at receipt: smtp-source
// injects through smtpd, so smtpd_milters is the path that signs (non_smtpd_milters, for sendmail/postdrop, is
// set the same as an administrator would, and unused here). Each sender is measured two ways:
//   * queued, then flushed: all 10,000 are in the queue first and none can go out; the clock starts when delivery
//     is released (Postfix: defer_transports cleared, reload, postqueue -f; Mailwright: the app started again on
//     its data directory, so start-up is inside the time) and stops when the sink has counted the 10,000th message.
//     This is "delivered from the queue", what performance-baseline.md section 5 measured (queue, then flush).
//     Both signers sign at acceptance (OpenDKIM at receipt, Mailwright's send/presign.ts once a send is committed),
//     so neither drain carries signing; each intake is timed until its last message is signed.
//   * enqueued while delivering: the clock starts at the first injection (Postfix: smtp-source, 20 sessions;
//     Mailwright: POST /emails/batch, 100 per batch, 4 at a time) and stops at the sink's 10,000th message.
// A fresh smtp-sink process (same binary and options) receives each run and appends every message to a dump file;
// the dump proves the count and the distinct recipients, that every signed sender's message carries a
// DKIM-Signature (and the unsigned Postfix's none), and a sample of them verifies with mailauth against the key
// published in the bench's DNS server. BENCH_STORE=postgres runs Mailwright's box in a fresh PostgreSQL database
// (BENCH_OUTBOUND_SERVERS=mailwright runs it alone).
import { createPrivateKey, generateKeyPairSync, sign as rsaSign } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fork } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dkimVerify } from 'mailauth';
import { compose } from '../../src/mail/compose.ts';
import { parseSendRequest } from '../../src/send/request.ts';
import { submitBatch } from '../../src/send/submit.ts';
import { Queue } from '../../src/send/queue.ts';
import { Presigner } from '../../src/send/presign.ts';
import { heapSampler } from './heap-split.ts';
import { BENCH_STORE, spawnServe, type ServeProcess } from './serve-process.ts';
import { freshDatabase, readBox } from '../../src/testkit/postgres.ts';
import { value } from '../../src/db/query.ts';
import { createResolver } from '../../src/dns/resolver.ts';
import type { DnsServer } from '../../src/testkit/dns-server.ts';
import {
  RECIPIENT_DOMAIN, SENDER_DOMAIN, Sink, benchDir, cpuSince, cpuSnapshot, ensureOpendkimInstalled, ensurePostfixInstalled, fmt, freePort, opensslRsa2048SignMicros,
  machineBusyMicros, procCpuMicros, procMemoryMiB, processTreeCpuMicros, readDump, reportGoal, reportRssAfterGoal, startBenchApp, threadCpuByName, startBenchDns, table, textOfSize, until, type BenchApp,
} from './lib.ts';
import { OpenDkim, Postfix, exec } from './postfix.ts';
import type { FloorJob } from './outbound-floor.ts';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 10_000);
/** Which senders to run (all three by default); the ratios need the Postfix runs in the same run. */
const SERVERS = (process.env.BENCH_OUTBOUND_SERVERS ?? 'Postfix,Postfix+OpenDKIM,libraries,Mailwright').split(',').map((s) => s.trim().toLowerCase());
const BODY_BYTES = 10 * 1024;
const INJECT_SESSIONS = 20;
const BATCH = 100;
const BATCH_CLIENTS = 4;
const DKIM_SAMPLE = 25;
const RUN_TIMEOUT_MS = 15 * 60_000;
/** BENCH_MEMORY_PROFILE=small measures serve with the profile for a 1 GiB VPS. */
const MEMORY_PROFILE = process.env.BENCH_MEMORY_PROFILE ?? 'default';
/** BENCH_OUTBOUND_PROFILE=<dir>: serve runs under node --cpu-prof (every thread) and leaves its .cpuprofile files there. */
const PROFILE_DIR = process.env.BENCH_OUTBOUND_PROFILE;
/** How long after the load serve's RSS is read again (under 160 MiB within a minute). */
const IDLE_WAIT_MS = Number(process.env.BENCH_IDLE_WAIT_MS ?? 60_000);
/** How Postfix reaches OpenDKIM: a unix socket, as Debian's stock opendkim.conf has it, or BENCH_OPENDKIM_SOCKET=inet (a loopback port). */
const OPENDKIM_SOCKET = process.env.BENCH_OPENDKIM_SOCKET === 'inet' ? 'inet' : 'unix';
/** OpenDKIM's selector; Mailwright publishes its own key under another. */
const OPENDKIM_SELECTOR = 'opendkim';

type Mode = 'queued, then flushed' | 'enqueued while delivering';

type Sender = 'Postfix' | 'Postfix+OpenDKIM' | 'libraries' | 'Mailwright';

interface Run {
  sender: Sender;
  mode: Mode;
  seconds: number;
  /** CPU of the sender, µs per message: Mailwright's process; Postfix's master and every process under it, plus OpenDKIM. */
  senderCpu: number;
  /** Mailwright only: serve's event-loop thread and its signing threads, µs per message. */
  mainCpu?: number;
  workerCpu?: number;
  machineCpu: number;
  sinkCpu: number;
  /** Mailwright: serve's RSS when the run started → its peak (VmHWM), MiB. */
  rss?: string;
  peakMiB?: number;
  /** Mailwright: serve's RSS IDLE_WAIT_MS after the load ended, MiB. */
  idleMiB?: number;
  notes: string[];
}

const rate = (r: Run) => MESSAGES / r.seconds;

// The queue resolves the destination (MX, then A and AAAA of the MX host) once per batch it hands the Deliverer.
const batchesNote = (queries: number) => `${fmt(queries)} DNS queries: about ${fmt(queries / 3)} delivery batches of ${fmt(MESSAGES / Math.max(1, queries / 3))} messages`;

const TEXT = textOfSize(BODY_BYTES);
const sendBody = (i: number) => ({ from: `Bench <bench@${SENDER_DOMAIN}>`, to: `r${i}@${RECIPIENT_DOMAIN}`, subject: `Benchmark message ${i}`, text: TEXT });

// ---------------------------------------------------------------------------------------------------------
// Postfix in a directory of its own (postfix -c): it listens on one loopback port only, never on 25.

/** Relays everything to the sink, with the smtp transport deferred until postfixRuns releases it; signed by the milter when there is one. */
const createPostfix = (sinkPort: number, dkim: OpenDkim | null) =>
  Postfix.create({
    label: 'mw-bench-postfix-',
    main: [
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      `relayhost = [127.0.0.1]:${sinkPort}`,
      'smtp_tls_security_level = none',
      // Concurrency and connection caching stay at their defaults (destination concurrency 20, starting at 5).
      'defer_transports = smtp',
      // smtp-source injects through smtpd: smtpd_milters signs. A message the milter cannot sign is refused (tempfail), never relayed unsigned.
      ...(dkim ? [`smtpd_milters = ${dkim.milter}`, 'non_smtpd_milters = $smtpd_milters', 'milter_default_action = tempfail'] : []),
    ],
  });

/** Messages in each of Postfix's queues. */
async function queues(pf: Postfix): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const q of ['maildrop', 'incoming', 'active', 'deferred', 'hold']) {
    const { out: listing } = await exec('find', [join(pf.dir, 'queue', q), '-type', 'f']);
    out[q] = listing.split('\n').filter(Boolean).length;
  }
  return out;
}

/** Injects the message file MESSAGES times over 20 reused sessions; resolves with smtp-source's CPU (µs). */
async function inject(pf: Postfix, messageFile: string): Promise<number> {
  // bash's `times` reports the CPU of the children it waited for: smtp-source's own cost, to set apart.
  const script = `/usr/sbin/smtp-source -s ${INJECT_SESSIONS} -m ${MESSAGES} -d -N -F '${messageFile}' -f bench@${SENDER_DOMAIN} -t r@${RECIPIENT_DOMAIN} 127.0.0.1:${pf.port}; rc=$?; times; exit $rc`;
  const out = await pf.must('bash', ['-c', script]);
  const children = out.trim().split('\n').pop() ?? '';
  return [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + (Number(m[1]) * 60 + Number(m[2])) * 1e6, 0);
}

/**
 * The count and distinct recipients of what the sink got; for a signing sender (given the DNS server that publishes
 * its key), every message DKIM-signed and a sample verified; for unsigned Postfix, no message signed.
 */
async function checkDump(sink: Sink, dns: DnsServer | null): Promise<string> {
  let count = 0;
  let signed = 0;
  let bytes = 0;
  const rcpts = new Set<string>();
  const sample: Buffer[] = [];
  const every = Math.max(1, Math.floor(MESSAGES / DKIM_SAMPLE));
  for (const { rcpts: r, message } of readDump(sink.dumpFile!)) {
    count++;
    bytes += message.length;
    for (const x of r) rcpts.add(x);
    const headerEnd = message.indexOf('\n\n');
    const dkimAt = message.indexOf('DKIM-Signature:');
    if (dkimAt >= 0 && dkimAt < headerEnd) signed++;
    if (dns && count % every === 0 && sample.length < DKIM_SAMPLE) sample.push(Buffer.from(message.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1'));
  }
  if (count !== MESSAGES || rcpts.size !== MESSAGES) throw new Error(`the sink holds ${count} messages for ${rcpts.size} distinct recipients, expected ${MESSAGES}`);
  const size = `${fmt(bytes / count / 1024, 1)} KiB per message on the wire`;
  if (!dns) {
    if (signed !== 0) throw new Error(`${signed} of the unsigned sender's messages carry a DKIM-Signature header`);
    return `${fmt(count)} messages to ${fmt(rcpts.size)} distinct recipients, none with a DKIM-Signature, ${size}`;
  }
  if (signed !== MESSAGES) throw new Error(`only ${signed} of ${MESSAGES} delivered messages carry a DKIM-Signature header`);
  const resolver = createResolver([dns.address]);
  let pass = 0;
  const kinds = new Set<string>();
  for (const raw of sample) {
    const result = await dkimVerify(raw, { resolver: (name: string, type: string) => resolver.resolve(name, type) as Promise<string[][]> });
    // mailauth's results also carry a= (algo), c= (format) and the key's size, which its typings leave out.
    const results = result.results as Array<(typeof result.results)[number] & { algo?: string; format?: string; modulusLength?: number }>;
    const rsa = results.find((r) => r.status.result === 'pass' && r.algo === 'rsa-sha256');
    if (rsa) {
      pass++;
      kinds.add(`${rsa.algo} ${rsa.format} ${rsa.modulusLength ?? '?'}-bit d=${rsa.signingDomain} s=${rsa.selector}`);
    }
  }
  if (pass !== sample.length) throw new Error(`DKIM: only ${pass} of ${sample.length} sampled messages carry an rsa-sha256 signature that verifies`);
  return `${fmt(count)} messages to ${fmt(rcpts.size)} distinct recipients, all ${fmt(signed)} with a DKIM-Signature, ${pass} of ${sample.length} sampled verified with mailauth against the published key (pass: ${[...kinds].join('; ')}); ${size}`;
}

// ---------------------------------------------------------------------------------------------------------

/** OpenDKIM's signing key for SENDER_DOMAIN, its public half published in the bench's DNS server under OPENDKIM_SELECTOR. */
function opendkimKey(dns: DnsServer): string {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  dns.set(`${OPENDKIM_SELECTOR}._domainkey.${SENDER_DOMAIN}`, 'TXT', [`v=DKIM1; k=rsa; p=${p}`]);
  return privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
}

/** Postfix's two runs: unsigned, or (given the DNS server to publish the key in) signing at receipt with OpenDKIM as its milter. */
async function postfixRuns(sinkPort: number, dumpDir: string, signWith: DnsServer | null): Promise<Run[]> {
  const sender: Sender = signWith ? 'Postfix+OpenDKIM' : 'Postfix';
  const dkim = signWith ? await OpenDkim.start({ domain: SENDER_DOMAIN, selector: OPENDKIM_SELECTOR, privateKeyPem: opendkimKey(signWith), socket: OPENDKIM_SOCKET }) : null;
  let postfix: Postfix | null = null;
  const runs: Run[] = [];
  /** "; OpenDKIM used N µs/msg" since `from` (its CPU is inside the sender's). */
  const milterNote = (from: number) => (dkim ? `; OpenDKIM's own CPU ${fmt((dkim.cpuMicros() - from) / MESSAGES)} µs/msg (inside the sender's)` : '');
  try {
    const pf = (postfix = await createPostfix(sinkPort, dkim));
    /** Postfix's CPU so far and OpenDKIM's, µs (read from /proc, so that others' work on a shared machine stays out). */
    const senderCpu = () => processTreeCpuMicros(pf.masterPid() ?? -1) + (dkim?.cpuMicros() ?? 0);
    // The same message Mailwright composes, unsigned (smtp-source -F wants LF line ends; it sends CRLF).
    const messageFile = join(pf.dir, 'message.eml');
    const raw = await compose({ messageId: `bench.postfix@${SENDER_DOMAIN}`, date: Date.now(), from: { name: 'Bench', address: `bench@${SENDER_DOMAIN}` }, to: [{ address: `r@${RECIPIENT_DOMAIN}` }], cc: [], replyTo: [], subject: 'Benchmark message', text: TEXT, headers: {}, attachments: [] });
    writeFileSync(messageFile, raw.toString('latin1').replace(/\r\n/g, '\n'));
    chmodSync(messageFile, 0o644);

    // 1. Queued, then flushed.
    await pf.start();
    const injectStarted = performance.now();
    let milterBefore = dkim?.cpuMicros() ?? 0;
    await inject(pf, messageFile);
    await until(
      'Postfix to defer every message',
      async () => {
        const q = await queues(pf);
        return q.deferred === MESSAGES && q.maildrop + q.incoming + q.active === 0;
      },
      RUN_TIMEOUT_MS,
      200,
    );
    const injectSeconds = (performance.now() - injectStarted) / 1000;
    const injectNote = milterNote(milterBefore);
    let sink = await Sink.start(sinkPort, dumpDir);
    let before = cpuSnapshot();
    let sinkBefore = sink.cpuMicros();
    milterBefore = dkim?.cpuMicros() ?? 0;
    let senderBefore = senderCpu();
    await pf.must('postconf', ['-c', pf.conf, '-e', 'defer_transports =']);
    await pf.must('postfix', ['-c', pf.conf, 'reload']);
    await pf.must('postqueue', ['-c', pf.conf, '-f']);
    let done = await sink.reached(MESSAGES, RUN_TIMEOUT_MS);
    let cpu = cpuSince(before);
    let sinkCpu = sink.cpuMicros() - sinkBefore;
    let senderSpent = senderCpu() - senderBefore;
    await sink.stop();
    runs.push({
      sender,
      mode: 'queued, then flushed',
      seconds: (done - before.at) / 1000,
      senderCpu: senderSpent / MESSAGES,
      machineCpu: cpu.machine / MESSAGES,
      sinkCpu: sinkCpu / MESSAGES,
      notes: [
        `queued by smtp-source (${INJECT_SESSIONS} sessions) in ${fmt(injectSeconds, 1)} s (${fmt(MESSAGES / injectSeconds)}/s) with defer_transports = smtp${dkim ? ', OpenDKIM signing each at receipt' : ''}, before the clock${injectNote}`,
        ...(dkim ? [`the flush carries no signing: the queue holds signed messages${milterNote(milterBefore)}`] : []),
        await checkDump(sink, signWith),
      ],
    });
    rmSync(sink.dumpFile!, { force: true });

    // 2. Enqueued while delivering.
    sink = await Sink.start(sinkPort, dumpDir);
    before = cpuSnapshot();
    sinkBefore = sink.cpuMicros();
    milterBefore = dkim?.cpuMicros() ?? 0;
    senderBefore = senderCpu();
    const sourceCpu = await inject(pf, messageFile);
    const injected = performance.now();
    done = await sink.reached(MESSAGES, RUN_TIMEOUT_MS);
    cpu = cpuSince(before);
    sinkCpu = sink.cpuMicros() - sinkBefore;
    senderSpent = senderCpu() - senderBefore;
    await sink.stop();
    const enqueuedNote = milterNote(milterBefore);
    runs.push({
      sender,
      mode: 'enqueued while delivering',
      seconds: (done - before.at) / 1000,
      senderCpu: senderSpent / MESSAGES,
      machineCpu: cpu.machine / MESSAGES,
      sinkCpu: sinkCpu / MESSAGES,
      notes: [
        `smtp-source (${INJECT_SESSIONS} sessions) finished injecting after ${fmt((injected - before.at) / 1000, 1)} s; its own CPU (${fmt(sourceCpu / MESSAGES)} µs/msg) is not the sender's${enqueuedNote}`,
        await checkDump(sink, signWith),
      ],
    });
    rmSync(sink.dumpFile!, { force: true });
  } finally {
    try {
      await postfix?.destroy();
    } finally {
      await dkim?.stop();
    }
  }
  return runs;
}

/** CPU of the serve process so far, µs: all of it, its event loop, and its signing threads (read from /proc). */
function serveCpu(pid: number): { process: number; main: number; sign: number } {
  const threads = threadCpuByName(pid);
  return { process: procCpuMicros(`/proc/${pid}/stat`), main: threads.get('event loop') ?? 0, sign: threads.get('mw-sign') ?? 0 };
}

/** A Mailwright run from the serve process's measurements over the run: CPU per message, RSS, notes. */
function mailwrightRun(mode: Mode, seconds: number, cpu: { process: number; main: number; sign: number; machine: number }, sinkCpu: number, rss: { start: number; peak: number }, notes: string[]): Run {
  return {
    sender: 'Mailwright',
    mode,
    seconds,
    senderCpu: cpu.process / MESSAGES,
    mainCpu: cpu.main / MESSAGES,
    workerCpu: cpu.sign / MESSAGES,
    machineCpu: cpu.machine / MESSAGES,
    sinkCpu: sinkCpu / MESSAGES,
    rss: `${fmt(rss.start)} → ${fmt(rss.peak)}`,
    peakMiB: rss.peak,
    notes,
  };
}

/**
 * Both runs measure `scripts/mailwright serve` as a process of its own (lib/ when built), so its CPU and memory
 * are the server's alone; the workspace, key and domain are set up by the app in this process first, on the
 * same data directory.
 */
async function mailwrightRuns(sinkPort: number, dumpDir: string, dns: DnsServer): Promise<Run[]> {
  const runs: Run[] = [];
  // BENCH_STORE=postgres: each run's box in a fresh PostgreSQL database (the test kit's server).
  const databases: Array<{ url: string; drop: () => Promise<void> }> = [];
  const storeEnv = async (): Promise<Record<string, string>> => {
    if (BENCH_STORE !== 'postgres') return { MAILWRIGHT_MEMORY_PROFILE: MEMORY_PROFILE };
    const database = await freshDatabase();
    databases.push(database);
    return { MAILWRIGHT_MEMORY_PROFILE: MEMORY_PROFILE, MAILWRIGHT_DATABASE_URL: database.url };
  };
  let app: BenchApp | null = null;
  let serve: ServeProcess | null = null;
  const dirs: string[] = [];
  try {
    // 1. Queued, then flushed: enqueued with the queue stopped and signed at acceptance, then serve started on
    //    that data directory, timed from its spawn (its start is inside the time) to the sink's last message.
    app = await startBenchApp(dns, sinkPort, await storeEnv());
    dirs.push(app.dataDir);
    const queue = app.running.app.queue;
    if (!(queue instanceof Queue)) throw new Error('app.queue is not a Queue');
    await queue.stop();
    const enqueueStarted = performance.now();
    for (let i = 0; i < MESSAGES; i += BATCH) {
      const items = Array.from({ length: Math.min(BATCH, MESSAGES - i) }, (_, j) => parseSendRequest(sendBody(i + j)));
      await submitBatch(app.running.app, app.workspaceId, items);
    }
    const committedSeconds = (performance.now() - enqueueStarted) / 1000;
    // Signed at acceptance (send/presign.ts), as OpenDKIM signs Postfix's at receipt: the intake ends when the
    // last one is signed, and the drain carries no signing.
    const presigner = app.running.app.presign;
    if (!(presigner instanceof Presigner)) throw new Error('app.presign is not a Presigner');
    await presigner.settled();
    const enqueueSeconds = (performance.now() - enqueueStarted) / 1000;
    const signedCount = (await app.running.app.store.read(value<number>('SELECT count(*) FROM emails WHERE signed_at IS NOT NULL')))!;
    if (signedCount !== MESSAGES) throw new Error(`${signedCount} of ${MESSAGES} messages were signed at acceptance`);
    await app.running.stop();
    const env1 = app.env;
    app = null;
    let sink = await Sink.start(sinkPort, dumpDir);
    let sinkBefore = sink.cpuMicros();
    let machineBefore = machineBusyMicros();
    let queries = dns.queries.length;
    const spawned = performance.now();
    serve = await spawnServe(env1, { profileDir: PROFILE_DIR });
    const readyIn = performance.now() - spawned;
    let startRss = procMemoryMiB(serve.pid).rss;
    let done = await sink.reached(MESSAGES, RUN_TIMEOUT_MS);
    let cpu = serveCpu(serve.pid);
    let machine = machineBusyMicros() - machineBefore;
    let sinkCpu = sink.cpuMicros() - sinkBefore;
    const flushPeak = procMemoryMiB(serve.pid).peak;
    const countDelivered = () => readBox(env1, value<number>("SELECT count(*) FROM deliveries WHERE state = 'delivered'"));
    await until('every delivery recorded', async () => (await countDelivered()) === MESSAGES, 60_000, 200);
    const recorded = performance.now();
    let code = await serve.stop();
    serve = null;
    await sink.stop();
    runs.push(
      mailwrightRun('queued, then flushed', (done - spawned) / 1000, { ...cpu, machine }, sinkCpu, { start: startRss, peak: flushPeak }, [
        `queued in-process with submitBatch (${BATCH} per call) while the queue was stopped: committed in ${fmt(committedSeconds, 1)} s, and signed at acceptance (as OpenDKIM signs at receipt) ${fmt(enqueueSeconds, 1)} s after the first (${fmt(MESSAGES / enqueueSeconds)}/s); the flush carries no signing`,
        `the clock and the CPU include serve's start as a process of its own (logged ready after ${fmt(readyIn)} ms, with deliveries already under way)`,
        `every delivery recorded as delivered ${fmt((recorded - done) / 1000, 2)} s after the sink's last message; ${batchesNote(dns.queries.length - queries)}; serve exited with code ${code}`,
        await checkDump(sink, dns),
      ]),
    );
    rmSync(sink.dumpFile!, { force: true });

    // 2. Enqueued while delivering, through the HTTP batch endpoint of serve.
    app = await startBenchApp(dns, sinkPort, await storeEnv());
    dirs.push(app.dataDir);
    const key = app.key;
    await app.running.stop();
    const httpPort = await freePort();
    const env2 = { ...app.env, MAILWRIGHT_HTTP_PORT: String(httpPort) };
    app = null;
    const heaps = heapSampler();
    serve = await spawnServe(env2, { nodeOptions: heaps.nodeOptions, profileDir: PROFILE_DIR });
    const api = `http://127.0.0.1:${httpPort}/api/v1`;
    sink = await Sink.start(sinkPort, dumpDir);
    sinkBefore = sink.cpuMicros();
    machineBefore = machineBusyMicros();
    const cpuBefore = serveCpu(serve.pid);
    startRss = procMemoryMiB(serve.pid).rss;
    heaps.start(serve.pid);
    queries = dns.queries.length;
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: BATCH_CLIENTS }, async () => {
        while (next < MESSAGES) {
          const first = next;
          next += BATCH;
          const emails = Array.from({ length: Math.min(BATCH, MESSAGES - first) }, (_, j) => sendBody(first + j));
          const res = await fetch(`${api}/emails/batch`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ emails }) });
          const body = (await res.json()) as { successful?: number };
          if (res.status !== 200 || body.successful !== emails.length) throw new Error(`batch refused: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        }
      }),
    );
    const enqueued = performance.now();
    done = await sink.reached(MESSAGES, RUN_TIMEOUT_MS);
    const after = serveCpu(serve.pid);
    cpu = { process: after.process - cpuBefore.process, main: after.main - cpuBefore.main, sign: after.sign - cpuBefore.sign };
    machine = machineBusyMicros() - machineBefore;
    sinkCpu = sink.cpuMicros() - sinkBefore;
    const peak = procMemoryMiB(serve.pid).peak;
    const split = await heaps.stop();
    // Within a minute of the load's end, RSS should be back under 160 MiB (goal 1).
    await new Promise((r) => setTimeout(r, IDLE_WAIT_MS));
    const idleRss = procMemoryMiB(serve.pid).rss;
    code = await serve.stop();
    serve = null;
    await sink.stop();
    runs.push(
      mailwrightRun('enqueued while delivering', (done - started) / 1000, { ...cpu, machine }, sinkCpu, { start: startRss, peak }, [
        `POST /emails/batch (${BATCH} per request, ${BATCH_CLIENTS} at a time, from the bench's process) had every message committed after ${fmt((enqueued - started) / 1000, 1)} s; ${batchesNote(dns.queries.length - queries)}`,
        split,
        `RSS ${fmt(IDLE_WAIT_MS / 1000)} s after the sink's last message: ${fmt(idleRss)} MiB; serve exited with code ${code}`,
        await checkDump(sink, dns),
      ]),
    );
    runs[runs.length - 1].idleMiB = idleRss;
    rmSync(sink.dumpFile!, { force: true });
  } finally {
    await serve?.stop();
    await app?.running.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    for (const database of databases) await database.drop();
  }
  return runs;
}

// ---------------------------------------------------------------------------------------------------------
// The libraries' floor (outbound-floor.ts): compose, sign and send on one thread, nothing stored

const FLOOR = fileURLToPath(new URL('./outbound-floor.ts', import.meta.url));
const FLOOR_SELECTOR = 'floor';
/** Sessions the floor keeps open to the sink, as many as Mailwright's max_connections_per_mx. */
const FLOOR_LANES = 10;

/**
 * Messages per second the machine's cores could deliver at most with the floor's CPU per message and the sink's
 * beside it, every core busy: what no sender built on these libraries can beat here.
 */
const ceiling = (r: Run) => (cpus().length * 1e6) / (r.senderCpu + r.sinkCpu);

async function floorRun(sinkPort: number, dumpDir: string, dns: DnsServer): Promise<Run> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  dns.set(`${FLOOR_SELECTOR}._domainkey.${SENDER_DOMAIN}`, 'TXT', [`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]);
  const sink = await Sink.start(sinkPort, dumpDir);
  try {
    const job: FloorJob = {
      sinkPort,
      count: MESSAGES,
      lanes: FLOOR_LANES,
      from: { name: 'Bench', address: `bench@${SENDER_DOMAIN}` },
      recipientDomain: RECIPIENT_DOMAIN,
      subject: 'Benchmark message',
      text: TEXT,
      key: { domain: SENDER_DOMAIN, selector: FLOOR_SELECTOR, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    };
    const sinkBefore = sink.cpuMicros();
    const machineBefore = machineBusyMicros();
    const child = fork(FLOOR, [JSON.stringify(job)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const result = await new Promise<{ seconds: number; cpuMicros: number }>((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`outbound-floor.ts exited with code ${code} before its last message`)));
    });
    await sink.reached(MESSAGES, RUN_TIMEOUT_MS);
    const run: Run = {
      sender: 'libraries',
      mode: 'enqueued while delivering',
      seconds: result.seconds,
      senderCpu: result.cpuMicros / MESSAGES,
      machineCpu: (machineBusyMicros() - machineBefore) / MESSAGES,
      sinkCpu: (sink.cpuMicros() - sinkBefore) / MESSAGES,
      rss: '–',
      notes: [],
    };
    await sink.stop();
    run.notes.push(
      `compose, sign and send over ${FLOOR_LANES} sessions on one thread (and V8's helpers), nothing stored: at ${fmt(run.senderCpu)} µs of CPU per message, with the sink's ${fmt(run.sinkCpu)}, ${cpus().length} cores could deliver at most ${fmt(ceiling(run))} msgs/s`,
      await checkDump(sink, dns),
    );
    rmSync(sink.dumpFile!, { force: true });
    return run;
  } finally {
    await sink.stop();
  }
}

/** CPU µs of one RSA-2048 sha256 signature with a parsed key on this machine (DKIM's irreducible cost). */
function rsaSignMicros(): number {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const key = createPrivateKey(privateKey);
  for (let i = 0; i < 20; i++) rsaSign('sha256', Buffer.from(`warm ${i}`), key);
  const before = process.cpuUsage();
  for (let i = 0; i < 200; i++) rsaSign('sha256', Buffer.from(`data ${i}`), key);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 200;
}

export async function benchOutbound(): Promise<Run[]> {
  ensurePostfixInstalled();
  if (SERVERS.includes('postfix+opendkim')) ensureOpendkimInstalled();
  const sinkPort = await freePort();
  // The sink's dump lives in memory (/dev/shm when there is one): on the disk, after Postfix's runs had written
  // and deleted their queue files, smtp-sink spent 500-1,000 µs of CPU per message appending to it instead of
  // 110-140, and slowed whichever sender ran next (Mailwright's flush measured 848-1,409/s against 2,768-2,963/s
  // without Postfix's runs before it, 2026-11-26).
  const dumpDir = existsSync('/dev/shm') ? mkdtempSync(join('/dev/shm', 'mw-bench-sink-')) : benchDir('mw-bench-sink-');
  const dns = await startBenchDns();
  const runs: Run[] = [];
  try {
    if (SERVERS.includes('postfix')) runs.push(...(await postfixRuns(sinkPort, dumpDir, null)));
    if (SERVERS.includes('postfix+opendkim')) runs.push(...(await postfixRuns(sinkPort, dumpDir, dns)));
    if (SERVERS.includes('libraries')) runs.push(await floorRun(sinkPort, dumpDir, dns));
    if (SERVERS.includes('mailwright')) runs.push(...(await mailwrightRuns(sinkPort, dumpDir, dns)));
  } finally {
    await Sink.stopAll();
    await dns.close();
    rmSync(dumpDir, { recursive: true, force: true });
  }

  // Measured after the runs, so that they do not share the machine with it.
  const opensslSign = opensslRsa2048SignMicros();
  const nodeSign = rsaSignMicros();
  console.log(
    `\noutbound: ${fmt(MESSAGES)} messages of 10 KB text, one recipient each, to smtp-sink on 127.0.0.1 (one fresh process per run); ` +
      `Mailwright signs each with DKIM rsa-sha256 (2048-bit key) and delivers over pooled connections (max_connections_per_mx 10); ` +
      `Postfix 3.7 relays the same message (relayhost [127.0.0.1]:port, destination concurrency defaults: 20, starting at 5), unsigned, ` +
      `and signed at receipt by OpenDKIM as its milter (rsa-sha256, 2048-bit key, relaxed/relaxed, so its drain carries no signing). ` +
      `This machine signs with RSA-2048 in ${fmt(opensslSign)} µs (openssl speed -seconds 1 rsa2048)`,
  );
  const ratioTo = (sender: Sender) => (r: Run) => {
    const base = runs.find((p) => p.sender === sender && p.mode === r.mode);
    return base ? `${(rate(r) / rate(base)).toFixed(2)}x` : '–';
  };
  const vsPostfix = ratioTo('Postfix');
  const vsOpendkim = ratioTo('Postfix+OpenDKIM');
  const label: Record<Sender, string> = {
    Postfix: 'Postfix (no DKIM)',
    'Postfix+OpenDKIM': 'Postfix + OpenDKIM (signs at receipt)',
    libraries: 'libraries: nodemailer composes and sends, mailauth signs, one thread, nothing stored',
    Mailwright: `Mailwright (DKIM)${BENCH_STORE === 'postgres' ? ' on PostgreSQL' : ''}`,
  };
  const modes: Mode[] = ['queued, then flushed', 'enqueued while delivering'];
  const us = (n: number | undefined) => (n === undefined ? '–' : fmt(n));
  table(
    ['sender', 'mode', 'msgs/s', 'vs Postfix, same mode', 'vs Postfix + OpenDKIM, same mode', 'seconds', 'sender CPU µs/msg', 'main thread µs/msg', 'sign workers µs/msg', 'machine CPU µs/msg', 'sink µs/msg', 'RSS MiB, start → peak'],
    [...runs].sort((a, b) => modes.indexOf(a.mode) - modes.indexOf(b.mode)).map((r) => [
      label[r.sender],
      r.mode,
      fmt(rate(r)),
      vsPostfix(r),
      vsOpendkim(r),
      fmt(r.seconds, 1),
      us(r.senderCpu),
      us(r.mainCpu),
      us(r.workerCpu),
      us(r.machineCpu),
      us(r.sinkCpu),
      r.rss ?? 'many processes',
    ]),
  );
  const mw = (mode: Mode) => runs.find((r) => r.sender === 'Mailwright' && r.mode === mode);
  const goal = (mode: Mode, min: number) => {
    const r = mw(mode);
    const ratio = r ? vsOpendkim(r) : '–';
    const pass = ratio === '–' ? null : parseFloat(ratio) >= min;
    const floor = runs.find((x) => x.sender === 'libraries' && x.mode === mode);
    const anchor = runs.find((x) => x.sender === 'Postfix+OpenDKIM' && x.mode === mode);
    const reach = floor && anchor && ratio !== '–' ? ` (the libraries' ceiling on this machine: ${(ceiling(floor) / rate(anchor)).toFixed(2)}x)` : '';
    reportGoal({ goal: `outbound ${mode}, vs Postfix + OpenDKIM`, measured: `${ratio}${reach}`, target: `≥ ${min.toFixed(1)}x`, pass });
    return `${mode} ${ratio} (goal ${min.toFixed(1)}x: ${pass === null ? 'not measured' : pass ? 'PASS' : 'MISS'})`;
  };
  for (const r of runs.filter((x) => x.sender === 'Mailwright' && x.peakMiB !== undefined)) {
    reportGoal({ goal: `memory, outbound ${r.mode} (serve's peak RSS, ${MEMORY_PROFILE} profile)`, measured: `${fmt(r.peakMiB!)} MiB`, target: '≤ 256 MiB', pass: r.peakMiB! <= 256 });
    reportRssAfterGoal('outbound', IDLE_WAIT_MS / 1000, r.idleMiB);
  }
  console.log(`\nIssue 22 goal 3, Mailwright against Postfix + OpenDKIM in this run: ${goal('queued, then flushed', 1.0)}; ${goal('enqueued while delivering', 3.0)}.`);
  const floor = runs.find((x) => x.sender === 'libraries');
  const anchor = runs.find((x) => x.sender === 'Postfix+OpenDKIM' && x.mode === 'enqueued while delivering');
  if (floor && anchor) console.log(`The libraries' ceiling on this machine (nodemailer and mailauth on every core, nothing stored): ${fmt(ceiling(floor))} msgs/s, ${(ceiling(floor) / rate(anchor)).toFixed(2)}x Postfix + OpenDKIM enqueued while delivering.`);
  console.log(
    `\nPostfix's sender CPU is that of its master and every process under it (read from /proc, reaped children included), plus OpenDKIM's; ` +
      `machine CPU is every core's busy time, other users' work on a shared machine included. ` +
      `One RSA-2048 signature costs ${fmt(opensslSign)} µs on this machine by openssl speed, ${fmt(nodeSign)} µs of CPU by node:crypto with a parsed key. Notes:`,
  );
  for (const r of runs) for (const note of r.notes) console.log(`- ${r.sender}, ${r.mode}: ${note}`);
  return runs;
}

// Run by scripts/bench/run.ts in a process of its own; also runnable alone: node --import tsx scripts/bench/outbound.ts
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await benchOutbound();
