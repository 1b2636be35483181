// The Koa application and its HTTP listener: security headers and the error envelope around everything,
// `/healthz` and the pages that links in mail open outside the API, and under /api/v1 the body parser,
// credential resolution and rate limit that every resource's routes (mounted by app.ts) rely on.
import { createServer, type Server } from 'node:http';
import Koa from 'koa';
import { Router } from '@koa/router';
import type { Config } from '../config.ts';
import type { Log } from '../log.ts';
import { newId } from '../db/ids.ts';
import { errorEnvelope } from './errors.ts';
import { securityHeaders } from './security-headers.ts';
import { jsonBody } from './body.ts';
import { resolveAuth, type Authenticator } from './auth.ts';
import { rateLimit, type RateLimiter } from './rate-limit.ts';

const API_PREFIX = '/api/v1';
const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface HttpDeps {
  config: Config;
  log: Log;
  authenticator: Authenticator;
  rateLimiter: RateLimiter | null;
  /** Answers /healthz: true once SMTP, HTTP and the queue are all up. */
  healthy: () => boolean;
  /** Paths that take bodies over the default 1 MiB (sends with attachments). */
  largerBodies?: Array<{ path: RegExp; limitBytes: number }>;
}

/** A router for one resource's API routes, mounted under /api/v1 by `createHttpApp`. */
export const apiRouter = () => new Router();

/**
 * A router for pages that links in mail open (forwarding confirmation, unsubscribe), mounted at the root.
 * They get no body parser and no credentials: such a page is authorised by the signed token in its path
 * alone (GET shows, a form POST to the same URL acts), and a page that needs a form field must parse it itself.
 */
export const pageRouter = () => new Router();

export function createHttpApp(deps: HttpDeps, routers: Router[], pages: Router[] = []): Koa {
  const app = new Koa();
  app.proxy = false; // X-Forwarded-* are not trusted: the client address feeds login throttling.
  app.silent = true; // errors are answered and logged by errorEnvelope

  app.use(async (ctx, next) => {
    ctx.state.requestId = newId('q').slice(2);
    ctx.set('X-Request-Id', ctx.state.requestId);
    const started = performance.now();
    try {
      await next();
    } finally {
      deps.log.debug('http', { requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) });
    }
  });
  app.use(securityHeaders({ https: deps.config.publicUrl.startsWith('https:') }));
  app.use(errorEnvelope(deps.log));

  const root = new Router();
  root.get('/healthz', (ctx) => {
    const ok = deps.healthy();
    ctx.status = ok ? 200 : 503;
    ctx.body = { ok };
  });

  const api = new Router({ prefix: API_PREFIX });
  api.use(jsonBody({ limitBytes: DEFAULT_BODY_LIMIT, larger: deps.largerBodies }));
  api.use(resolveAuth(deps.authenticator));
  api.use(rateLimit(deps.rateLimiter));
  for (const r of routers) api.use(r.routes());

  app.use(root.routes());
  for (const p of pages) app.use(p.routes());
  app.use(api.routes());
  app.use(api.allowedMethods({ throw: true }));
  return app;
}

export function createHttpServer(app: Koa): Server {
  const server = createServer({ maxHeaderSize: 16 * 1024, requestTimeout: 120_000, headersTimeout: 30_000 }, app.callback());
  server.keepAliveTimeout = 5_000;
  return server;
}
