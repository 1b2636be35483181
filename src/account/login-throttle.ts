// Slows, then refuses, repeated failed logins (DESIGN.md: per IP and per account; catalogue API-06).
// Counts live in memory for a sliding window: a restart forgets them, which only helps a patient attacker
// by one window.
import type { Clock } from '../clock.ts';

const WINDOW_MS = 15 * 60 * 1000;
const FREE_FAILURES = 3; // typos cost nothing
const STEP_DELAY_MS = 250;
const MAX_DELAY_MS = 2000;
const IP_LIMIT = 10;
const ACCOUNT_LIMIT = 30;

export type ThrottleVerdict = { refuse: true; retryAfterSeconds: number } | { refuse: false; delayMs: number };

export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(private readonly clock: Clock) {}

  check(ip: string, email: string): ThrottleVerdict {
    const byIp = this.recent(`ip:${ip}`);
    const byAccount = this.recent(`acct:${email}`);
    const blockedBy = byIp.length >= IP_LIMIT ? byIp : byAccount.length >= ACCOUNT_LIMIT ? byAccount : null;
    if (blockedBy) return { refuse: true, retryAfterSeconds: Math.max(1, Math.ceil((blockedBy[0] + WINDOW_MS - this.clock.now()) / 1000)) };
    const excess = Math.max(byIp.length, byAccount.length) - FREE_FAILURES;
    return { refuse: false, delayMs: excess > 0 ? Math.min(MAX_DELAY_MS, excess * STEP_DELAY_MS) : 0 };
  }

  fail(ip: string, email: string): void {
    for (const key of [`ip:${ip}`, `acct:${email}`]) this.failures.set(key, [...this.recent(key), this.clock.now()]);
    if (this.failures.size > 10_000) for (const key of this.failures.keys()) if (this.recent(key).length === 0) this.failures.delete(key);
  }

  succeed(ip: string): void {
    this.failures.delete(`ip:${ip}`);
  }

  private recent(key: string): number[] {
    const since = this.clock.now() - WINDOW_MS;
    return (this.failures.get(key) ?? []).filter((t) => t > since);
  }
}
