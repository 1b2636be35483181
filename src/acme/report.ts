// What `doctor` and the Overview's health checks (GET /doctor) say about ACME, from the status the store holds
// (doctor runs beside serve, in another process; on several nodes any of them may have ordered): each name's
// certificate (names, issuer, expiry, renewal) and the last error with when the next attempt comes.
import type { Config } from '../config/config.ts';
import type { Query } from '../db/query.ts';
import { readStatus, type NameStatus } from './stored.ts';

export interface AcmeCheck {
  name: string;
  ok: boolean;
  /** Whether a certificate is held for the name (it is then the one served, not the fallback). */
  issued: boolean;
  /** Not a failure yet: the first order has not been made (serve orders at start). */
  waiting?: boolean;
  text: string;
  fix?: string;
}

const DAY = 86_400_000;
// Renewal starts at a third of the lifetime left (30 days of Let's Encrypt's 90): under 14, retries are failing.
const WARN_DAYS = 14;
const day = (iso: string) => iso.slice(0, 10);

export function* acmeChecks(config: Pick<Config, 'acme' | 'hostname' | 'acmeHttpPort'>, now: number): Query<AcmeCheck[]> {
  if (!config.acme) return [];
  const status = yield* readStatus();
  const names = [config.hostname, ...Object.keys(status).filter((n) => n !== config.hostname).sort()];
  return names.map((name) => checkName(config, name, status[name], now));
}

function checkName(config: Pick<Config, 'acmeHttpPort'>, name: string, s: NameStatus | undefined, now: number): AcmeCheck {
  const fix = `check that ${name} resolves to this box and that port ${config.acmeHttpPort || 80} (acme_http_port) is reachable from the Internet; the box retries by itself`;
  const failed = s?.lastError ? `; the last attempt failed ${s.lastError.at}: ${s.lastError.message} (next attempt ${s.retryAt ?? 'soon'})` : '';
  if (!s?.certificate) {
    return { name, ok: false, issued: false, waiting: !failed, text: `ACME: no certificate for ${name} yet${failed || ' (serve orders it at start)'}`, fix: failed ? fix : undefined };
  }
  const c = s.certificate;
  const left = Math.floor((Date.parse(c.expiresAt) - now) / DAY);
  const about = `ACME certificate for ${c.names.join(', ')} by ${c.issuer}, expires ${day(c.expiresAt)} (${left} days), renewed from ${day(c.renewAt)}`;
  if (left < 0) return { name, ok: false, issued: true, text: `ACME: the certificate for ${name} expired on ${c.expiresAt}${failed}`, fix };
  // A failed renewal is shown as a problem at once: the retries need the same fix, and 30 days go quickly.
  if (failed) return { name, ok: false, issued: true, text: `${about}${failed}`, fix };
  if (left < WARN_DAYS) return { name, ok: false, issued: true, text: `${about}: renewal is overdue`, fix };
  return { name, ok: true, issued: true, text: about };
}
