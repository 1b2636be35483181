// Benchmark: bytes on disk per stored message (goal 2: at most 1.3x the raw size of a 10 KB message).
// The real app in this process, on a fresh data directory per run, fed realistic mail over its real front doors:
//   * received: BENCH_STORAGE_MESSAGES (default 3,000) messages of about 10 KB over SMTP to an inbox, 8 sessions.
//     English-like text: /usr/share/dict/words drawn with Zipf s=1.0 (the search benchmark's way; a fixed list
//     of common words when the file is missing), in sentences and paragraphs with a little punctuation and
//     typography; composed by nodemailer (mail/compose.ts) as about half text/plain and half multipart/alternative
//     with an HTML part (quoted-printable where it needs it), DKIM-signed by one of 8 sender domains whose SPF,
//     DKIM and DMARC records the test DNS server publishes. Not smtp-source's filler, which deflates to 1.4 %.
//   * sent: BENCH_STORAGE_SENT (default 3,000, as many as received) sends through POST /api/v1/emails with the
//     same kind of text and HTML, one recipient each, delivered (composed, DKIM-signed, stored as signed) to an
//     SMTP sink. Each email still waiting to be signed when the burst ends frees about a page when its bodies
//     are replaced packed, which no later mail reuses in the run: the run prints how many waited.
//   * sent, tracked: BENCH_STORAGE_TRACKED (default 3,000, as many as the others: the full-text index costs less
//     an email the more it holds, 4,648 B at 1,500 letters, 4,207 at 3,000 and 4,170 at 6,000 in the merge study
//     below, so a shorter run overstates it) sends with open tracking on, two recipients each, so every recipient
//     gets a signed copy of its own (delivery_contents).
// Each run measures the database after set-up and after the load with the app stopped and the WAL checkpointed
// (wal_checkpoint(TRUNCATE): the file then holds everything), and prints the growth per message: the whole
// file, each table and index (SQLite's dbstat), the full-text index's share, and the ratio to the raw size (the
// bytes the sender handed over). Every stored message is checked first: count, and for a sample GET
// /emails/:id/raw is byte for byte what was sent (received) or what the sink got, whose DKIM signature verifies.
// Then, on the received run's messages: how they compress with node:zlib's codecs and levels, alone and packed
// as the box packs them (mail/packing.ts), and what the full-text index costs in other shapes (arrivals spaced
// a minute apart as before 0025, no prefix index, detail=column, after 'optimize'). Since 0025 the index no
// longer depends on how far apart mail arrives (dense rowids; search_clock adds a row a minute at most), so the
// runs' burst of arrivals gives the figure real mail would. Last, how many free pages the index's merges leave
// over a longer run (BENCH_STORAGE_MERGE_STUDY letters, default 6,000). BENCH_STORAGE_* = 0 skips a run;
// BENCH_STORAGE_KEEP=1 keeps each run's data directory (its path printed) to look into with sqlite3 and dbstat.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cpus, tmpdir, totalmem } from 'node:os';
import { generateKeyPairSync } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { constants, brotliCompressSync, brotliDecompressSync, deflateRawSync, deflateSync, inflateRawSync, inflateSync } from 'node:zlib';
import { PACK_LEVEL } from '../../src/mail/packing.ts';
import Database from 'better-sqlite3';
import { dkimVerify } from 'mailauth';
import { compose } from '../../src/mail/compose.ts';
import { sign } from '../../src/mail/sign.ts';
import { databasePath, type Db } from '../../src/db/open.ts';
import { RECLAIM_EVERY_MS, freePages } from '../../src/db/free-pages.ts';
import { htmlText, participantsText, prefixesOf } from '../../src/emails/search-index.ts';
import { request } from '../../src/testkit/app.ts';
import { startSmtpSink, type SmtpSink } from '../../src/testkit/smtp-sink.ts';
import { RawSmtp } from '../../src/testkit/smtp-client.ts';
import { createResolver } from '../../src/dns/resolver.ts';
import type { DnsServer } from '../../src/testkit/dns-server.ts';
import { RECIPIENT_DOMAIN, SENDER_DOMAIN, WORDS_FILE, ensureWordsInstalled, fmt, mulberry32, opensslRsa2048SignMicros, reportGoal, startBenchApp, startBenchDns, table, until, zipf, type BenchApp } from './lib.ts';

const RECEIVED = Number(process.env.BENCH_STORAGE_MESSAGES ?? 3000);
const SENT = Number(process.env.BENCH_STORAGE_SENT ?? 3000);
const TRACKED = Number(process.env.BENCH_STORAGE_TRACKED ?? 3000);
const SESSIONS = 8;
const API_CLIENTS = 8;
const TARGET_BYTES = 10 * 1024;
const GOAL_RATIO = 1.3;
/** Messages per run whose stored bytes are read back through GET /emails/:id/raw and compared. */
const CHECKED = 25;
const INBOX_DOMAIN = 'inbound.bench.test';
const INBOX = `bench@${INBOX_DOMAIN}`;
const SENDER_DOMAINS = Array.from({ length: 8 }, (_, i) => `news${i}.senders.bench.test`);
const COMMON = 'the of and to a in is you that it for on your with this be are as we at have not from by or will can our if all please more about new time any us here thanks order account meeting update report week today team next free offer'.split(' ');
const FALLBACK = `${COMMON.join(' ')} after again against also always another because been before being below between both
  but came come could day did does done down each even every few find first found get give going good great had has
  help her here him his home house how into just know last like little long look made make many may me might most
  much must my name never now number off old only other out over own part people place right said same say see
  she should show side since small some something still such take tell than their them then there these they
  thing think those though three through too two under until upon use very want was water way well were what
  when where which while who why work world would write year yes yet young invoice shipping delivery payment
  customer product service price support subscription receipt ticket project deadline schedule review budget`.split(/\s+/);
const FIRST_NAMES = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Grace', 'Heidi', 'Ivan', 'Judy', 'Olivia', 'Peggy', 'Rupert', 'Sybil', 'Trent', 'Victor', 'Zoë', 'Amir', 'Chen', 'Dara', 'Emeka', 'Fatima', 'Goran', 'Hana', 'Inés', 'Jonas', 'Kenji', 'Lena', 'Marco', 'Priya'];

// ---------------------------------------------------------------------------------------------------------
// The corpus: seeded, Zipf-distributed words in sentences and paragraphs

export interface Text {
  subject: string;
  /** Paragraphs of sentences. */
  paragraphs: string[];
}

export class Corpus {
  readonly rand: () => number;
  readonly source: string;
  private readonly words: string[];
  private readonly word: () => number;

  constructor(seed: number) {
    this.rand = mulberry32(seed);
    let words: string[];
    if (ensureWordsInstalled()) {
      words = [...new Set(readFileSync(WORDS_FILE, 'utf8').split('\n').filter((w) => /^[a-z]{2,}$/.test(w)))];
      for (let i = words.length - 1; i > 0; i--) {
        const j = Math.floor(this.rand() * (i + 1));
        [words[i], words[j]] = [words[j], words[i]];
      }
      const common = new Set(COMMON);
      words = [...COMMON, ...words.filter((w) => !common.has(w))];
      this.source = `${WORDS_FILE} (${fmt(words.length)} words, Zipf s=1.0)`;
    } else {
      words = [...new Set(FALLBACK.filter(Boolean))];
      this.source = `a fixed list of ${words.length} common English words (Zipf s=1.0; ${WORDS_FILE} is missing)`;
    }
    this.words = words;
    this.word = zipf(words.length, 1.0, this.rand);
  }

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.rand() * list.length)];
  }

  sentence(): string {
    const n = 5 + Math.floor(this.rand() * 14);
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      let w = this.words[this.word()];
      const r = this.rand();
      if (i > 1 && i < n - 1 && r < 0.07) w += ',';
      else if (r > 0.995) w = `“${w}”`;
      else if (r > 0.99) w = `${w}’s`;
      else if (r > 0.985) w = String(Math.floor(this.rand() * 2000));
      out.push(w);
    }
    out[0] = out[0][0].toUpperCase() + out[0].slice(1);
    return out.join(' ') + (this.rand() < 0.1 ? '?' : '.');
  }

  /** Paragraphs of 2-6 sentences, about `bytes` of UTF-8 in all. */
  text(bytes: number): Text {
    const subject = this.sentence().replace(/[.?]$/, '').split(' ').slice(0, 3 + Math.floor(this.rand() * 6)).join(' ');
    const paragraphs: string[] = [];
    let size = 0;
    while (size < bytes) {
      const sentences = Array.from({ length: 2 + Math.floor(this.rand() * 5) }, () => this.sentence());
      const p = sentences.join(' ');
      paragraphs.push(p);
      size += Buffer.byteLength(p) + 2;
    }
    return { subject, paragraphs };
  }

  name(): string {
    const last = this.words[200 + Math.floor(this.rand() * 5000)] ?? 'smith';
    return `${this.pick(FIRST_NAMES)} ${last[0].toUpperCase()}${last.slice(1)}`;
  }

  link(domain: string): string {
    return `https://www.${domain}/${this.words[this.word()]}/${this.words[this.word()]}?utm_source=newsletter&utm_medium=email&utm_campaign=${this.words[this.word()]}`;
  }
}

/** Lines of at most 72 characters, as a mail client writes them. */
const wrap = (p: string) => p.replace(/(.{1,72})(?: |$)/g, '$1\n').trimEnd();

export function plainText(t: Text, greeting: string, signature: string): string {
  return [`${greeting},`, ...t.paragraphs.map(wrap), `-- \n${signature}`].join('\n\n') + '\n';
}

/** A newsletter-like HTML body: a styled wrapper, the paragraphs, a few links, a footer. */
export function htmlOf(c: Corpus, t: Text, greeting: string, signature: string, domain: string): string {
  const style = 'font-family:Helvetica,Arial,sans-serif;font-size:15px;line-height:22px;color:#333333;margin:0 0 16px 0';
  const body = t.paragraphs
    .map((p, i) => {
      const words = p.split(' ');
      if (i % 2 === 0 && words.length > 6) {
        const at = 2 + Math.floor(c.rand() * (words.length - 5));
        words.splice(at, 3, `<a href="${c.link(domain)}" style="color:#1a73e8;text-decoration:underline">${words.slice(at, at + 3).join(' ')}</a>`);
      }
      return `<p style="${style}">${words.join(' ')}</p>`;
    })
    .join('\n');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${t.subject}</title>
<style>body{margin:0;padding:0;background:#f4f4f4}.wrapper{max-width:600px;margin:0 auto;background:#ffffff}@media (max-width:620px){.wrapper{width:100% !important}}</style>
</head><body>
<table role="presentation" class="wrapper" width="100%" cellpadding="0" cellspacing="0" border="0"><tr><td style="padding:24px 32px">
<p style="${style}">${greeting},</p>
${body}
<p style="${style}">${signature.replace(/\n/g, '<br>')}</p>
</td></tr><tr><td style="padding:16px 32px;font-size:12px;color:#888888;font-family:Helvetica,Arial,sans-serif">
You receive this because you have an account at ${domain}. <a href="${c.link(domain)}" style="color:#888888">Unsubscribe</a> · <a href="${c.link(domain)}" style="color:#888888">Preferences</a>
</td></tr></table>
</body></html>
`;
}

/** What a message carries, for sending it and for building the full-text rows it should get. */
export interface Letter {
  from: { name: string; address: string };
  subject: string;
  text: string;
  html?: string;
}

/** A letter of about `bytes` as composed: half text only, half text + HTML (multipart/alternative). */
/**
 * A letter as its sender's server sends it: composed (with List-Unsubscribe when it has HTML, as newsletters
 * do) and DKIM-signed by the From domain with selector s1. `n` numbers the unsubscribe link.
 */
export async function signedLetter(l: Letter, m: { from: { name: string; address: string }; to: string; messageId: string; date: number; n: number; privateKey: string }): Promise<Buffer> {
  const domain = m.from.address.split('@')[1];
  const composed = await compose({
    messageId: m.messageId,
    date: m.date,
    from: m.from,
    to: [{ name: 'Bench', address: m.to }],
    cc: [],
    replyTo: [],
    subject: l.subject,
    text: l.text,
    ...(l.html ? { html: l.html } : {}),
    headers: l.html ? { 'List-Unsubscribe': `<https://www.${domain}/unsubscribe/${m.n}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } : {},
    attachments: [],
  });
  return sign(composed, { domain, selector: 's1', privateKey: m.privateKey });
}

export function letter(c: Corpus, from: { name: string; address: string }, bytes: number): Letter {
  const domain = from.address.split('@')[1];
  const greeting = `Hi ${c.name().split(' ')[0]}`;
  const signature = `${from.name}\n${domain}`;
  if (c.rand() < 0.5) {
    // Headers and the DKIM signature take about 1,400 bytes.
    const t = c.text(bytes - 1400);
    return { from, subject: t.subject, text: plainText(t, greeting, signature) };
  }
  // The HTML repeats the text with about 1,400 bytes of markup, some more per paragraph, quoted-printable.
  const t = c.text((bytes - 3700) / 2.6);
  return { from, subject: t.subject, text: plainText(t, greeting, signature), html: htmlOf(c, t, greeting, signature, domain) };
}

// ---------------------------------------------------------------------------------------------------------
// Measuring a database file

interface Objects {
  /** Bytes of pages per table or index (dbstat: every page, used or not). */
  bytes: Map<string, number>;
  /** The table each object belongs to (an index's table; FTS5 shadow tables their FTS table). */
  owner: Map<string, string>;
  file: number;
  wal: number;
  free: number;
}

/** Checkpoints (the app is stopped) and reads the size of everything in the file. */
function measureFile(dataDir: string): Objects {
  const file = databasePath(dataDir);
  const db = new Database(file, { fileMustExist: true });
  try {
    const [cp] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
    if (cp.busy) throw new Error('wal_checkpoint(TRUNCATE) was blocked: is the app still running?');
    const bytes = new Map<string, number>();
    for (const r of db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all() as Array<{ name: string; bytes: number }>) bytes.set(r.name, r.bytes);
    const owner = new Map<string, string>();
    const schema = db.prepare("SELECT name, tbl_name, sql FROM sqlite_schema WHERE type IN ('table', 'index')").all() as Array<{ name: string; tbl_name: string; sql: string | null }>;
    const fts = schema.filter((s) => /CREATE VIRTUAL TABLE .* USING fts5/i.test(s.sql ?? '')).map((s) => s.name);
    for (const s of schema) owner.set(s.name, fts.find((f) => s.name.startsWith(`${f}_`)) ?? s.tbl_name);
    const free = (db.pragma('freelist_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);
    db.close();
    const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);
    return { bytes, owner, file: size(file), wal: size(`${file}-wal`), free };
  } catch (err) {
    db.close();
    throw err;
  }
}

interface Growth {
  run: string;
  messages: number;
  /** Average size of a message as handed to the box (SMTP DATA, or the signed copy the sink got). */
  rawBytes: number;
  perMessage: number;
  fts: number;
  tables: Array<{ table: string; bytes: number }>;
  objects: Array<{ name: string; table: string; bytes: number }>;
  free: number;
  /** What explains the run's free pages, printed under its table. */
  note?: string;
}

function growth(run: string, messages: number, rawBytes: number, before: Objects, after: Objects): Growth {
  const objects: Growth['objects'] = [];
  for (const [name, bytes] of after.bytes) {
    const grown = bytes - (before.bytes.get(name) ?? 0);
    if (grown !== 0) objects.push({ name, table: after.owner.get(name) ?? name, bytes: grown / messages });
  }
  objects.sort((a, b) => b.bytes - a.bytes);
  const byTable = new Map<string, number>();
  for (const o of objects) byTable.set(o.table, (byTable.get(o.table) ?? 0) + o.bytes);
  const tables = [...byTable].map(([table, bytes]) => ({ table, bytes })).sort((a, b) => b.bytes - a.bytes);
  return {
    run,
    messages,
    rawBytes,
    perMessage: (after.file + after.wal - before.file - before.wal) / messages,
    fts: byTable.get('email_search') ?? 0,
    tables,
    objects,
    free: (after.free - before.free) / messages,
  };
}

// ---------------------------------------------------------------------------------------------------------
// The runs

interface Scene {
  dns: DnsServer;
  sink: SmtpSink;
  bench: BenchApp;
}

async function startScene(env: Record<string, string> = {}): Promise<Scene> {
  const dns = await startBenchDns();
  dns.addZone('bench.test');
  const sink = await startSmtpSink({ host: '127.0.0.1' });
  const bench = await startBenchApp(dns, sink.port, {
    MAILWRIGHT_SMTP_MAX_MESSAGES: '1000000',
    MAILWRIGHT_SMTP_MAX_CLIENTS_PER_IP: '200',
    MAILWRIGHT_SMTP_CONNECTION_RATE_PER_IP: '0',
    ...env,
  });
  return { dns, sink, bench };
}

async function stopScene(s: Scene): Promise<void> {
  await s.bench.running.stop().catch(() => undefined);
  if (process.env.BENCH_STORAGE_KEEP) console.log(`bench: storage: data kept in ${s.bench.dataDir}`);
  else rmSync(s.bench.dataDir, { recursive: true, force: true });
  await s.sink.close();
  await s.dns.close();
}

/** Stops the app, measures its file, starts it again. */
async function measureStopped(s: Scene): Promise<Objects> {
  await s.bench.running.stop();
  const measured = measureFile(s.bench.dataDir);
  await s.bench.restart();
  return measured;
}

async function must(what: string, reply: Promise<{ status: number; body: any }>, ok = [200, 201]) {
  const r = await reply;
  if (!ok.includes(r.status)) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  return r.body;
}

async function setUpInbox(s: Scene): Promise<void> {
  const { api, key } = s.bench;
  const domain = await must('POST /domains', request(`${api}/domains`, { body: { name: INBOX_DOMAIN }, key }));
  s.dns.publish(domain.records);
  const setup = await must('POST /domains/:id/inbound/setup', request(`${api}/domains/${domain.id}/inbound/setup`, { method: 'POST', key }));
  const [preference, exchange] = String(setup.record.value).split(/\s+/);
  s.dns.set(setup.record.name, 'MX', [{ preference: Number(preference), exchange }]);
  s.dns.set(exchange, 'A', ['127.0.0.1']);
  await until(
    `inbound status ready for ${INBOX_DOMAIN}`,
    async () => (await must('POST /domains/:id/inbound/verify', request(`${api}/domains/${domain.id}/inbound/verify`, { method: 'POST', key }))).status === 'ready',
    10_000,
  );
  await must('POST /inboxes', request(`${api}/inboxes`, { body: { domain_id: domain.id, local_part: 'bench', name: 'Bench' }, key }));
}

/** SPF, a DKIM key and DMARC for each sender domain; the signing key of each. */
function publishSenders(dns: DnsServer): Map<string, string> {
  const keys = new Map<string, string>();
  dns.set('1.0.0.127.in-addr.arpa', 'PTR', ['mail.senders.bench.test']);
  dns.set('mail.senders.bench.test', 'A', ['127.0.0.1']);
  for (const domain of SENDER_DOMAINS) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    dns.set(domain, 'TXT', ['v=spf1 ip4:127.0.0.1 -all']);
    dns.set(`s1._domainkey.${domain}`, 'TXT', [`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]);
    dns.set(`_dmarc.${domain}`, 'TXT', ['v=DMARC1; p=none']);
    keys.set(domain, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  }
  return keys;
}

/** RFC 5321 4.5.2: a line starting with "." gets another one. */
const dotStuff = (body: Buffer) => Buffer.from(body.toString('latin1').replace(/(^|\r\n)\./g, '$1..'), 'latin1');

interface Received {
  messageId: string;
  raw: Buffer;
  letter: Letter;
}

/** Composes and DKIM-signs the received run's messages. */
async function inboundMessages(c: Corpus, keys: Map<string, string>, n: number): Promise<Received[]> {
  const senders = Array.from({ length: 40 }, (_, i) => {
    const domain = SENDER_DOMAINS[i % SENDER_DOMAINS.length];
    const name = c.name();
    return { name, address: `${name.split(' ')[0].toLowerCase().normalize('NFD').replace(/[^a-z]/g, '')}@${domain}` };
  });
  const out: Received[] = [];
  const start = Date.now() - n * 1000;
  for (let i = 0; i < n; i++) {
    const from = c.pick(senders);
    const l = letter(c, from, TARGET_BYTES);
    const domain = from.address.split('@')[1];
    const messageId = `${(start + i).toString(36)}.${i}.${Math.floor(c.rand() * 1e9).toString(36)}@${domain}`;
    out.push({ messageId, raw: await signedLetter(l, { from, to: INBOX, messageId, date: start + i * 1000, n: i, privateKey: keys.get(domain)! }), letter: l });
  }
  return out;
}

async function deliverAll(port: number, messages: Received[]): Promise<void> {
  let next = 0;
  const session = async () => {
    const c = await RawSmtp.open(port);
    try {
      const greeting = await c.read();
      if (greeting.code !== 220) throw new Error(`greeting: ${greeting.text}`);
      await c.command('EHLO mail.senders.bench.test');
      while (next < messages.length) {
        const m = messages[next++];
        const from = /^From: .*<([^>]+)>/m.exec(m.raw.toString('latin1'))?.[1] ?? '';
        for (const [line, code] of [[`MAIL FROM:<${from}>`, 250], [`RCPT TO:<${INBOX}>`, 250], ['DATA', 354]] as const) {
          const reply = await c.command(line, 30_000);
          if (reply.code !== code) throw new Error(`${line}: ${reply.code} ${reply.text}`);
        }
        c.write(Buffer.concat([dotStuff(m.raw), Buffer.from(m.raw.subarray(-2).toString() === '\r\n' ? '.\r\n' : '\r\n.\r\n')]));
        const done = await c.read(60_000);
        if (done.code !== 250) throw new Error(`end of DATA: ${done.code} ${done.text}`);
      }
      await c.command('QUIT').catch(() => undefined);
    } finally {
      c.close();
    }
  };
  await Promise.all(Array.from({ length: SESSIONS }, session));
}

/** GET /emails/:id/raw of `id`. */
async function rawOf(bench: BenchApp, id: string, recipient?: string): Promise<Buffer> {
  const res = await fetch(`${bench.api}/emails/${id}/raw${recipient ? `?recipient=${encodeURIComponent(recipient)}` : ''}`, { headers: { authorization: `Bearer ${bench.key}` } });
  if (res.status !== 200) throw new Error(`GET /emails/${id}/raw: ${res.status} ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}

/**
 * Gives the box's own reclaim of free pages (db/free-pages.ts, a look every 10 s) its turn, as an idle box would:
 * waits until its free pages are no longer worth giving back, at most two of its periods. Says what it saw.
 */
async function afterReclaim(db: Db): Promise<string> {
  const before = freePages(db).free;
  const started = performance.now();
  while (freePages(db).worthReclaiming && performance.now() - started < 2 * RECLAIM_EVERY_MS + 5_000) await new Promise((r) => setTimeout(r, 200));
  const { free, worthReclaiming } = freePages(db);
  if (before === free) return `${fmt(free)} free pages${worthReclaiming ? ', not given back within 25 s' : ''}`;
  return `${fmt(before)} free pages, of which the box gave back ${fmt(before - free)} within ${fmt((performance.now() - started) / 1000, 1)} s`;
}

async function receivedRun(c: Corpus): Promise<{ growth: Growth; messages: Received[]; stored: Buffer[] }> {
  const s = await startScene();
  try {
    const keys = publishSenders(s.dns);
    await setUpInbox(s);
    const messages = await inboundMessages(c, keys, RECEIVED);
    const before = await measureStopped(s);
    const started = performance.now();
    await deliverAll(s.bench.running.smtp.port, messages);
    console.error(`bench: storage: ${fmt(messages.length)} messages received in ${fmt((performance.now() - started) / 1000, 1)} s`);
    // Every message is there, and a sample reads back byte for byte (after our trace and authentication fields).
    const db = s.bench.running.app.db!;
    const count = db.prepare("SELECT count(*) FROM emails WHERE direction = 'in'").pluck().get() as number;
    if (count !== messages.length) throw new Error(`${count} received emails stored, ${messages.length} sent`);
    const stored: Buffer[] = [];
    for (let i = 0; i < messages.length; i += Math.ceil(messages.length / CHECKED)) {
      const m = messages[i];
      const id = db.prepare('SELECT id FROM emails WHERE message_id = ?').pluck().get(m.messageId) as string;
      const raw = await rawOf(s.bench, id);
      if (!raw.subarray(raw.length - m.raw.length).equals(m.raw)) throw new Error(`GET /emails/${id}/raw is not the message as sent`);
      if (!/^Received: from /.test(raw.toString('latin1', 0, 20))) throw new Error(`GET /emails/${id}/raw does not start with our Received field`);
      stored.push(raw);
    }
    const dkim = db.prepare("SELECT count(*) FROM emails WHERE direction = 'in' AND authentication ->> '$.dmarc.result' = 'pass'").pluck().get() as number;
    if (dkim !== messages.length) console.error(`bench: storage: only ${dkim} of ${messages.length} received messages passed DMARC`);
    const reclaim = await afterReclaim(db);
    await s.bench.running.stop();
    const after = measureFile(s.bench.dataDir);
    const rawBytes = messages.reduce((sum, m) => sum + m.raw.length, 0) / messages.length;
    const note = `once all were stored, the file held ${reclaim}`;
    return { growth: { ...growth('received', messages.length, rawBytes, before, after), note }, messages, stored };
  } finally {
    await stopScene(s);
  }
}

async function sentRun(c: Corpus, run: string, n: number, opts: { tracked: boolean }): Promise<Growth> {
  const s = await startScene();
  try {
    const { key } = s.bench;
    if (opts.tracked) {
      const domains = await must('GET /domains', request(`${s.bench.api}/domains`, { key }));
      const id = domains.data.find((d: { name: string }) => d.name === SENDER_DOMAIN).id;
      await must('PATCH /domains/:id', request(`${s.bench.api}/domains/${id}`, { method: 'PATCH', body: { open_tracking: true }, key }));
    }
    const before = await measureStopped(s);
    // After the restart: the app listens on new ports.
    const api = s.bench.api;
    const from = { name: 'Bench Sender', address: `news@${SENDER_DOMAIN}` };
    const bodies = Array.from({ length: n }, () => letter(c, from, TARGET_BYTES));
    const recipients = opts.tracked ? 2 : 1;
    let next = 0;
    const ids: string[] = [];
    const client = async () => {
      while (next < n) {
        const i = next++;
        const l = bodies[i];
        const to = Array.from({ length: recipients }, (_, k) => `r${i}.${k}@${RECIPIENT_DOMAIN}`);
        const sent = await must('POST /emails', request(`${api}/emails`, { body: { from: `${from.name} <${from.address}>`, to, subject: l.subject, text: l.text, ...(l.html ? { html: l.html } : {}) }, key }));
        ids[i] = sent.id;
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: API_CLIENTS }, client));
    const db = s.bench.running.app.db!;
    // Bodies are stored as text until the copy is signed, then packed: each email signed after the burst frees
    // about a page that no later mail reuses in this run (docs/storage.md, Mail is stored packed).
    const unsigned = db.prepare('SELECT count(*) FROM emails WHERE signed_at IS NULL').pluck().get() as number;
    const freeThen = db.pragma('freelist_count', { simple: true }) as number;
    await until(
      `${n * recipients} deliveries to the sink`,
      () => (db.prepare("SELECT count(*) FROM deliveries WHERE state = 'delivered'").pluck().get() as number) >= n * recipients,
      10 * 60_000,
      200,
    );
    console.error(`bench: storage: ${fmt(n)} sends (${run}) accepted and delivered in ${fmt((performance.now() - started) / 1000, 1)} s`);
    // A text-only email has nothing to track: its recipients share one copy, in one transaction.
    const got = s.sink.messages.reduce((sum, m) => sum + m.rcptTo.length, 0);
    if (got !== n * recipients) throw new Error(`the sink has ${got} recipients' messages, expected ${n * recipients}`);
    // What the sink got verifies, and GET /emails/:id/raw is exactly that.
    const resolver = createResolver([s.dns.address]);
    const byRecipient = new Map(s.sink.messages.flatMap((m) => m.rcptTo.map((r) => [r, m.raw] as const)));
    for (let i = 0; i < n; i += Math.ceil(n / CHECKED)) {
      const recipient = `r${i}.0@${RECIPIENT_DOMAIN}`;
      const delivered = byRecipient.get(recipient);
      if (!delivered) throw new Error(`the sink has no message for ${recipient}`);
      const verdict = await dkimVerify(delivered, { resolver: (name: string, type: string) => resolver.resolve(name, type) as Promise<string[][]> });
      if (verdict.results[0]?.status.result !== 'pass') throw new Error(`the DKIM signature of ${ids[i]} does not verify at the sink: ${JSON.stringify(verdict.results[0]?.status)}`);
      const raw = await rawOf(s.bench, ids[i], opts.tracked ? recipient : undefined);
      if (!raw.equals(delivered)) throw new Error(`GET /emails/${ids[i]}/raw is not what the sink got`);
    }
    const rawBytes = s.sink.messages.reduce((sum, m) => sum + m.raw.length, 0) / s.sink.messages.length;
    const reclaim = await afterReclaim(db);
    await s.bench.running.stop();
    const after = measureFile(s.bench.dataDir);
    const note = `${fmt(unsigned)} of the ${fmt(n)} emails were still waiting to be signed when the last send was answered, and the file held ${fmt(freeThen)} free pages; once all were delivered (their bodies replaced packed, a page or so freed each), ${reclaim}`;
    return { ...growth(run, n, rawBytes, before, after), note };
  } finally {
    await stopScene(s);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Codecs and full-text shapes, on the received run's messages

interface Codec {
  name: string;
  compress: (b: Buffer) => Buffer;
  decompress: (b: Buffer) => Buffer;
}

const brotli = (quality: number): Codec => ({
  name: `brotli, quality ${quality}`,
  compress: (b) =>
    brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT, [constants.BROTLI_PARAM_SIZE_HINT]: b.length } }),
  decompress: (b) => brotliDecompressSync(b),
});
const deflate = (level: number): Codec => ({ name: `deflate (raw), level ${level}`, compress: (b) => deflateRawSync(b, { level }), decompress: (b) => inflateRawSync(b) });
/** Messages the CPU columns time (the sizes are over all of them). */
const TIMED = 500;
const CODECS: Codec[] = [deflate(1), deflate(3), deflate(6), deflate(9), brotli(1), brotli(3), brotli(4), brotli(5), brotli(6), brotli(9), brotli(11)];

/** CPU of this process (all threads; the study runs on this one), µs. */
const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** The least CPU per item over 7 rounds (this machine is shared), µs. */
function leastCpu(items: number, run: () => void): number {
  let least = Infinity;
  for (let round = 0; round < 7; round++) {
    const t = cpuMicros();
    run();
    least = Math.min(least, (cpuMicros() - t) / items);
  }
  return least;
}

function codecStudy(messages: Received[]): void {
  const samples = messages.map((m) => m.raw);
  const total = samples.reduce((sum, b) => sum + b.length, 0);
  const rows: Array<Array<string | number>> = [];
  for (const codec of CODECS) {
    const packed = samples.map((b) => codec.compress(b));
    const bytes = packed.reduce((sum, z) => sum + z.length, 0);
    const compress = leastCpu(TIMED, () => samples.slice(0, TIMED).forEach((b) => codec.compress(b)));
    const decompress = leastCpu(TIMED, () => packed.slice(0, TIMED).forEach((z) => codec.decompress(z)));
    rows.push([codec.name, fmt(bytes / samples.length), `${fmt((100 * bytes) / total, 1)} %`, fmt(compress), fmt(decompress)]);
  }
  console.log(`\nCompressing the received run's messages alone (${fmt(samples.length)} as sent, ${fmt(total / samples.length)} bytes on average), one call per message, CPU of this thread (the first ${TIMED}, least of 7 rounds):\n`);
  table(['codec', 'bytes per message', 'of raw', 'compress µs', 'decompress µs'], rows);

  // What the box stores (mail/packing.ts): the text, the HTML against the text, the message against both.
  const bodies = messages.map((m) => ({ raw: m.raw, text: Buffer.from(m.letter.text), html: m.letter.html ? Buffer.from(m.letter.html) : null }));
  const plainBodies = bodies.reduce((sum, b) => sum + b.text.length + (b.html?.length ?? 0), 0);
  const alone = (b: Buffer | null) => (b ? deflateSync(b, { level: 6 }).length : 0);
  const perMessage = (f: (b: (typeof bodies)[number]) => number) => fmt(bodies.reduce((sum, b) => sum + f(b), 0) / bodies.length);
  const schemes: Array<Array<string | number>> = [
    ['as they are (before packing)', perMessage((b) => b.raw.length + b.text.length + (b.html?.length ?? 0)), perMessage((b) => b.raw.length), '', ''],
    ['the message deflated (level 6), the bodies as they are', perMessage((b) => alone(b.raw) + b.text.length + (b.html?.length ?? 0)), perMessage((b) => alone(b.raw)), '', ''],
    ['each deflated alone (level 6)', perMessage((b) => alone(b.raw) + alone(b.text) + alone(b.html)), perMessage((b) => alone(b.raw)), '', ''],
  ];
  for (const level of [1, 3, 6, 9]) {
    const z = (b: Buffer, dictionary?: Buffer | null) => deflateSync(b, { level, ...(dictionary?.length ? { dictionary } : {}) });
    const packOne = (b: (typeof bodies)[number]) => {
      const text = z(b.text);
      const html = b.html ? z(b.html, b.text.subarray(-32768)) : null;
      return { text, html, raw: z(b.raw, Buffer.concat([b.text, b.html ?? Buffer.alloc(0)]).subarray(-32768)) };
    };
    const packed = bodies.map(packOne);
    const bytes = packed.reduce((sum, p) => sum + p.text.length + (p.html?.length ?? 0) + p.raw.length, 0);
    const rawBytes = packed.reduce((sum, p) => sum + p.raw.length, 0);
    const pack = leastCpu(TIMED, () => bodies.slice(0, TIMED).forEach(packOne));
    const unpack = leastCpu(TIMED, () =>
      packed.slice(0, TIMED).forEach((p) => {
        const text = inflateSync(p.text);
        const html = p.html ? inflateSync(p.html, { dictionary: text.subarray(-32768) }) : null;
        inflateSync(p.raw, { dictionary: Buffer.concat([text, html ?? Buffer.alloc(0)]).subarray(-32768) });
      }),
    );
    schemes.push([`packed as the box packs, deflate level ${level}${level === PACK_LEVEL ? ' (PACK_LEVEL)' : ''}`, fmt(bytes / bodies.length), fmt(rawBytes / bodies.length), fmt(pack), fmt(unpack)]);
  }
  console.log(`\nThe message and its bodies (${fmt(plainBodies / samples.length)} bytes of text and HTML per message) as stored, per message, CPU of this thread (the first ${TIMED}, least of 7 rounds):\n`);
  table(['stored as', 'bytes (message + bodies)', 'of which the message', 'pack µs', 'unpack all µs'], schemes);
}

/** What search-index.ts writes for a received letter: subject, body text, participants, attachment names. */
function ftsRow(l: Letter): [string, string, string, string] {
  return [l.subject, l.text ?? htmlText(l.html ?? ''), participantsText(l.from, [{ name: 'Bench', address: INBOX }]), ''];
}

function ftsStudy(letters: Letter[]): void {
  const MINUTE = 60_000 * 1024;
  // Until migration 0025 search_rowid was the arrival time in ms * 1024: every doclist entry stores the gap to the
  // previous one as a varint, so the spacing of arrivals counted, not only the text. Now it is dense (one past
  // the newest) whatever the spacing, and the 3-letter prefixes live in email_prefixes (rowids only).
  const shapes = [
    { name: "before 0025: prefix = '3', detail = full; 1 ms apart", options: "prefix = '3'", step: 1024, prefixes: false },
    { name: "before 0025, a message a minute (as real mail arrives)", options: "prefix = '3'", step: MINUTE, prefixes: false },
    { name: "prefix = '3', dense rowids (1, 2, 3...)", options: "prefix = '3'", step: 1, prefixes: false },
    { name: 'no prefix index, a message a minute', options: '', step: MINUTE, prefixes: false },
    { name: "prefix = '3', detail = column (no phrases), a message a minute", options: "prefix = '3', detail = column", step: MINUTE, prefixes: false },
    { name: 'no prefix index, dense rowids, email_prefixes beside it (what the box builds since 0025)', options: '', step: 1, prefixes: true },
  ];
  const rows: Array<Array<string | number>> = [];
  const textBytes = letters.reduce((sum, l) => sum + Buffer.byteLength(ftsRow(l).join('\n')), 0) / letters.length;
  for (const shape of shapes) {
    const db = new Database(':memory:');
    db.exec(`CREATE VIRTUAL TABLE s USING fts5(subject, body, participants, attachments, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'${shape.options ? `, ${shape.options}` : ''})`);
    db.exec("CREATE VIRTUAL TABLE s_prefixes USING fts5(prefixes, content = '', contentless_delete = 1, detail = none, tokenize = 'unicode61 remove_diacritics 2')");
    const insert = db.prepare('INSERT INTO s (rowid, subject, body, participants, attachments) VALUES (?, ?, ?, ?, ?)');
    const insertPrefixes = db.prepare('INSERT INTO s_prefixes (rowid, prefixes) VALUES (?, ?)');
    // Committed a few at a time, as the writer's group commits do.
    const base = shape.step === 1 ? 1 : Date.now() * 1024;
    for (let i = 0; i < letters.length; i += 4)
      db.transaction(() =>
        letters.slice(i, i + 4).forEach((l, k) => {
          const row = ftsRow(l);
          insert.run(base + (i + k) * shape.step, ...row);
          // search-index.ts leaves the role tokens (the participants' last line) out.
          if (shape.prefixes) insertPrefixes.run(base + (i + k) * shape.step, prefixesOf([row[0], row[1], row[2].split('\n').slice(0, -1).join('\n'), row[3]]));
        }),
      )();
    const size = () => (db.prepare("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 's_%'").pluck().get() as number) / letters.length;
    const built = size();
    db.exec("INSERT INTO s (s) VALUES ('optimize')");
    db.exec("INSERT INTO s_prefixes (s_prefixes) VALUES ('optimize')");
    rows.push([shape.name, fmt(built), fmt(size()), `${fmt(built / textBytes, 2)}x`]);
    db.close();
  }
  console.log(`\nThe full-text index in other shapes, built from the received run's texts (${fmt(textBytes)} bytes of indexed text per message), committed 4 at a time:\n`);
  table(['email_search (and email_prefixes)', 'bytes per message', "after 'optimize'", 'of the indexed text'], rows);
}

/**
 * Free pages over a longer run than the app runs: FTS5's automerge writes a merged segment before it deletes the
 * segments it merged, so the file holds their pages free until later writes reuse them. Whether that is a lasting
 * cost or a swing depends on where a run stops, so this writes MERGE_STUDY letters into both full-text tables
 * of a file database (WAL, committed 4 at a time, as the writer does) and samples the free pages every 500,
 * for FTS5's default automerge (4) and two others, with the writer's CPU per email for each.
 */
const MERGE_STUDY = Number(process.env.BENCH_STORAGE_MERGE_STUDY ?? 6000);

function mergeStudy(c: Corpus): void {
  const from = { name: 'Bench Sender', address: `news@${SENDER_DOMAIN}` };
  const letters = Array.from({ length: MERGE_STUDY }, () => letter(c, from, TARGET_BYTES));
  const columns = ['emails'];
  const samples: string[][] = [];
  const cpu: string[] = ['writer CPU per email, µs'];
  for (const automerge of [4, 2, 8]) {
    const dir = mkdtempSync(join(tmpdir(), 'mw-bench-merge-'));
    const db = new Database(join(dir, 'merge.db'));
    try {
      db.pragma('journal_mode = WAL');
      db.exec("CREATE VIRTUAL TABLE s USING fts5(subject, body, participants, attachments, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2')");
      db.exec("CREATE VIRTUAL TABLE s_prefixes USING fts5(prefixes, content = '', contentless_delete = 1, detail = none, tokenize = 'unicode61 remove_diacritics 2')");
      db.exec(`INSERT INTO s (s, rank) VALUES ('automerge', ${automerge}); INSERT INTO s_prefixes (s_prefixes, rank) VALUES ('automerge', ${automerge})`);
      const insert = db.prepare('INSERT INTO s (rowid, subject, body, participants, attachments) VALUES (?, ?, ?, ?, ?)');
      const insertPrefixes = db.prepare('INSERT INTO s_prefixes (rowid, prefixes) VALUES (?, ?)');
      columns.push(`automerge ${automerge}${automerge === 4 ? ' (default)' : ''}: free pages, bytes per email (of the index)`);
      let used = 0;
      for (let i = 0; i < letters.length; i += 4) {
        const t = cpuMicros();
        db.transaction(() =>
          letters.slice(i, i + 4).forEach((l, k) => {
            const row = ftsRow(l);
            insert.run(i + k + 1, ...row);
            insertPrefixes.run(i + k + 1, prefixesOf([row[0], row[1], row[2].split('\n').slice(0, -1).join('\n'), row[3]]));
          }),
        )();
        used += cpuMicros() - t;
        const n = Math.min(letters.length, i + 4);
        if (n % 500 !== 0) continue;
        db.pragma('wal_checkpoint(TRUNCATE)');
        const free = (db.pragma('freelist_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);
        const index = db.prepare("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 's_%'").pluck().get() as number;
        const row = (samples[n / 500 - 1] ??= [fmt(n)]);
        row.push(`${fmt(free / n)} (${fmt(index / n)})`);
      }
      cpu.push(fmt(used / letters.length));
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log(`\nFree pages left by the full-text index's segment merges, ${fmt(MERGE_STUDY)} sent-size letters into email_search and email_prefixes of a file database, sampled every 500 after a checkpoint:\n`);
  table(columns, [...samples, cpu]);
}

// ---------------------------------------------------------------------------------------------------------

function report(g: Growth): void {
  console.log(`\n**${g.run}**: ${fmt(g.messages)} messages of ${fmt(g.rawBytes)} bytes on average; growth of the database per message:\n`);
  const rows: Array<Array<string | number>> = g.tables
    .filter((t) => t.bytes >= 0.005 * g.perMessage)
    .map((t) => {
      const parts = g.objects.filter((o) => o.table === t.table && o.bytes >= 0.005 * g.perMessage);
      const detail = parts.length > 1 || (parts[0] && parts[0].name !== t.table) ? parts.map((o) => `${o.name} ${fmt(o.bytes)}`).join(', ') : '';
      return [t.table, fmt(t.bytes), `${fmt((100 * t.bytes) / g.perMessage, 1)} %`, detail];
    });
  const listed = g.tables.filter((t) => t.bytes >= 0.005 * g.perMessage).reduce((sum, t) => sum + t.bytes, 0);
  rows.push(['everything else', fmt(g.perMessage - listed), `${fmt((100 * (g.perMessage - listed)) / g.perMessage, 1)} %`, g.free ? `free pages ${fmt(g.free)}` : '']);
  rows.push(['**whole file**', `**${fmt(g.perMessage)}**`, '100 %', `**${fmt(g.perMessage / g.rawBytes, 2)}x** the raw size`]);
  table(['table (with its indexes)', 'bytes per message', 'share', 'objects'], rows);
  if (g.note) console.log(`\n${g.note}.`);
}

export async function benchStorage(): Promise<Growth[]> {
  console.log(`\n## Storage: bytes on disk per stored message\n`);
  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}, RSA-2048 sign ${fmt(opensslRsa2048SignMicros())} µs (openssl speed)`);
  const c = new Corpus(20261126);
  console.log(`text: ${c.source}; database file + WAL after wal_checkpoint(TRUNCATE), growth over the run divided by its messages`);
  const runs: Growth[] = [];
  let received: Awaited<ReturnType<typeof receivedRun>> | null = null;
  if (RECEIVED > 0) {
    received = await receivedRun(c);
    runs.push(received.growth);
  }
  if (SENT > 0) runs.push(await sentRun(c, 'sent (one signed copy per email)', SENT, { tracked: false }));
  if (TRACKED > 0) runs.push(await sentRun(c, 'sent with open tracking (a signed copy per recipient, 2 recipients)', TRACKED, { tracked: true }));
  console.log('');
  table(
    ['run', 'messages', 'raw bytes', 'database bytes per message', 'vs raw', `goal ${GOAL_RATIO}x`, 'full-text index'],
    runs.map((g) => [g.run, fmt(g.messages), fmt(g.rawBytes), fmt(g.perMessage), `**${fmt(g.perMessage / g.rawBytes, 2)}x**`, g.perMessage / g.rawBytes <= GOAL_RATIO ? 'PASS' : 'MISS', `${fmt(g.fts)} (${fmt((100 * g.fts) / g.perMessage, 1)} %)`]),
  );
  for (const g of runs) {
    report(g);
    reportGoal({ goal: `storage, ${g.run} (bytes on disk per 10 KB message)`, measured: `${fmt(g.perMessage / g.rawBytes, 2)}x`, target: `≤ ${GOAL_RATIO}x`, pass: g.perMessage / g.rawBytes <= GOAL_RATIO });
  }
  if (received) {
    codecStudy(received.messages);
    ftsStudy(received.messages.map((m) => m.letter));
  }
  if (MERGE_STUDY > 0) mergeStudy(c);
  return runs;
}

// Run by scripts/bench/run.ts in a process of its own; also runnable alone: node --import tsx scripts/bench/storage.ts
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await benchStorage();
