// What `mailwright doctor` checks of the box itself beyond DNS: that ports 25 and 587 greet on the
// box's public addresses, the TLS certificate's validity and expiry, recipients stuck in the queue, free
// space, the database's size and its growth, and webhook endpoints the box disabled. Each problem with the
// exact fix. Read-only.
import { X509Certificate } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { networkInterfaces } from 'node:os';
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { Db } from '../db/open.ts';
import { databasePath } from '../db/open.ts';
import { databaseBytes, sizeSamples } from '../db/size.ts';
import { freePageBytes, givesPagesBack } from '../db/free-pages.ts';
import { all, type Query } from '../db/query.ts';
import { oldestDeferred, queueCounts } from '../send/queue-stats.ts';

export interface Check {
  ok: boolean;
  /** Could not be judged either way (shown as a note, not a problem). */
  skipped?: boolean;
  text: string;
  fix?: string;
}

const DAY = 24 * 60 * 60_000;
/** Renew well before the end: ACME clients renew at 30 days left, so 14 means renewal is failing. */
const CERT_WARN_DAYS = 14;
/** A recipient deferred this long is more than a receiver's greylisting or a short outage. */
const STUCK_AFTER_MS = DAY;

export function certificateCheck(config: Config, now: number): Check {
  const file = config.tlsCert ?? join(config.dataDir, 'tls', 'self-signed.crt');
  if (!existsSync(file)) return { ok: true, text: 'TLS: no certificate yet (serve makes a self-signed one at its first start)' };
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(file));
  } catch (err) {
    return { ok: false, text: `TLS: ${file} is not a PEM certificate (${(err as Error).message})`, fix: 'point tls_cert at the certificate file (PEM, the full chain)' };
  }
  const left = Math.floor((Date.parse(cert.validTo) - now) / DAY);
  const self = config.tlsCert ? '' : ' (self-signed: fine for STARTTLS between servers; set tls_cert and tls_key for a CA-signed one)';
  if (left < 0) return { ok: false, text: `TLS: the certificate ${file} expired on ${cert.validTo}`, fix: config.tlsCert ? 'renew it, then systemctl reload mailwright' : `remove ${file} and its key and restart: serve makes a new one` };
  if (!cert.checkHost(config.hostname)) return { ok: false, text: `TLS: the certificate names ${cert.subject.replace(/\n/g, ', ')}, not ${config.hostname}`, fix: `use a certificate for ${config.hostname}` };
  if (left < CERT_WARN_DAYS) return { ok: false, text: `TLS: the certificate expires in ${left} days (${cert.validTo})`, fix: 'renew it (is the ACME timer running?), then systemctl reload mailwright' };
  return { ok: true, text: `TLS certificate for ${config.hostname} valid for ${left} more days${self}` };
}

export function* queueCheck(now: number): Query<Check> {
  const c = yield* queueCounts();
  const waiting = c.queued + c.deferred;
  const oldest = yield* oldestDeferred();
  const since = oldest ? (oldest.first_deferred_at ?? oldest.created_at) : now;
  if (!oldest || now - since < STUCK_AFTER_MS) return { ok: true, text: `queue: ${waiting} recipient${waiting === 1 ? '' : 's'} waiting, none deferred for more than a day` };
  const hours = Math.floor((now - since) / 3_600_000);
  return {
    ok: false,
    text: `queue: ${oldest.recipient} (${oldest.email_id}) deferred for ${hours} h; last answer: ${oldest.last_response ?? 'none'}`,
    fix: 'read the answer: a block list, a rejected address or a refused port 25 (set relay_url) each say so; `mailwright queue flush` retries now',
  };
}

/** Bytes free under `dir` for an unprivileged writer (what db/free-space.ts watches). */
export function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return Number(s.bavail) * Number(s.bsize);
}

export function storageCheck(config: Config, db: Db): Check {
  const dbBytes = databaseBytes(databasePath(config.dataDir));
  const free = freeBytes(config.dataDir);
  const mb = (n: number) => `${Math.round(n / 1024 / 1024).toLocaleString('en')} MiB`;
  const text = `storage: the database is ${mb(dbBytes)}, ${mb(free)} free under ${config.dataDir}`;
  // A database created before it gave free pages back (db/free-pages.ts) keeps what deleted mail left.
  const keptBytes = givesPagesBack(db) ? 0 : freePageBytes(db);
  const kept =
    keptBytes >= KEPT_PAGES_NOTED
      ? `; ${mb(keptBytes)} of the database is free pages it keeps for new mail, as databases made before the box gave them back to the disk do ('mailwright backup', then 'mailwright restore' of that file with serve stopped, converts it)`
      : '';
  const margin = config.minFreeSpaceMb * 1024 * 1024;
  if (margin && free < margin * 2) {
    return { ok: false, text: `${text}: ${free < margin ? 'below' : 'near'} min_free_space_mb (${config.minFreeSpaceMb}), where new mail is refused${kept}`, fix: 'free space or grow the disk; retention_mail_days and retention_raw_days bound the database' };
  }
  return { ok: true, text: text + kept };
}

/** Free pages a database keeps are worth a word from this much on. */
const KEPT_PAGES_NOTED = 16 * 1024 * 1024;

export function* webhookChecks(): Query<Check[]> {
  const off = yield* all<{ id: string; url: string; disabled_reason: string }>("SELECT id, url, disabled_reason FROM webhooks WHERE enabled = 0 AND disabled_reason IS NOT NULL AND disabled_reason <> 'disabled by the owner'");
  return off.map((w) => ({ ok: false, text: `webhook ${w.url} (${w.id}) was disabled: ${w.disabled_reason}`, fix: `fix the endpoint, then PATCH /api/v1/webhooks/${w.id} {"enabled": true}; its pending deliveries go out then` }));
}

/** Growth is the average over the newest samples: one a day, so 7 days of growth. */
const GROWTH_SAMPLES = 8;
/** Fewer days than this before the margin is reached leaves too little time to set retention or grow the disk. */
const RUNWAY_WARN_DAYS = 30;
const MiB = 1024 * 1024;

const bytes = (n: number) => (n >= 1024 * MiB ? `${(n / 1024 / MiB).toFixed(1)} GiB` : n >= MiB ? `${(n / MiB).toFixed(1)} MiB` : `${Math.round(n / 1024)} KiB`);

/**
 * The database's growth a day, from the daily size samples the nightly retention job records (db/size.ts),
 * and at that rate the days until free space under the data directory falls to min_free_space_mb (or, with
 * no margin, the disk is full). `free` is given by tests; doctor measures it.
 */
export function* growthCheck(config: Config, free = freeBytes(config.dataDir)): Query<Check> {
  const samples = yield* sizeSamples(GROWTH_SAMPLES);
  const dayOf = (day: string) => Date.parse(`${day}T00:00:00Z`) / DAY;
  const newest = samples[0];
  const oldest = samples.at(-1);
  const days = newest && oldest ? dayOf(newest.day) - dayOf(oldest.day) : 0;
  if (!newest || !oldest || days < 1) return { ok: true, text: 'storage growth: measured from tomorrow (the nightly job records the database size once a day)' };
  const perDay = (newest.bytes - oldest.bytes) / days;
  const over = `over the last ${days} day${days === 1 ? '' : 's'}`;
  if (perDay <= 0) return { ok: true, text: `storage growth: the database did not grow ${over} (${bytes(newest.bytes)} on ${newest.day})` };
  const grows = `storage growth: ${bytes(perDay)} a day ${over}`;
  const margin = config.minFreeSpaceMb * MiB;
  // Already at the margin: the storage line says so, with its fix.
  if (free <= margin) return { ok: true, text: grows };
  const left = Math.floor((free - margin) / perDay);
  const reached = margin ? `free space under ${config.dataDir} reaches min_free_space_mb (${config.minFreeSpaceMb}), where new mail is refused,` : `the disk under ${config.dataDir} is full`;
  const text = `${grows}: at that rate ${reached} in about ${left.toLocaleString('en')} day${left === 1 ? '' : 's'}`;
  if (left >= RUNWAY_WARN_DAYS) return { ok: true, text };
  return {
    ok: false,
    text,
    fix: 'bound the database: set retention_raw_days (drops the raw bytes of older mail) and retention_mail_days (deletes older mail whole), which the nightly job applies; or grow the disk',
  };
}

/** serve looks up the client's PTR (up to 1.5 s) before it greets; a few seconds more is a silent port. */
const GREETING_WAIT_MS = 5_000;

type Greeting = { ok: true } | { ok: false; why: 'refused' | 'timeout' | 'no-220' | 'unreachable'; text: string };

/**
 * Connects to host:port and reads the first line: an SMTP server greets with 220 (RFC 5321 4.3.1). With `tls`
 * (an smtps:// relay) the greeting comes after the handshake, whatever the certificate: this asks only
 * whether something answers.
 */
export function smtpGreeting(host: string, port: number, waitMs = GREETING_WAIT_MS, opts: { tls?: boolean } = {}): Promise<Greeting> {
  return new Promise((resolve) => {
    let connected = false;
    let settled = false;
    let received = '';
    const socket: Socket = opts.tls ? connectTls({ host, port, rejectUnauthorized: false }) : connect({ host, port });
    const done = (result: Greeting) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (result.ok) {
        // Leave politely, and never let the socket hold the CLI open.
        socket.end('QUIT\r\n');
        setTimeout(() => socket.destroy(), 2_000).unref();
        socket.unref();
      } else socket.destroy();
      resolve(result);
    };
    const seconds = `${waitMs / 1000} s`;
    const timer = setTimeout(
      () => done(connected ? { ok: false, why: 'no-220', text: `connected, but no greeting within ${seconds}` } : { ok: false, why: 'timeout', text: `timed out: no answer to the connection within ${seconds}` }),
      waitMs,
    );
    socket.once('connect', () => (connected = true));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\n');
      if (end < 0 && received.length < 512) return;
      const line = received.slice(0, end < 0 ? 512 : end).trim();
      done(/^220(?:[ -]|$)/.test(line) ? { ok: true } : { ok: false, why: 'no-220', text: `answered ${JSON.stringify(line.slice(0, 120))} instead of a 220 greeting` });
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') done({ ok: false, why: 'refused', text: 'connection refused' });
      else if (err.code === 'ETIMEDOUT') done({ ok: false, why: 'timeout', text: 'timed out: no answer to the connection' });
      else if (connected) done({ ok: false, why: 'no-220', text: `the connection broke before a greeting (${err.code ?? err.message})` });
      else done({ ok: false, why: 'unreachable', text: `could not connect (${err.code ?? err.message})` });
    });
    socket.once('close', () => done(connected ? { ok: false, why: 'no-220', text: 'closed the connection without a greeting' } : { ok: false, why: 'unreachable', text: 'could not connect' }));
  });
}

/**
 * Ports 25 and (unless off) 587 on each public address of the box's host name, as a sender or a mail client
 * would reach them: each must answer with a 220 greeting. This is the best a program on the box can do, and
 * what it proves depends on the address. Where the address is on an interface of this box (most VPSs), the
 * kernel delivers the connection over loopback: it proves that serve listens on that address (not only on
 * 127.0.0.1) and that nothing else holds the port, but neither the provider's firewall nor a host firewall
 * that accepts loopback traffic (ufw's default) is crossed. Where it is not (1:1 NAT, as on EC2 or GCE), the
 * connection leaves the box and comes back through the provider's NAT and security group, as a remote
 * client's would (a NAT that does not loop it back makes it time out). `ports` are those serve listens on
 * locally: a port that is not was reported already.
 */
export async function reachabilityChecks(config: Config, addresses: string[], ports: Array<{ name: string; port: number }>): Promise<Check[]> {
  const local = new Set(Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address)));
  const probes = addresses.flatMap((ip) => ports.map(({ name, port }) => ({ ip, name, port })));
  const results = await Promise.all(probes.map((p) => smtpGreeting(p.ip, p.port)));
  return probes.map(({ ip, name, port }, i): Check => {
    const result = results[i];
    const label = `port ${port} (${name}) on ${ip}`;
    if (result.ok) {
      const how = local.has(ip) ? 'tried from this box, which crosses no provider firewall; from another host: nc -v' : 'tried from this box through the provider\'s NAT; from another host: nc -v';
      return { ok: true, text: `${label} answers with a 220 greeting (${how} ${ip} ${port})` };
    }
    const wildcard = ['0.0.0.0', '::', ''].includes(config.smtpHost);
    const listen = wildcard || config.smtpHost === ip ? '' : `serve listens on ${config.smtpHost} only: set smtp_host = "0.0.0.0" (or "${ip}") and restart it; `;
    const open = `${listen ? 'and ' : ''}open the port: ufw allow ${port}/tcp, and allow TCP ${port} inbound in the provider's firewall or security group`;
    const elsewhere = local.has(ip) ? '' : `; check too that ${ip} is this box's address (behind a NAT that does not loop connections back, test from another host: nc -v ${ip} ${port})`;
    const fix =
      result.why === 'no-220'
        ? `something other than serve may hold the port (another MTA such as Postfix or Exim: systemctl disable --now postfix), or the A record of ${config.hostname} names another machine`
        : result.why === 'unreachable'
          ? `check that ${ip} is this box's address and that the box has a route to it (an AAAA record on a box without IPv6?)`
          : `${listen}${open}${elsewhere}`;
    return { ok: false, text: `${label}: ${result.text}`, fix };
  });
}
