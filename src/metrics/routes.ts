// GET /metrics, outside /api/v1: the Prometheus exposition of app.metrics, behind its own gate. With
// metrics_token set a scraper must send it as a Bearer token (compared in constant time); without it only
// loopback clients are answered. It must not accept API keys or sessions: a scrape token opens nothing else.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { App } from '../context.ts';
import { ApiError } from '../errors.ts';
import { pageRouter } from '../http/server.ts';

/** Who may read the metrics: 'ok', or the status to refuse with (401 with a token set, 403 off loopback). */
export function metricsAccess(token: string | null, clientIp: string, authorization: string | undefined): 'ok' | 401 | 403 {
  if (token === null) return isLoopback(clientIp) ? 'ok' : 403;
  const presented = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '')?.[1];
  return presented !== undefined && sameSecret(presented, token) ? 'ok' : 401;
}

export function metricsPage(app: App) {
  const router = pageRouter();
  router.get('/metrics', async (ctx) => {
    const access = metricsAccess(app.config.metricsToken, ctx.ip, ctx.get('Authorization') || undefined);
    if (access === 401) throw new ApiError(401, 'unauthorized', 'GET /metrics needs the metrics_token as a Bearer token', { headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' } });
    if (access === 403) throw new ApiError(403, 'forbidden', 'GET /metrics is open to loopback clients only; set metrics_token to scrape it from elsewhere');
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

// 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (a dual-stack listener reports ::ffff:127.0.0.1).
function isLoopback(ip: string): boolean {
  return ip === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(ip);
}
