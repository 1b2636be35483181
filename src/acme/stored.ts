// What ACME keeps in the store, shared by every node of the box: the account key (box_settings), the challenges
// of orders in flight, each name's key and chain, and each name's last outcome (errors and backoff). Queries
// only; certificates.ts decides when to run them.
import { all, run, value, type Query } from '../db/query.ts';
import { describe, type NameStatus } from './policy.ts';

export type { NameStatus };

export type AcmeStatus = Record<string, NameStatus>;

export interface StoredCertificate {
  name: string;
  key_pem: string;
  cert_pem: string;
  updated_at: number;
}

interface StatusRow {
  name: string;
  last_error: string | null;
  last_error_at: number | null;
  failures: number;
  retry_at: number | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const ms = (at: string | null) => (at === null ? null : Date.parse(at));

// --- challenges ---

/** Every challenge of the orders in flight: a handful (stale ones are dropped after a day). */
export const readChallenges = () => all<{ token: string; keyAuthorization: string }>('SELECT token, key_authorization AS keyAuthorization FROM acme_challenges LIMIT 10000');

export const putChallenge = (token: string, keyAuthorization: string, now: number) =>
  run('INSERT INTO acme_challenges (token, key_authorization, created_at) VALUES (?, ?, ?) ON CONFLICT (token) DO UPDATE SET key_authorization = excluded.key_authorization', token, keyAuthorization, now);

export const dropChallenge = (token: string) => run('DELETE FROM acme_challenges WHERE token = ?', token);

/** Challenges left by an order whose node stopped mid-way: no CA waits a day for one. */
export const dropStaleChallenges = (now: number) => run('DELETE FROM acme_challenges WHERE created_at < ?', now - 86_400_000);

// --- the account ---

export function* accountKey(make: () => Buffer): Query<Buffer> {
  const kept = yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'acme_account_key'");
  if (kept) return kept;
  yield* run("INSERT INTO box_settings (key, value) VALUES ('acme_account_key', ?) ON CONFLICT DO NOTHING", make());
  return (yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'acme_account_key'"))!;
}

// --- certificates ---

/** Each name's updated_at: what a node compares with what it holds, every few seconds. */
export const certificateVersions = () => all<{ name: string; updated_at: number }>('SELECT name, updated_at FROM acme_certificates');

export const readCertificates = (names: string[]) =>
  all<StoredCertificate>(`SELECT name, key_pem, cert_pem, updated_at FROM acme_certificates WHERE name IN (${names.map(() => '?').join(', ') || 'NULL'})`, ...names);

/** Keeps `name`'s new key and chain; `onlyIfNewer`: unless the store holds one that runs out later (an import). */
export function* putCertificate(name: string, key: Buffer | string, cert: Buffer | string, now: number, onlyIfNewer = false): Query<boolean> {
  const notAfter = Date.parse(describe(Buffer.from(cert)).expiresAt);
  const changed = yield* run(
    `INSERT INTO acme_certificates (name, key_pem, cert_pem, not_after, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET key_pem = excluded.key_pem, cert_pem = excluded.cert_pem, not_after = excluded.not_after, updated_at = excluded.updated_at
     ${onlyIfNewer ? 'WHERE acme_certificates.not_after < excluded.not_after' : ''}`,
    name, key.toString(), cert.toString(), notAfter, now,
  );
  return changed > 0;
}

/** Forgets a name: its certificate and its status. */
export function* dropName(name: string): Query<void> {
  yield* run('DELETE FROM acme_certificates WHERE name = ?', name);
  yield* run('DELETE FROM acme_status WHERE name = ?', name);
}

// --- status ---

export function* putStatus(s: Pick<NameStatus, 'name' | 'lastError' | 'failures' | 'retryAt'>, now: number): Query<void> {
  yield* run(
    `INSERT INTO acme_status (name, last_error, last_error_at, failures, retry_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET last_error = excluded.last_error, last_error_at = excluded.last_error_at, failures = excluded.failures, retry_at = excluded.retry_at, updated_at = excluded.updated_at`,
    s.name, s.lastError?.message ?? null, ms(s.lastError?.at ?? null), s.failures, ms(s.retryAt), now,
  );
}

/** Keeps `s` unless the name already has a status (an import of an earlier release's status.json). */
export const importStatus = (s: NameStatus, now: number) =>
  run(
    'INSERT INTO acme_status (name, last_error, last_error_at, failures, retry_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING',
    s.name, s.lastError?.message ?? null, ms(s.lastError?.at ?? null), s.failures ?? 0, ms(s.retryAt ?? null), now,
  );

/**
 * Every name's status as the box holds it: its certificate described from the chain in the store, and its last
 * error and backoff. What doctor and GET /doctor report on any node.
 */
export function* readStatus(): Query<AcmeStatus> {
  const certs = yield* all<{ name: string; cert_pem: string }>('SELECT name, cert_pem FROM acme_certificates');
  const rows = yield* all<StatusRow>('SELECT name, last_error, last_error_at, failures, retry_at FROM acme_status');
  const status: AcmeStatus = {};
  for (const r of rows) {
    status[r.name] = { name: r.name, certificate: null, lastError: r.last_error === null ? null : { message: r.last_error, at: iso(r.last_error_at)! }, failures: r.failures, retryAt: iso(r.retry_at) };
  }
  for (const c of certs) {
    let certificate: NameStatus['certificate'] = null;
    try {
      certificate = describe(Buffer.from(c.cert_pem));
    } catch {
      // Unreadable: reported as no certificate, and ordered again.
    }
    status[c.name] = { ...(status[c.name] ?? { name: c.name, lastError: null, failures: 0, retryAt: null }), certificate };
  }
  return status;
}
