// GET /metrics, outside /api/v1: the Prometheus exposition of app.metrics, behind its own gate. A client in
// metrics_allow is answered; so is one that sends metrics_token as a Bearer token (compared in constant time).
// With neither set and no trusted proxy, loopback clients are. Behind a proxy on the same host every visitor
// would look like loopback, so once trusted_proxies is set loopback opens nothing by itself. It must not
// accept API keys or sessions: a scrape token opens nothing else.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { App } from '../context.ts';
import type { Config } from '../config/config.ts';
import { ApiError } from '../errors.ts';
import { pageRouter } from '../http/server.ts';
import { inRanges } from '../dns/ip-ranges.ts';

const LOOPBACK = inRanges(['127.0.0.0/8', '::1']);

type Gate = Pick<Config, 'metricsToken' | 'metricsAllow' | 'trustedProxies'>;

/** Who may read the metrics: 'ok', or the status to refuse with (401 when a token would open it, else 403). */
export function metricsAccess(gate: Gate, clientIp: string, authorization: string | undefined): 'ok' | 401 | 403 {
  const { metricsToken: token, metricsAllow, trustedProxies } = gate;
  if (inRanges(metricsAllow)(clientIp)) return 'ok';
  if (token === null) return metricsAllow.length === 0 && trustedProxies.length === 0 && LOOPBACK(clientIp) ? 'ok' : 403;
  const presented = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '')?.[1];
  return presented !== undefined && sameSecret(presented, token) ? 'ok' : 401;
}

export function metricsPage(app: App) {
  const router = pageRouter();
  router.get('/metrics', async (ctx) => {
    const access = metricsAccess(app.config, ctx.ip, ctx.get('Authorization') || undefined);
    if (access === 401) throw new ApiError(401, 'unauthorized', 'GET /metrics needs the metrics_token as a Bearer token', { headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' } });
    if (access === 403) throw new ApiError(403, 'forbidden', 'GET /metrics is not open to this address; set metrics_token or metrics_allow to scrape it');
    if (!app.metrics) throw new ApiError(404, 'not_found', 'Metrics are not collected by this process');
    ctx.set('Cache-Control', 'no-store');
    ctx.type = app.metrics.contentType;
    ctx.body = await app.metrics.expose();
  });
  return router;
}

// Hashing first makes the comparison constant-time in the length too: timingSafeEqual needs equal lengths.
function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

