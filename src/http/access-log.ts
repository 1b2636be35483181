// The access log: one line per HTTP request once it is answered, with its request id (set before this runs,
// server.ts), method, route pattern, status, duration and who called. API requests are logged at info; health
// probes, dashboard files and pages opened from mail at debug, where they do not drown the API in journald.
import type { Middleware } from 'koa';
import type { Log } from '../log.ts';
import type { Principal } from './auth.ts';

export function accessLog(log: Log, apiPrefix: string): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      // The pattern, never the path: pages opened from mail carry their signed token in it (/unsubscribe/:token).
      const matched = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
      const api = ctx.path === apiPrefix || ctx.path.startsWith(`${apiPrefix}/`);
      const principal = ctx.state.principal as Principal | null | undefined;
      const fields: Record<string, unknown> = {
        requestId: ctx.state.requestId,
        method: ctx.method,
        route: matched === undefined ? null : String(matched),
        status: ctx.status,
        ms: Math.round(performance.now() - started),
      };
      // An unmatched API path holds ids at most; an unmatched page path may hold a mistyped token, so it stays out.
      if (matched === undefined && api) fields.path = ctx.path.slice(0, 200);
      if (principal) {
        fields.workspaceId = principal.workspaceId;
        if (principal.kind === 'key') fields.keyId = principal.keyId;
        else fields.userId = principal.userId;
      }
      log[api ? 'info' : 'debug']('http request', fields);
    }
  };
}
