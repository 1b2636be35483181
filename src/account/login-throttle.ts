// Slows, then refuses, repeated failed logins and SMTP AUTH attempts (DESIGN.md: per IP and per account;
// catalogue API-06, AUTH-12). An attempt is counted from the moment it starts, before any await, so 60
// guesses sent at once are judged like 60 in a row; failures are kept in the database for the window, so
// `mailwright user unlock` can clear them and a restart does not.
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';

const WINDOW_MS = 15 * 60 * 1000;
const FREE_FAILURES = 3; // typos cost nothing
const STEP_DELAY_MS = 250;
const MAX_DELAY_MS = 2000;
const IP_LIMIT = 10;
const ACCOUNT_LIMIT = 30;

export type Scope = 'login' | 'smtp';

/** An attempt under way: exactly one of succeed() or fail() ends it. */
export interface Attempt {
  refuse: false;
  /** How long to wait before checking the credential. */
  delayMs: number;
  succeed(): void;
  fail(): void;
}

export type ThrottleVerdict = { refuse: true; retryAfterSeconds: number } | Attempt;

export class LoginThrottle {
  /** Attempts started and not yet ended, by `ip:` and `acct:` key. */
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly scope: Scope,
  ) {}

  /**
   * Reserves an attempt from `ip` at `account`, or refuses it. An address is refused after IP_LIMIT failures;
   * an account after ACCOUNT_LIMIT only for addresses that have failed too, so guessing from elsewhere cannot
   * lock the owner out: a clean address is slowed at most.
   */
  begin(ip: string, account: string): ThrottleVerdict {
    const since = this.clock.now() - WINDOW_MS;
    const byIp = this.failures('ip', ip, since);
    const byAccount = this.failures('account', account, since);
    const ipCount = byIp.count + this.pending(`ip:${ip}`);
    const accountCount = byAccount.count + this.pending(`acct:${account}`);
    const blockedSince = ipCount >= IP_LIMIT ? byIp.oldest : accountCount >= ACCOUNT_LIMIT && ipCount > 0 ? byAccount.oldest : undefined;
    if (blockedSince !== undefined) {
      // All counted attempts still in flight: they end within seconds, not with the window.
      const retryAfterSeconds = blockedSince === null ? 1 : Math.max(1, Math.ceil((blockedSince + WINDOW_MS - this.clock.now()) / 1000));
      return { refuse: true, retryAfterSeconds };
    }
    const excess = Math.max(ipCount, accountCount) - FREE_FAILURES;
    const keys = [`ip:${ip}`, `acct:${account}`];
    for (const key of keys) this.inFlight.set(key, this.pending(key) + 1);
    let ended = false;
    const end = () => {
      if (ended) return false;
      ended = true;
      for (const key of keys) {
        const left = this.pending(key) - 1;
        if (left > 0) this.inFlight.set(key, left);
        else this.inFlight.delete(key);
      }
      return true;
    };
    return {
      refuse: false,
      delayMs: excess > 0 ? Math.min(MAX_DELAY_MS, excess * STEP_DELAY_MS) : 0,
      succeed: () => {
        // A success clears the address's record (API-06); the account's failures from elsewhere stay.
        if (end()) this.db.prepare('DELETE FROM auth_failures WHERE scope = ? AND ip = ?').run(this.scope, ip);
      },
      fail: () => {
        if (end()) this.db.prepare('INSERT INTO auth_failures (scope, ip, account, at) VALUES (?, ?, ?, ?)').run(this.scope, ip, account, this.clock.now());
      },
    };
  }

  private pending(key: string): number {
    return this.inFlight.get(key) ?? 0;
  }

  private failures(by: 'ip' | 'account', value: string, since: number): { count: number; oldest: number | null } {
    // `by` picks one of two fixed column names, never text from a client.
    const row = this.db.prepare(`SELECT count(*) AS count, min(at) AS oldest FROM auth_failures WHERE scope = ? AND ${by} = ? AND at > ?`).get(this.scope, value, since) as {
      count: number;
      oldest: number | null;
    };
    return row;
  }
}

/** Forgets failures older than the window; run periodically. */
export const purgeAuthFailures = (db: Db, clock: Clock) => db.prepare('DELETE FROM auth_failures WHERE at <= ?').run(clock.now() - WINDOW_MS).changes;

/**
 * `mailwright user unlock`: clears a user's failed logins, both against the account and from every address
 * that failed against it. Returns how many failures were forgotten.
 */
export function unlockLogin(db: Db, email: string): number {
  const account = email.trim().toLowerCase();
  return db
    .prepare(`DELETE FROM auth_failures WHERE scope = 'login' AND (account = ? OR ip IN (SELECT ip FROM auth_failures WHERE scope = 'login' AND account = ?))`)
    .run(account, account).changes;
}
