// What `mailwright doctor` checks of the box itself beyond DNS (issue 21): the TLS certificate's validity and
// expiry, recipients stuck in the queue, free space and the database's size, and webhook endpoints the box
// disabled. Each problem with the exact fix. Read-only.
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, statfsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config.ts';
import type { Db } from './db/open.ts';
import { databasePath } from './db/open.ts';
import { oldestDeferred, queueCounts } from './send/queue-stats.ts';

export interface Check {
  ok: boolean;
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

export function queueCheck(db: Db, now: number): Check {
  const c = queueCounts(db);
  const waiting = c.queued + c.deferred;
  const oldest = oldestDeferred(db);
  const since = oldest ? (oldest.first_deferred_at ?? oldest.created_at) : now;
  if (!oldest || now - since < STUCK_AFTER_MS) return { ok: true, text: `queue: ${waiting} recipient${waiting === 1 ? '' : 's'} waiting, none deferred for more than a day` };
  const hours = Math.floor((now - since) / 3_600_000);
  return {
    ok: false,
    text: `queue: ${oldest.recipient} (${oldest.email_id}) deferred for ${hours} h; last answer: ${oldest.last_response ?? 'none'}`,
    fix: 'read the answer: a block list, a rejected address or a refused port 25 (set relay_url) each say so; `mailwright queue flush` retries now',
  };
}

export function storageCheck(config: Config): Check {
  const db = databasePath(config.dataDir);
  const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);
  const dbBytes = size(db) + size(`${db}-wal`);
  const s = statfsSync(config.dataDir);
  const free = Number(s.bavail) * Number(s.bsize);
  const mb = (n: number) => `${Math.round(n / 1024 / 1024).toLocaleString('en')} MiB`;
  const text = `storage: the database is ${mb(dbBytes)}, ${mb(free)} free under ${config.dataDir}`;
  const margin = config.minFreeSpaceMb * 1024 * 1024;
  if (margin && free < margin * 2) {
    return { ok: false, text: `${text}: ${free < margin ? 'below' : 'near'} min_free_space_mb (${config.minFreeSpaceMb}), where new mail is refused`, fix: 'free space or grow the disk; retention_mail_days and retention_raw_days bound the database' };
  }
  return { ok: true, text };
}

export function webhookChecks(db: Db): Check[] {
  const off = db.prepare("SELECT id, url, disabled_reason FROM webhooks WHERE enabled = 0 AND disabled_reason IS NOT NULL AND disabled_reason <> 'disabled by the owner'").all() as Array<{ id: string; url: string; disabled_reason: string }>;
  return off.map((w) => ({ ok: false, text: `webhook ${w.url} (${w.id}) was disabled: ${w.disabled_reason}`, fix: `fix the endpoint, then PATCH /api/v1/webhooks/${w.id} {"enabled": true}; its pending deliveries go out then` }));
}
