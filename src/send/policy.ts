// Retry policy (RFC 5321 4.5.4.1: retry with growing intervals, give up after 4-5 days, configurable):
// the delay before each next attempt comes from MAILWRIGHT_RETRY_SCHEDULE (the last entry repeats) and a
// recipient still failing after MAILWRIGHT_QUEUE_LIFETIME is given up.

export interface RetryPolicy {
  schedule: number[];
  lifetimeMs: number;
}

/** Delay before the next attempt, after `attempts` attempts (1 or more) have failed temporarily. */
export const retryDelay = (policy: RetryPolicy, attempts: number) => policy.schedule[Math.min(Math.max(attempts, 1), policy.schedule.length) - 1];

export const expired = (policy: RetryPolicy, queuedAt: number, now: number) => now - queuedAt >= policy.lifetimeMs;
