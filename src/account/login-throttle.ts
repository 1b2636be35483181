// Slows, then refuses, repeated failed logins and SMTP AUTH attempts (DESIGN.md: per IP and per account;
// catalogue API-06, AUTH-12). An attempt is counted from the moment it starts, before it reads the stored
// failures, so 60 guesses sent at once see each other and are judged like 60 in a row; failures are kept in
// the store for the window, so `mailwright user unlock` can clear them and a restart does not. The address is
// the client's as http/client-address.ts finds it behind trusted_proxies.
import type { Clock } from '../clock.ts';
import { get, run, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import { CLEAN_RANK, SIGNED_IN_RANK } from './password-gate.ts';

const WINDOW_MS = 15 * 60 * 1000;
const FREE_FAILURES = 3; // typos cost nothing
const STEP_DELAY_MS = 250;
const MAX_DELAY_MS = 2000;
const IP_LIMIT = 10;
const ACCOUNT_LIMIT = 30;
// How long, and for how many addresses, a successful sign-in puts an address first in the hash queue.
const TRUSTED_MS = 24 * 60 * 60 * 1000;
const TRUSTED_ADDRESSES = 1000;

export type Scope = 'login' | 'smtp';

/** An attempt under way: exactly one of succeed(), fail() or abandon() ends it. */
export interface Attempt {
  refuse: false;
  /** How long to wait before checking the credential. */
  delayMs: number;
  /**
   * Its place in the password-hash queue (password-gate.ts), lower first: 0 for an address that signed in
   * lately and has not failed since, 1 for one without failures, 1 + its failures (and attempts in flight) else.
   */
  rank: number;
  succeed(): void;
  /**
   * Counts the failure; resolves once it is stored. The answer waits for it, so that the client's next attempt
   * finds it stored rather than in flight (one seen both ways, a read after the commit and before the release,
   * would count twice and refuse early).
   */
  fail(): Promise<void>;
  /** Ends it uncounted: the credential was never checked (the box was too busy, the client left). */
  abandon(): void;
}

export type ThrottleVerdict = { refuse: true; retryAfterSeconds: number } | Attempt;

export class LoginThrottle {
  /** Attempts started and not yet ended, by `ip:` and `acct:` key. */
  private readonly inFlight = new Map<string, number>();
  /** Addresses that signed in, with when: oldest first, at most TRUSTED_ADDRESSES, kept in memory only. */
  private readonly signedInFrom = new Map<string, number>();

  constructor(
    private readonly store: Pick<Store, 'read' | 'write'>,
    private readonly clock: Clock,
    private readonly scope: Scope,
  ) {}

  /**
   * Reserves an attempt from `ip` at `account`, or refuses it. An address is refused after IP_LIMIT failures;
   * an account after ACCOUNT_LIMIT only for the addresses that failed against that account, so guessing from
   * elsewhere (or at other accounts) cannot lock the owner out: a clean address is slowed at most.
   */
  async begin(ip: string, account: string): Promise<ThrottleVerdict> {
    const since = this.clock.now() - WINDOW_MS;
    const pair = `pair:${ip}\u0000${account}`;
    const keys = [`ip:${ip}`, `acct:${account}`, pair];
    // Counted in flight before the read: attempts that start meanwhile count this one, as it counts those that
    // started before it (one that ends meanwhile may count twice, never not at all).
    const [ipBefore, accountBefore, pairBefore] = keys.map((key) => this.pending(key));
    for (const key of keys) this.inFlight.set(key, this.pending(key) + 1);
    let ended = false;
    // Released once its end is written, so an attempt that starts meanwhile sees it in flight or stored.
    const end = (write?: () => Promise<unknown>): Promise<void> | null => {
      if (ended) return null;
      ended = true;
      const release = () => {
        for (const key of keys) {
          const left = this.pending(key) - 1;
          if (left > 0) this.inFlight.set(key, left);
          else this.inFlight.delete(key);
        }
      };
      if (write) return write().finally(release).then(() => {});
      release();
      return Promise.resolve();
    };
    let counts: { byIp: Failures; byAccount: Failures; here: Failures };
    try {
      counts = await this.store.read(
        (function* (scope: Scope) {
          return {
            byIp: yield* failuresSince(scope, 'ip = ?', [ip], since),
            byAccount: yield* failuresSince(scope, 'account = ?', [account], since),
            here: yield* failuresSince(scope, 'ip = ? AND account = ?', [ip, account], since),
          };
        })(this.scope),
      );
    } catch (err) {
      end();
      throw err;
    }
    const { byIp, byAccount } = counts;
    const ipCount = byIp.count + ipBefore;
    const accountCount = byAccount.count + accountBefore;
    const failedHere = counts.here.count + pairBefore > 0;
    const blockedSince = ipCount >= IP_LIMIT ? byIp.oldest : accountCount >= ACCOUNT_LIMIT && failedHere ? byAccount.oldest : undefined;
    if (blockedSince !== undefined) {
      end();
      return this.refusal(blockedSince);
    }
    const excess = Math.max(ipCount, accountCount) - FREE_FAILURES;
    const trusted = (this.signedInFrom.get(ip) ?? -Infinity) > this.clock.now() - TRUSTED_MS;
    const rank = ipCount > 0 ? CLEAN_RANK + ipCount : trusted ? SIGNED_IN_RANK : CLEAN_RANK;
    return {
      refuse: false,
      delayMs: excess > 0 ? Math.min(MAX_DELAY_MS, excess * STEP_DELAY_MS) : 0,
      rank,
      succeed: () => {
        // A success clears the address's record (API-06); the account's failures from elsewhere stay.
        if (!end(() => this.record(clearFailures(this.scope, ip)))) return;
        this.signedInFrom.delete(ip);
        this.signedInFrom.set(ip, this.clock.now());
        if (this.signedInFrom.size > TRUSTED_ADDRESSES) this.signedInFrom.delete(this.signedInFrom.keys().next().value!);
      },
      fail: () => end(() => this.record(addFailure(this.scope, ip, account, this.clock.now()))) ?? Promise.resolve(),
      abandon: () => void end(),
    };
  }

  /**
   * The refusal of an address past its failure limit, whatever the account: the check that needs no request
   * body, so a refused guesser's body is never read (catalogue API-21). begin() makes it again, with the rest.
   */
  async refusesAddress(ip: string): Promise<{ refuse: true; retryAfterSeconds: number } | null> {
    const byIp = await this.store.read(failuresSince(this.scope, 'ip = ?', [ip], this.clock.now() - WINDOW_MS));
    return byIp.count + this.pending(`ip:${ip}`) >= IP_LIMIT ? this.refusal(byIp.oldest) : null;
  }

  private refusal(blockedSince: number | null): { refuse: true; retryAfterSeconds: number } {
    // All counted attempts still in flight: they end within seconds, not with the window.
    const retryAfterSeconds = blockedSince === null ? 1 : Math.max(1, Math.ceil((blockedSince + WINDOW_MS - this.clock.now()) / 1000));
    return { refuse: true, retryAfterSeconds };
  }

  private pending(key: string): number {
    return this.inFlight.get(key) ?? 0;
  }

  /** An attempt's end, written; one that fails (a full disk) loses that count, never the client's answer. */
  private record(q: () => Query<number>): Promise<unknown> {
    return this.store.write(q).catch(() => {});
  }
}

type Failures = { count: number; oldest: number | null };

type Condition = 'ip = ?' | 'account = ?' | 'ip = ? AND account = ?';

function* failuresSince(scope: Scope, where: Condition, values: string[], since: number): Query<Failures> {
  // `where` is one of three fixed conditions, never text from a client.
  return (yield* get<Failures>(`SELECT count(*) AS count, min(at) AS oldest FROM auth_failures WHERE scope = ? AND ${where} AND at > ?`, scope, ...values, since))!;
}

const clearFailures = (scope: Scope, ip: string) => () => run('DELETE FROM auth_failures WHERE scope = ? AND ip = ?', scope, ip);

const addFailure = (scope: Scope, ip: string, account: string, at: number) => () => run('INSERT INTO auth_failures (scope, ip, account, at) VALUES (?, ?, ?, ?)', scope, ip, account, at);

/** Forgets failures older than the window; run periodically. */
export const purgeAuthFailures = (clock: Clock) => run('DELETE FROM auth_failures WHERE at <= ?', clock.now() - WINDOW_MS);

/**
 * `mailwright user unlock`: clears whatever stops that user from signing in, from any address: the failures
 * against the account, and every address's failed logins (the user's own address is not known, and behind a
 * misconfigured proxy it is everyone's). Returns how many failures were forgotten.
 */
export const unlockLogin = (): Query<number> => run("DELETE FROM auth_failures WHERE scope = 'login'");
