// Per-workspace request rate limit (DESIGN.md: MAILWRIGHT_RATE_LIMIT per second, burst twice that) as a
// token bucket, keyed by workspace for authenticated calls and by client address otherwise. Every
// limited response carries ratelimit-limit / -remaining / -reset; a refusal adds retry-after. Nodes sharing
// PostgreSQL share the buckets (cluster/shared-rates.ts): each decides at once, and syncs what it took.
import type { Context, Middleware } from 'koa';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import type { Principal } from './auth.ts';

interface Bucket {
  tokens: number;
  at: number;
}

export interface Decision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
  retryAfterSeconds: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  /** Tokens taken per key since the last sync, kept only when the buckets are shared. */
  private taken: Map<string, number> | null = null;
  readonly burst: number;

  constructor(
    readonly perSecond: number,
    private readonly clock: Clock,
    burst = perSecond * 2,
  ) {
    this.burst = burst;
  }

  take(key: string): Decision {
    const now = this.clock.now();
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * this.perSecond);
    b.at = now;
    const allowed = b.tokens >= 1;
    if (allowed) {
      b.tokens -= 1;
      this.taken?.set(key, (this.taken.get(key) ?? 0) + 1);
    }
    this.buckets.set(key, b);
    if (this.buckets.size > 10_000) this.forgetFull(now);
    return {
      allowed,
      limit: this.perSecond,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil((this.burst - b.tokens) / this.perSecond),
      retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond)),
    };
  }

  /** From now on, counts what is taken for a sync with the other nodes (cluster/shared-rates.ts). */
  share(): this {
    this.taken ??= new Map();
    return this;
  }

  takenSince(): Map<string, number> {
    const taken = this.taken ?? new Map<string, number>();
    if (this.taken) this.taken = new Map();
    return taken;
  }

  settle(key: string, tokens: number, at: number): void {
    // What this node took while the sync was under way is not in the shared level yet.
    this.buckets.set(key, { tokens: tokens - (this.taken?.get(key) ?? 0), at });
  }

  giveBack(taken: Map<string, number>): void {
    for (const [key, n] of taken) this.taken?.set(key, (this.taken.get(key) ?? 0) + n);
  }

  // A full bucket holds no information, so dropping it keeps memory bounded under many client addresses.
  private forgetFull(now: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(key);
    }
  }
}

export function rateLimit(limiter: RateLimiter | null): Middleware {
  return async (ctx: Context, next) => {
    if (!limiter) return next();
    const principal = ctx.state.principal as Principal | null;
    const d = limiter.take(principal ? `ws:${principal.workspaceId}` : `ip:${ctx.ip}`);
    ctx.set('ratelimit-limit', String(d.limit));
    ctx.set('ratelimit-remaining', String(d.remaining));
    ctx.set('ratelimit-reset', String(d.resetSeconds));
    if (!d.allowed) {
      throw new ApiError(429, 'rate_limit_exceeded', `Too many requests: at most ${d.limit} per second (burst ${limiter.burst}); retry after ${d.retryAfterSeconds} s`, {
        headers: { 'retry-after': String(d.retryAfterSeconds) },
      });
    }
    await next();
  };
}
