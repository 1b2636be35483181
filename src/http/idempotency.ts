// Idempotency-Key on HTTP send endpoints (DESIGN.md): the Koa side of db/idempotency.ts. A replay answers with
// the stored response and `Idempotent-Replayed: true`; a handler that changes state records its answer in its
// own transaction through the claim (claimOf); one that does not is recorded here after a 2xx.
import type { Context, Middleware } from 'koa';
import type { Idempotency, IdempotencyClaim } from '../db/idempotency.ts';
import { principalOf } from './auth.ts';

/** Route middleware for `endpoint` (e.g. "POST /emails"); runs after the auth guard. */
/** `endpoint` scopes the keys: a fixed name, or one made from the request (a resource's own id, say). */
export function idempotent(idempotency: Idempotency, endpoint: string | ((ctx: Context) => string)): Middleware {
  return async (ctx, next) => {
    if (ctx.headers['idempotency-key'] === undefined) return next();
    const scope = typeof endpoint === 'string' ? endpoint : endpoint(ctx);
    const started = await idempotency.begin(principalOf(ctx).workspaceId, scope, ctx.get('Idempotency-Key'), ctx.request.body);
    if ('replay' in started) {
      ctx.status = started.replay.status;
      ctx.body = started.replay.body;
      ctx.set('Idempotent-Replayed', 'true');
      return;
    }
    ctx.state.idempotency = started.claim;
    try {
      await next();
      // Handlers without state of their own may leave recording to us; 4xx and 5xx are not kept, so a
      // corrected retry with the same key works.
      if (!started.completed() && ctx.status >= 200 && ctx.status < 300) await started.claim.complete(ctx.status, ctx.body);
    } finally {
      await started.release();
    }
  };
}

export const claimOf = (ctx: Context) => ctx.state.idempotency as IdempotencyClaim | undefined;
