// Micro-benchmark: the CPU an analyze thread spends on one received 10 KB message, stage by stage, independent
// of machine load (this thread's CPU time, from /proc/thread-self/stat's utime+stime in clock ticks is too
// coarse, so process.cpuUsage() over many messages on an otherwise idle process: the V8 helper threads' garbage
// collection and compilation count, as they do for a worker). Three kinds of message:
//   * source: what smtp-source -l 10240 sends in the inbound benchmark (5 header fields, 78-character lines), no
//     DKIM signature;
//   * text: the storage benchmark's text/plain letter, DKIM-signed (rsa-sha256 2048, relaxed/relaxed);
//   * html: its multipart/alternative letter with an HTML part (quoted-printable), List-Unsubscribe, DKIM-signed.
// Each stage runs alone over every message of a kind, several rounds, after a warm-up; the figure is the least
// µs per message of the rounds (the least disturbed by other processes). DNS answers come from a Map in this
// process (SPF, DKIM key, DMARC for each sender domain), as the worker's answer cache gives them once warm.
// Stages: authenticate (mailauth), parse (mailparser, mail/parse.ts), analyze (both, as analyze.ts runs them),
// and the whole job of the analyze worker (analyze, then the stored message packed: analyze-worker.ts storing()).
// BENCH_ANALYZE_PROFILE=<dir> also writes a CPU profile (.cpuprofile) of the whole-job stage per kind and
// prints the top functions by self time (BENCH_ANALYZE_PROFILE_STAGE: the stage's index, 0-3, default 3).
// BENCH_ANALYZE_ALLOCATIONS=1 also samples what that stage allocates (V8's sampling heap profiler, objects the
// collector has freed included) and prints KB per message by function: what the helper threads' GC works on.
// It runs itself again in a node with the V8 flags scripts/mailwright gives serve, since they change what the
// collector costs; BENCH_ANALYZE_V8_FLAGS gives others instead ('' for V8's defaults).
//   node --import tsx scripts/bench/analyze-profile.ts
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseMessage } from '../../src/mail/parse.ts';
import { packMail } from '../../src/mail/packing.ts';
import { withoutAuthResultsOf } from '../../src/mail/trace.ts';
import { authenticate, type AuthContext } from '../../src/receive/authenticate.ts';
import { analyze } from '../../src/receive/analyze.ts';
import type { DnsLookup } from '../../src/dns/cache.ts';
import { Corpus, letter, signedLetter } from './storage.ts';
import { fmt, table } from './lib.ts';
import { mapLookup, senderRecords } from './map-dns.ts';
import { topFunctions } from './profile.ts';
import { launcherV8Flags } from './serve-process.ts';

const PER_KIND = Number(process.env.BENCH_ANALYZE_MESSAGES ?? 300);
const ROUNDS = Number(process.env.BENCH_ANALYZE_ROUNDS ?? 5);
const PROFILE_DIR = process.env.BENCH_ANALYZE_PROFILE;
const ALLOCATIONS = process.env.BENCH_ANALYZE_ALLOCATIONS === '1';
const HOSTNAME = 'mx.inbound.bench.test';
const INBOX = 'bench@inbound.bench.test';
const SOURCE_DOMAIN = 'sender.bench.test';
const SENDER_DOMAINS = Array.from({ length: 8 }, (_, i) => `news${i}.senders.bench.test`);
const CLIENT = `mail.${SOURCE_DOMAIN}`;
const TRACE = `Received: from ${CLIENT} (${CLIENT} [127.0.0.1])\r\n\tby ${HOSTNAME} with ESMTP id bench;\r\n\tTue, 25 Nov 2026 12:00:00 +0000\r\n`;

interface Kind {
  name: string;
  messages: Array<{ raw: Buffer; ctx: AuthContext }>;
}

export async function kinds(): Promise<{ kinds: Kind[]; dns: DnsLookup }> {
  const records = senderRecords(CLIENT, SOURCE_DOMAIN);
  const txt = (name: string, value: string) => records.set(`TXT ${name}`, [[value]]);
  const keys = new Map<string, string>();
  for (const domain of SENDER_DOMAINS) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    txt(domain, 'v=spf1 ip4:127.0.0.1 -all');
    txt(`s1._domainkey.${domain}`, `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`);
    txt(`_dmarc.${domain}`, 'v=DMARC1; p=none');
    keys.set(domain, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  }
  const dns = mapLookup(records);

  const source: Kind = { name: 'source (smtp-source -l 10240, unsigned)', messages: [] };
  for (let n = 0; n < PER_KIND; n++) {
    const head = `From: <sender@${SOURCE_DOMAIN}>\r\nTo: <${INBOX}>\r\nDate: ${new Date(Date.UTC(2026, 10, 25, 12, 0, n)).toUTCString()}\r\nMessage-Id: <${n}.bench@${CLIENT}>\r\nSubject: Inbound benchmark\r\n\r\n`;
    let body = '';
    for (let i = 1; body.length < 10 * 1024; i++) body += `${i % 10}${'X'.repeat(77)}\r\n`;
    source.messages.push({ raw: Buffer.from(head + body, 'latin1'), ctx: { ip: '127.0.0.1', helo: CLIENT, mailFrom: `sender@${SOURCE_DOMAIN}`, hostname: HOSTNAME, dns } });
  }

  const text: Kind = { name: 'text/plain, DKIM-signed', messages: [] };
  const html: Kind = { name: 'multipart/alternative with HTML, DKIM-signed', messages: [] };
  const c = new Corpus(20261126);
  const senders = Array.from({ length: 40 }, (_, i) => {
    const domain = SENDER_DOMAINS[i % SENDER_DOMAINS.length];
    const name = c.name();
    return { name, address: `${name.split(' ')[0].toLowerCase().normalize('NFD').replace(/[^a-z]/g, '')}@${domain}` };
  });
  for (let i = 0; text.messages.length < PER_KIND || html.messages.length < PER_KIND; i++) {
    const from = c.pick(senders);
    const l = letter(c, from, 10 * 1024);
    const into = l.html ? html : text;
    if (into.messages.length >= PER_KIND) continue;
    const domain = from.address.split('@')[1];
    const raw = await signedLetter(l, { from, to: INBOX, messageId: `${i}.bench@${domain}`, date: Date.UTC(2026, 10, 25, 12, 0, 0) + i * 1000, n: i, privateKey: keys.get(domain)! });
    into.messages.push({ raw, ctx: { ip: '127.0.0.1', helo: CLIENT, mailFrom: from.address, hostname: HOSTNAME, dns } });
  }
  return { kinds: [source, text, html], dns };
}

type Stage = (m: Kind['messages'][number]) => Promise<unknown>;

const STAGES: Array<[string, Stage]> = [
  ['authenticate (mailauth)', (m) => authenticate(m.raw, m.ctx)],
  ['parse (mailparser)', (m) => parseMessage(m.raw)],
  ['analyze (both)', (m) => analyze(m.raw, m.ctx)],
  [
    'analyze worker job (analyze + pack)',
    async (m) => {
      const a = await analyze(m.raw, m.ctx);
      return packMail(Buffer.concat([Buffer.from(TRACE + a.authHeaders, 'latin1'), withoutAuthResultsOf(m.raw, HOSTNAME)]), a.parsed.text, a.parsed.html, { alone: false });
    },
  ],
];

/** CPU µs per message of one round: messages one after the other, as a worker with one job at a time. */
async function round(kind: Kind, stage: Stage): Promise<number> {
  const start = process.cpuUsage();
  for (const m of kind.messages) await stage(m);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / kind.messages.length;
}

async function profiled(kind: Kind, stage: Stage, label: string): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  for (let r = 0; r < 3; r++) for (const m of kind.messages) await stage(m);
  const { profile } = (await session.post('Profiler.stop')) as { profile: Parameters<typeof topFunctions>[0] };
  session.disconnect();
  mkdirSync(PROFILE_DIR!, { recursive: true });
  const file = join(PROFILE_DIR!, `analyze-${label}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  console.log(`\n${kind.name}, ${label}: top functions by self time (µs per message), ${file}\n`);
  for (const line of topFunctions(profile, kind.messages.length * 3, 30)) console.log(line);
}

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

/** What one stage allocates per message, by function: self and with its callees, the top 25 of each. */
async function allocations(kind: Kind, stage: Stage, label: string): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  // Node 20's inspector types lack the two include* flags V8 has taken since 10.x; without them only what is still alive at the end is counted.
  await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as { samplingInterval: number });
  for (let r = 0; r < 3; r++) for (const m of kind.messages) await stage(m);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: SamplingNode } };
  session.disconnect();
  const perMessage = (bytes: number) => (bytes / (kind.messages.length * 3) / 1024).toFixed(1).padStart(7);
  const name = (f: SamplingNode['callFrame']) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${f.lineNumber + 1}`;
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const walk = (node: SamplingNode, callers: Set<string>) => {
    const key = name(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + node.selfSize);
    const stack = new Set(callers).add(key);
    for (const k of stack) inclusive.set(k, (inclusive.get(k) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, stack);
  };
  walk(profile.head, new Set());
  console.log(`\n${kind.name}, ${label}: ${perMessage(inclusive.get(name(profile.head.callFrame)) ?? 0).trim()} KB allocated per message`);
  for (const [title, m] of [['self', self], ['with callees', inclusive]] as const) {
    console.log(`\nKB per message, ${title}:`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${perMessage(v)}  ${k}`);
  }
}

export async function benchAnalyzeProfile(): Promise<void> {
  const { kinds: all } = await kinds();
  console.log(`\n## Analyze thread CPU per received message, by stage\n`);
  console.log(
    `${PER_KIND} messages per kind (${all.map((k) => `${k.name}: ${fmt(k.messages.reduce((s, m) => s + m.raw.length, 0) / k.messages.length)} bytes`).join('; ')}); ` +
      `least of ${ROUNDS} rounds after one warm-up, process CPU (user+system, V8's helper threads included), node ${process.version} with ${v8Flags() || "V8's defaults"}\n`,
  );
  const rows: Array<Array<string>> = [];
  for (const kind of all) {
    const row = [kind.name];
    for (const [, stage] of STAGES) {
      await round(kind, stage);
      const figures: number[] = [];
      for (let r = 0; r < ROUNDS; r++) figures.push(await round(kind, stage));
      figures.sort((a, b) => a - b);
      row.push(`${fmt(figures[0])} (${fmt(figures[Math.floor(figures.length / 2)])})`);
    }
    rows.push(row);
  }
  table(['message', ...STAGES.map(([name]) => `${name} µs, least (median)`)], rows);
  const stage = Number(process.env.BENCH_ANALYZE_PROFILE_STAGE ?? 3);
  for (const [i, kind] of all.entries()) {
    const label = `${['source', 'text', 'html'][i]}-${stage}`;
    if (PROFILE_DIR) await profiled(kind, STAGES[stage][1], label);
    if (ALLOCATIONS) await allocations(kind, STAGES[stage][1], label);
  }
}

/** The V8 flags this node was started with. */
const v8Flags = () => process.execArgv.filter((a, i, all) => a !== '--import' && all[i - 1] !== '--import').join(' ');

/** Runs this file again with serve's V8 flags (or BENCH_ANALYZE_V8_FLAGS), once. */
function inServeFlags(): void {
  const flags = process.env.BENCH_ANALYZE_V8_FLAGS?.split(' ').filter(Boolean) ?? launcherV8Flags();
  const run = spawnSync(process.execPath, [...flags, '--import', 'tsx', fileURLToPath(import.meta.url)], { stdio: 'inherit', env: { ...process.env, BENCH_ANALYZE_FLAGGED: '1' } });
  process.exitCode = run.status ?? 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.env.BENCH_ANALYZE_FLAGGED) await benchAnalyzeProfile();
  else inServeFlags();
}
