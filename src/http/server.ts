// The Koa application and its HTTP listener: security headers, the error envelope and the Host and method
// checks around everything, `/healthz` and the pages that links in mail open outside the API, and under
// /api/v1 credentials first (from the headers alone), then the rate limit, then the body parser, which every
// resource's routes (mounted by start/front-doors.ts) rely on. A request without a valid credential is answered before a
// byte of its body is read; the few routes open to strangers read theirs themselves, a few KB at most.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as HttpsServer } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import Koa from 'koa';
import { Router } from '@koa/router';
import type { Config } from '../config/config.ts';
import type { Log } from '../log.ts';
import { newId } from '../db/ids.ts';
import { errorEnvelope } from './errors.ts';
import { accessLog } from './access-log.ts';
import { securityHeaders } from './security-headers.ts';
import { jsonBody } from './body.ts';
import { BodyMemory, holdBodyMemory } from './body-memory.ts';
import { lingerOnClose } from './linger.ts';
import { requireCredential, resolveAuth, type Authenticator } from './auth.ts';
import { hostCheck } from './host-check.ts';
import { ROUTE_SCOPES, scopeGuard, undecided, type RouteScope, type Visible } from './scopes.ts';
import { clientAddress } from './client-address.ts';
import { inRanges } from '../dns/ip-ranges.ts';
import { ApiError } from '../errors.ts';
import { rateLimit, type RateLimiter } from './rate-limit.ts';
import type { Metrics } from '../metrics/metrics.ts';

const API_PREFIX = '/api/v1';
const DEFAULT_BODY_LIMIT = 1024 * 1024;
// What any route here serves; WebDAV's PROPFIND, MKCOL, LOCK, COPY and the like are 501 on every path.
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
// Webhooks a provider signs over the exact bytes of their body instead of sending a credential (Stripe's,
// billing/routes.ts): the gate lets them in, and the body parser leaves the body for the route to verify.
const SIGNED_WEBHOOKS = [`${API_PREFIX}/billing/stripe/webhook`];
// What a stranger may call: login, the first start's setup (it asks for the one-time token instead) and the
// signed webhooks. Each reads its body itself, capped at a few KB (catalogue API-21).
const OPEN_ROUTES = [
  { method: 'POST', path: `${API_PREFIX}/auth/login` },
  { method: 'GET', path: `${API_PREFIX}/setup` },
  { method: 'POST', path: `${API_PREFIX}/setup` },
  ...SIGNED_WEBHOOKS.map((path) => ({ method: 'POST', path })),
];

export interface HttpDeps {
  config: Config;
  log: Log;
  authenticator: Authenticator;
  rateLimiter: RateLimiter | null;
  /** Answers /healthz: true once SMTP, HTTP and the queue are all up. */
  healthy: () => boolean;
  /** Paths that take bodies over the default 1 MiB (sends with attachments), once the caller is authenticated. */
  largerBodies?: Array<{ path: RegExp; limitBytes: number }>;
  /**
   * Paths whose body is not JSON but read by the route itself (an upload), once the caller is authenticated;
   * readRawBody holds it under the box-wide budget (upload_memory_mb).
   */
  rawBodies?: RegExp[];
  /** API latency by matched route (metrics/metrics.ts). */
  metrics?: Metrics;
  /** Whether a scoped key may see one email, inbox or attachment (scopes.ts); without it, none. */
  visible?: Visible;
  /** Decisions for routes beyond the box's own (a test's routers): added to scopes.ts ROUTE_SCOPES. */
  routeScopes?: Record<string, RouteScope>;
  /** Host names the app answers to besides the configured ones: those the box holds a certificate for. */
  alsoServes?: (host: string) => boolean;
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
  // X-Forwarded-* are not Koa's to trust: clientAddress reads them only from trusted_proxies.
  app.proxy = false;
  app.silent = true; // errors are answered and logged by errorEnvelope

  app.use(clientAddress(inRanges(deps.config.trustedProxies)));
  app.use(async (ctx, next) => {
    ctx.state.requestId = newId('q').slice(2);
    ctx.set('X-Request-Id', ctx.state.requestId);
    await next();
    // Answered without reading the whole body (401, 413, 429...): the connection closes after the answer. A known
    // caller's rest of the body is read and discarded first, within bounds, so its client hears the answer
    // instead of a reset (linger.ts); a stranger's close comes at once, cheaper than draining its megabytes.
    if (!ctx.req.complete && hasBody(ctx.req.headers)) {
      ctx.set('Connection', 'close');
      if (ctx.state.principal) lingerOnClose(ctx.req);
    }
  });
  app.use(accessLog(deps.log, API_PREFIX));
  if (deps.metrics) app.use(deps.metrics.timeApi(API_PREFIX)); // outside the envelope, sees the final status
  app.use(securityHeaders({ https: deps.config.publicUrl.startsWith('https:') }));
  app.use(errorEnvelope(deps.log));
  app.use(hostCheck({ publicUrl: deps.config.publicUrl, allowed: deps.config.httpAllowedHosts, alsoServes: deps.alsoServes }));
  app.use(async (ctx, next) => {
    if (!KNOWN_METHODS.has(ctx.method)) throw new ApiError(501, 'not_implemented', `The method ${ctx.method} is not implemented by this server`);
    await next();
  });

  const root = new Router();
  root.get('/healthz', (ctx) => {
    const ok = deps.healthy();
    ctx.status = ok ? 200 : 503;
    ctx.body = { ok };
  });

  // Outside the router, whose middleware runs only for paths that have a route: an unknown path is 401 too.
  const identify = resolveAuth(deps.authenticator);
  const limit = rateLimit(deps.rateLimiter);
  const admit = requireCredential({ except: OPEN_ROUTES });
  const gate: Koa.Middleware = (ctx, next) => identify(ctx, () => limit(ctx, () => admit(ctx, next)));
  // One budget for the box: what uploads and the larger JSON bodies hold at once (RES-16).
  const memory = new BodyMemory(() => deps.config.uploadMemoryMb * 1024 * 1024);
  const parseJson = jsonBody({ limitBytes: DEFAULT_BODY_LIMIT, larger: deps.largerBodies, memory });
  const holdRaw = holdBodyMemory(memory);
  const raw = deps.rawBodies ?? [];
  // A stranger got past the gate only to an open route, which reads its own body after its cheap checks
  // (body.ts readSmallJson, the webhook's signature); so does a known caller of one.
  const readsOwnBody = (ctx: Koa.Context) => !ctx.state.principal || OPEN_ROUTES.some((r) => r.method === ctx.method && r.path === ctx.path);
  const body: Koa.Middleware = (ctx, next) => {
    if (readsOwnBody(ctx)) return next();
    return ctx.method === 'POST' && raw.some((p) => p.test(ctx.path)) ? holdRaw(ctx, next) : parseJson(ctx, next);
  };
  // A scoped key's reach is judged once the route is known, before its body is read.
  const table = { ...ROUTE_SCOPES, ...deps.routeScopes };
  const scopes = scopeGuard(API_PREFIX, deps.visible ?? (async () => false), table);
  const mount = (mounted: Router[]) => {
    const router = new Router({ prefix: API_PREFIX });
    router.use(scopes);
    router.use(body);
    for (const r of mounted) router.use(r.routes());
    return router;
  };
  const api = mount(routers);
  // A route without a decision for scoped keys is a programming error: the box does not start.
  const missing = undecided(routers.flatMap((r) => r.stack.filter((l) => l.methods.length > 0)), '', table);
  if (missing.length) throw new Error(`API routes without a decision in http/scopes.ts ROUTE_SCOPES: ${missing.join(', ')}`);
  const apiRoutes = bySegment(routers, mount, api);

  // /healthz and the pages live outside /api/v1: an API request goes straight to the gate instead of through
  // the root and page routers, each of which would try its routes on it and pass it on.
  const outsideApi = [root, ...pages].reduceRight<Koa.Middleware>((next, router) => {
    const routes = router.routes() as unknown as Koa.Middleware;
    return (ctx, after) => routes(ctx, () => next(ctx, after));
  }, (_ctx, after) => after());
  app.use((ctx, next) => (ctx.path === API_PREFIX || ctx.path.startsWith(`${API_PREFIX}/`) ? gate(ctx, next) : outsideApi(ctx, next)));
  app.use(apiRoutes);
  // The router answers a path served under other methods with 405 and its Allow header; the envelope is ours.
  const allowedMethods = api.allowedMethods();
  app.use(async (ctx, next) => {
    await allowedMethods(ctx as Parameters<typeof allowedMethods>[0], next);
    if (ctx.status === 405 && ctx.body === undefined) throw new ApiError(405, 'method_not_allowed', `Method ${ctx.method} is not allowed here; allowed: ${ctx.response.get('Allow')}`);
  });
  return app;
}

/**
 * The API's routes, dispatched on the path's first segment after /api/v1 to a router holding only the resource
 * routers that serve paths under it. @koa/router tries every route of a router in turn on every request (a
 * regular expression and a debug call each): the whole API's 91 took 55-65 µs of the event loop per request
 *, a tenth of a send's. A router with a path that does not start with a plain segment is mounted
 * under every segment; a path under no segment goes to `all`, which holds every route, so its 404 or 405 is
 * what it would have been. Routes match without regard to case, and so do segments here.
 */
function bySegment(routers: Router[], mount: (routers: Router[]) => Router, all: Router): Koa.Middleware {
  const firstSegment = (path: string | RegExp) => (typeof path === 'string' ? (/^\/([\w.-]+)(?:\/|$)/.exec(path)?.[1]?.toLowerCase() ?? null) : null);
  const everywhere = routers.filter((r) => r.stack.some((layer) => firstSegment(layer.path) === null));
  const segments = new Set(routers.flatMap((r) => r.stack.map((layer) => firstSegment(layer.path)).filter((s): s is string => s !== null)));
  const routes = new Map<string, Koa.Middleware>();
  for (const segment of segments) {
    const serving = routers.filter((r) => everywhere.includes(r) || r.stack.some((layer) => firstSegment(layer.path) === segment));
    routes.set(segment, mount(serving).routes() as unknown as Koa.Middleware);
  }
  const fallback = all.routes() as unknown as Koa.Middleware;
  return (ctx, next) => {
    const segment = ctx.path.startsWith(`${API_PREFIX}/`) ? firstSegment(ctx.path.slice(API_PREFIX.length)) : null;
    return ((segment !== null && routes.get(segment)) || fallback)(ctx, next);
  };
}

const LIMITS = { maxHeaderSize: 16 * 1024, requestTimeout: 120_000, headersTimeout: 30_000 };

/** `first`: answers a request before the app if it returns true (ACME's HTTP-01 challenges, when they share the port). */
export function createHttpServer(app: Koa, first?: (req: IncomingMessage, res: ServerResponse) => boolean): Server {
  const handle = app.callback();
  const serve = first ? (req: IncomingMessage, res: ServerResponse) => void (first(req, res) || handle(req, res)) : handle;
  const server = createServer(LIMITS, serve);
  // Node would answer `Expect: 100-continue` with 100 before any middleware runs, inviting the body of a
  // request that is about to get a 401; the body parser sends the 100 once the caller is authenticated.
  server.on('checkContinue', serve);
  server.keepAliveTimeout = 5_000;
  return server;
}

/**
 * The same app over HTTPS, with the same limits. `tls` holds the default certificate and an
 * SNICallback for the others; a renewed one is swapped in with the server's setSecureContext.
 */
export function createHttpsServer(app: Koa, tls: Pick<SecureContextOptions, 'key' | 'cert'> & { SNICallback?: (servername: string, cb: (err: Error | null, ctx?: import('node:tls').SecureContext) => void) => void }): HttpsServer {
  const handle = app.callback();
  const server = createTlsServer({ ...LIMITS, ...tls, minVersion: 'TLSv1.2' }, handle);
  server.on('checkContinue', handle);
  server.keepAliveTimeout = 5_000;
  return server;
}

const hasBody = (headers: { 'content-length'?: string; 'transfer-encoding'?: string }) =>
  headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
