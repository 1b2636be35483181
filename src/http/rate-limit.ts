// Per-workspace request rate limit (DESIGN.md: MAILWRIGHT_RATE_LIMIT per second, burst twice that) as a
// token bucket, keyed by workspace for authenticated calls and by client address otherwise. Every
// limited response carries ratelimit-limit / -remaining / -reset; a refusal adds retry-after.
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
    if (allowed) b.tokens -= 1;
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
