// When a certificate is renewed and how long a failure waits: pure functions of the certificate and the clock.
// Two thirds of the lifetime leaves a 90-day certificate a month for retries, as certbot and Caddy do; the
// backoff keeps a box whose DNS is wrong well inside Let's Encrypt's failed-validation limit (5 per hour).
import { X509Certificate } from 'node:crypto';

const HOUR = 3_600_000;
export const FIRST_BACKOFF_MS = HOUR;
export const MAX_BACKOFF_MS = 24 * HOUR;

/** What the last attempt for one name left: the certificate in use, and the last error if the attempt failed. */
export interface NameStatus {
  name: string;
  /** The certificate in use: what it names, who issued it, when it runs out and when it is renewed. */
  certificate: { names: string[]; issuer: string; serial: string; notBefore: string; expiresAt: string; renewAt: string } | null;
  lastError: { message: string; at: string } | null;
  /** Failures in a row since the last success (the backoff doubles with each). */
  failures: number;
  /** When the next attempt may be made after a failure; null when none failed. */
  retryAt: string | null;
}

/** Two thirds of the way from notBefore to notAfter. */
export const renewAt = (notBefore: number, notAfter: number) => notBefore + Math.floor(((notAfter - notBefore) * 2) / 3);

/** 1 h after the first failure in a row, doubling with each, at most a day. */
export const backoffMs = (failures: number) => Math.min(FIRST_BACKOFF_MS * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);

/** What the status and doctor say of a chain: its leaf's names, issuer, serial, validity and renewal time. */
export function describe(chain: Buffer): NonNullable<NameStatus['certificate']> {
  const leaf = new X509Certificate(chain);
  const notBefore = Date.parse(leaf.validFrom);
  const notAfter = Date.parse(leaf.validTo);
  const names = (leaf.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
  const issuer = /(?:^|\n)CN=([^\n]+)/.exec(leaf.issuer)?.[1] ?? leaf.issuer.replace(/\n/g, ', ');
  return { names, issuer, serial: leaf.serialNumber, notBefore: new Date(notBefore).toISOString(), expiresAt: new Date(notAfter).toISOString(), renewAt: new Date(renewAt(notBefore, notAfter)).toISOString() };
}

/** Whether `name` needs an order now: no certificate, or past its renewal time, and not waiting out a backoff. */
export function due(status: NameStatus | undefined, now: number): boolean {
  if (status?.retryAt && now < Date.parse(status.retryAt)) return false;
  return !status?.certificate || now >= Date.parse(status.certificate.renewAt);
}
