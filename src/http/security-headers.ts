// Headers every response carries (catalogue API-18). The API only ever answers JSON, so nothing it
// serves may be framed, sniffed into HTML, cached by a shared cache or leak a referrer.
import type { Middleware } from 'koa';

export function securityHeaders(opts: { https: boolean }): Middleware {
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
    ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
    ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
    ctx.set('Cache-Control', 'no-store');
    if (opts.https) ctx.set('Strict-Transport-Security', 'max-age=31536000');
    await next();
  };
}
