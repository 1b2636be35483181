// Time, passed in rather than read from the global, so tests can move it (session expiry, idempotency
// retention, retry backoff) without sleeping.

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

// DESIGN.md: every timestamp is ISO 8601 UTC with milliseconds.
export const iso = (ms: number) => new Date(ms).toISOString();

export const isoOrNull = (ms: number | null | undefined) => (ms == null ? null : iso(ms));
