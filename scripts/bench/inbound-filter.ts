// Benchmark (part of inbound.ts): what the built-in spam filter costs received mail. The same run twice or more,
// `spam_filter = "off"` and `"builtin"` taking turns, each on a fresh `serve` (its own process) whose workspace
// was first taught as an owner would teach it (200 spam + 200 ham of the 2002 SpamAssassin corpus delivered over
// SMTP, each PATCHed to its category, until GET /spam/filter says all is learned), then loaded with 10 KB
// messages over concurrent sessions that reuse their connection: smtp-source's lines of X (the inbound
// benchmark's own messages, which cost the tokenizer almost nothing), then real text (bodies of the corpus's
// validation split, so the tokenizer and the model's read see what they see in real mail). DNS is answered by
// the local test server. Reported per body: msgs/s, the server's CPU per message, by thread (the writer's too,
// which scores the tokens as it files), its peak RSS, and the ratio of msgs/s with the filter on to off.
import { rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { connect, type Socket } from 'node:net';
import Database from 'better-sqlite3';
import { databasePath } from '../../src/db/open.ts';
import { parseMessage } from '../../src/mail/parse.ts';
import { request } from '../../src/testkit/app.ts';
import type { DnsServer } from '../../src/testkit/dns-server.ts';
import { fmt, procCpuMicros, procMemoryMiB, reportGoal, SENDER_DOMAIN, table, threadCpuByName, until } from './lib.ts';
import { splitCorpus, type CorpusMessage } from './spam-corpus-data.ts';
import type { FreshServe } from './serve-process.ts';

const MESSAGES = Number(process.env.BENCH_FILTER_MESSAGES ?? 6000);
const WARMUP = Number(process.env.BENCH_FILTER_WARMUP ?? 3000);
const SESSIONS = Number(process.env.BENCH_FILTER_SESSIONS ?? 20);
/** Runs of each mode, taking turns (off, on, off, on, ...): a shared machine's noise falls on both alike. */
const ROUNDS = Number(process.env.BENCH_FILTER_ROUNDS ?? 2);
const BODY_BYTES = 10 * 1024;
const DISTINCT = 200;

export interface FilterBenchDeps {
  dns: DnsServer;
  /** inbound.ts: serve with its MX listener on a free loopback port, set for the load, plus `env`. */
  startMailwright(dns: DnsServer, nodeOptions: string, env: Record<string, string>): Promise<FreshServe>;
  /** inbound.ts: the inbox domain set up through the API; the inbox's address is `inbox`. */
  setUpInbox(app: FreshServe, dns: DnsServer): Promise<string>;
  inbox: string;
}

type Mode = 'off' | 'builtin';

/**
 * What the load's bodies are: `text`, real text of the corpus; `lines`, what smtp-source -l sends (the inbound
 * benchmark's messages: lines of a digit and 77 X), where the tokenizer finds almost nothing to do.
 */
type Body = 'text' | 'lines';
const BODIES = (process.env.BENCH_FILTER_BODIES ?? 'lines,text').split(',').map((s) => s.trim()) as Body[];

interface Measure {
  rate: number;
  serverCpu: number;
  threads: Map<string, number>;
  /** Peak RSS during this body's load (MiB; VmHWM, reset before it). */
  peak: number;
}

interface Run {
  mode: Mode;
  bodies: Map<Body, Measure>;
  categories: string;
}

/** Resets the process's VmHWM to its RSS now (proc(5) clear_refs "5"); false where that is not allowed. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** A message as DATA sends it: CRLF lines, leading dots doubled, then the final dot (without its CRLF). */
const dataLines = (message: string) => {
  const body = message.replace(/\r?\n/g, '\r\n').replace(/(^|\r\n)\./g, '$1..');
  return `${body}${body.endsWith('\r\n') ? '' : '\r\n'}.`;
};

/** A minimal SMTP client: one command, its whole reply. */
export class Client {
  private buffer = '';
  private waiting: ((reply: string) => void) | null = null;
  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      this.check();
    });
  }
  /** A whole reply (its last line "NNN text") goes to whoever waits for it; the greeting may come first. */
  private check(): void {
    if (!this.waiting || !/(?:^|\r\n)\d{3} [^\r\n]*\r\n$/.test(this.buffer)) return;
    const reply = this.buffer;
    this.buffer = '';
    const w = this.waiting;
    this.waiting = null;
    w(reply);
  }
  static async open(port: number): Promise<Client> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
    const c = new Client(socket);
    await c.send(null, '220');
    await c.send('EHLO mail.sender.bench.test', '250');
    return c;
  }
  /** The whole reply to `line` (null: the greeting), whatever its code. */
  ask(line: string | null): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${line ?? 'the greeting'} in 60 s`)), 60_000);
      this.waiting = (reply) => {
        clearTimeout(timer);
        resolve(reply);
      };
      if (line !== null) this.socket.write(`${line}\r\n`, 'latin1');
      else this.check();
    });
  }
  async send(line: string | null, code: string): Promise<string> {
    const reply = await this.ask(line);
    if (!reply.startsWith(code)) throw new Error(`${line ?? 'greeting'}: ${reply.trim()}`);
    return reply;
  }
  async deliver(from: string, to: string, message: string): Promise<string> {
    await this.send(`MAIL FROM:<${from}>`, '250');
    await this.send(`RCPT TO:<${to}>`, '250');
    await this.send('DATA', '354');
    return this.send(dataLines(message), '250');
  }
  /**
   * One message whatever the answers: the first reply that refused it (the transaction reset after it), or the
   * reply to its final dot with the milliseconds from sending the message to that reply.
   */
  async offer(from: string, to: string, message: string): Promise<{ reply: string; ms: number | null }> {
    for (const line of [`MAIL FROM:<${from}>`, `RCPT TO:<${to}>`, 'DATA']) {
      const reply = await this.ask(line);
      if (!/^(250|354)/.test(reply)) {
        await this.send('RSET', '250');
        return { reply, ms: null };
      }
    }
    const started = performance.now();
    const reply = await this.ask(dataLines(message));
    return { reply, ms: performance.now() - started };
  }
  close(): void {
    this.socket.destroy();
  }
}

export const deliverable = (m: CorpusMessage) => m.raw.toString('latin1').replace(/^From [^\n]*\n/, '');

/** smtp-source's 10 KB message: its headers, then lines of a digit and 77 X (inbound.ts probeMessage). */
function lineMessages(inbox: string): Array<(n: number) => string> {
  let body = '';
  for (let i = 1; body.length < BODY_BYTES; i++) body += `${i % 10}${'X'.repeat(77)}\r\n`;
  return [(n) => `From: <sender@${SENDER_DOMAIN}>\r\nTo: <${inbox}>\r\nDate: ${new Date().toUTCString()}\r\nMessage-Id: <lines.${n}@${SENDER_DOMAIN}>\r\nSubject: Inbound benchmark\r\n\r\n${body}`];
}

/** 10 KB letters of real text: a corpus subject, then bodies of the validation split run together. */
async function textMessages(validation: CorpusMessage[], inbox: string): Promise<Array<(n: number) => string>> {
  const texts: Array<{ subject: string; text: string }> = [];
  for (const m of validation) {
    const p = await parseMessage(m.raw);
    if (p.text && p.text.length > 200) texts.push({ subject: p.subject.replace(/[\r\n]/g, ' ').slice(0, 120), text: p.text.replace(/\r?\n/g, '\r\n') });
  }
  const out: Array<(n: number) => string> = [];
  for (let i = 0; i < DISTINCT; i++) {
    let body = '';
    for (let j = i; body.length < BODY_BYTES; j++) body += `${texts[j % texts.length]!.text}\r\n`;
    body = body.slice(0, BODY_BYTES).replace(/[^\r\n]*$/, '');
    const subject = texts[i % texts.length]!.subject || 'Hello';
    out.push((n) => `From: "Sender ${i % 50}" <person${i % 50}@${SENDER_DOMAIN}>\r\nTo: <${inbox}>\r\nSubject: ${subject}\r\nDate: ${new Date().toUTCString()}\r\nMessage-ID: <load.${n}@${SENDER_DOMAIN}>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}`);
  }
  return out;
}

/** As an owner: each training message delivered, then PATCHed to its category; back once all is learned. */
export async function teach(app: FreshServe, inbox: string, train: CorpusMessage[]): Promise<{ spam: number; ham: number }> {
  const client = await Client.open(app.smtpPort);
  try {
    for (const m of train) {
      // An envelope sender of its own, and learn: false: a corpus message without a From would otherwise teach
      // the box a sender rule for the load's sender.
      const reply = await client.deliver(`teacher@${SENDER_DOMAIN}`, inbox, deliverable(m));
      const id = /queued as (em_\S+)/.exec(reply)?.[1];
      if (!id) throw new Error(`no email id in ${reply}`);
      const r = await request(`${app.api}/emails/${id}`, { method: 'PATCH', key: app.key, body: { category: m.spam ? 'spam' : 'primary', learn: false } });
      if (r.status !== 200) throw new Error(`PATCH ${id}: ${r.status} ${JSON.stringify(r.body)}`);
    }
  } finally {
    client.close();
  }
  const model = await until(
    'the corrections learned',
    async () => {
      const r = await request(`${app.api}/spam/filter`, { key: app.key });
      return r.body.pending === 0 ? r.body : null;
    },
    300_000,
    200,
  );
  return model.learned;
}

/** `count` messages over SESSIONS sessions, each reusing its connection. */
async function load(port: number, inbox: string, letters: Array<(n: number) => string>, count: number, first: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: SESSIONS }, async () => {
      const client = await Client.open(port);
      try {
        for (let n = next++; n < count; n = next++) await client.deliver(`sender@${SENDER_DOMAIN}`, inbox, letters[n % letters.length]!(first + n));
      } finally {
        client.close();
      }
    }),
  );
}

function categories(dataDir: string): string {
  const db = new Database(databasePath(dataDir), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT category, count(*) AS n FROM emails WHERE direction = 'in' GROUP BY 1 ORDER BY 2 DESC").all() as Array<{ category: string; n: number }>;
    return rows.map((r) => `${r.category} ${fmt(r.n)}`).join(', ');
  } finally {
    db.close();
  }
}

async function run(deps: FilterBenchDeps, mode: Mode, train: CorpusMessage[], letters: Map<Body, Array<(n: number) => string>>): Promise<Run> {
  const app = await deps.startMailwright(deps.dns, '', { MAILWRIGHT_SPAM_FILTER: mode });
  try {
    await deps.setUpInbox(app, deps.dns);
    const learned = await teach(app, deps.inbox, train);
    if (learned.spam + learned.ham !== train.length) throw new Error(`the model learned ${JSON.stringify(learned)} of ${train.length}`);
    const bodies = new Map<Body, Measure>();
    let sent = 0;
    for (const [body, messages] of letters) {
      resetPeak(app.pid);
      await load(app.smtpPort, deps.inbox, messages, WARMUP, sent);
      sent += WARMUP;
      const cpu0 = procCpuMicros(`/proc/${app.pid}/stat`);
      const threads0 = threadCpuByName(app.pid);
      const started = performance.now();
      await load(app.smtpPort, deps.inbox, messages, MESSAGES, sent);
      sent += MESSAGES;
      const seconds = (performance.now() - started) / 1000;
      const serverCpu = (procCpuMicros(`/proc/${app.pid}/stat`) - cpu0) / MESSAGES;
      const threads = new Map([...threadCpuByName(app.pid)].map(([name, cpu]) => [name, (cpu - (threads0.get(name) ?? 0)) / MESSAGES]));
      bodies.set(body, { rate: MESSAGES / seconds, serverCpu, threads, peak: procMemoryMiB(app.pid).peak });
    }
    await app.stop();
    return { mode, bodies, categories: categories(app.dataDir) };
  } finally {
    await app.stop();
    rmSync(app.dataDir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

export async function benchFilterCost(deps: FilterBenchDeps): Promise<void> {
  const split = splitCorpus();
  console.log(
    `\n### The spam filter's cost: ${fmt(MESSAGES)} messages of 10 KB per run and body (after ${fmt(WARMUP)} unmeasured) over ${SESSIONS} sessions, ` +
      `spam_filter off and builtin taking turns (${ROUNDS} runs each, each on a fresh serve whose workspace was taught 200 spam + 200 ham through the API first), ` +
      `bodies: ${BODIES.map((b) => (b === 'text' ? 'real text of the corpus' : "smtp-source's lines of X")).join(', then ')}; ${cpus()[0]?.model ?? 'cpu'}\n`,
  );
  const letters = new Map<Body, Array<(n: number) => string>>();
  for (const body of BODIES) letters.set(body, body === 'text' ? await textMessages(split.validation, deps.inbox) : lineMessages(deps.inbox));
  const runs: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) for (const mode of ['off', 'builtin'] as const) runs.push(await run(deps, mode, split.train, letters));
  const names = [...new Set(runs.flatMap((r) => [...r.bodies.values()].flatMap((m) => [...m.threads].filter(([, v]) => v >= 20).map(([k]) => k))))];
  table(
    ['spam_filter', 'body', 'msgs/s', 'server CPU µs/msg', ...names.map((n) => `${n} µs/msg`), 'peak RSS MiB', 'filed as (all bodies)'],
    runs.flatMap((r) => [...r.bodies].map(([body, m]) => [r.mode, body, fmt(m.rate), fmt(m.serverCpu), ...names.map((n) => fmt(m.threads.get(n) ?? 0)), fmt(m.peak), r.categories])),
  );
  for (const body of BODIES) {
    const of = (mode: Mode) => runs.filter((r) => r.mode === mode).map((r) => r.bodies.get(body)!);
    const ratio = median(of('builtin').map((m) => m.rate)) / median(of('off').map((m) => m.rate));
    const cpuRatio = median(of('builtin').map((m) => m.serverCpu)) / median(of('off').map((m) => m.serverCpu));
    const writer = (ms: Measure[]) => median(ms.map((m) => m.threads.get('mw-writer') ?? 0));
    const analyze = (ms: Measure[]) => median(ms.map((m) => m.threads.get('mw-analyze') ?? 0));
    console.log(
      `\n${body === 'text' ? 'real text' : "smtp-source's lines"}: msgs/s with the filter on ÷ off (medians) ${ratio.toFixed(2)}x; server CPU per message on ÷ off ${cpuRatio.toFixed(2)}x; ` +
        `the writer thread ${fmt(writer(of('off')))} → ${fmt(writer(of('builtin')))} µs/msg, the analyze thread ${fmt(analyze(of('off')))} → ${fmt(analyze(of('builtin')))}`,
    );
    reportGoal({ goal: `inbound with the built-in spam filter on, vs off (10 KB, ${body === 'text' ? 'real text' : "smtp-source's lines"})`, measured: `${ratio.toFixed(2)}x (CPU per message ${cpuRatio.toFixed(2)}x)`, target: '≥ 0.85x', pass: ratio >= 0.85 });
    const peak = (mode: Mode) => Math.max(...of(mode).map((m) => m.peak));
    console.log(`peak RSS under this load: ${fmt(peak('off'))} MiB with the filter off, ${fmt(peak('builtin'))} MiB on`);
    reportGoal({ goal: `memory, inbound with the spam filter on (peak RSS, ${body === 'text' ? 'real text' : "smtp-source's lines"})`, measured: `${fmt(peak('builtin'))} MiB (off: ${fmt(peak('off'))})`, target: '≤ 256 MiB', pass: peak('builtin') <= 256 });
  }
}
