// The dashboard's front door: the built bundle (dist/dashboard) under /assets, and the app's index.html for
// every path the app routes itself, under a strict Content-Security-Policy (scripts and styles from the box
// only, no inline script, frames only from the box: the reading pane). It talks to the box through /api/v1
// with the session cookie, like any other client.
import Router from '@koa/router';
import { existsSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { DIST_DIR } from './build.ts';

// The paths the app itself routes (ui/router.ts): a reload or a shared link lands on the app.
const APP_PATHS = /^\/(?:|setup|login|mail(?:\/.*)?|overview|domains(?:\/.*)?|inboxes|labels|templates(?:\/.*)?|developers(?:\/.*)?|billing|settings)$/;

export const DASHBOARD_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

export function dashboardPages(): Router {
  const r = new Router();
  r.get('/assets/:file', (ctx) => {
    const file = ctx.params.file;
    const path = join(DIST_DIR, file);
    if (!/^[\w.-]+$/.test(file) || !TYPES[extname(file)] || !existsSync(path)) return;
    ctx.type = TYPES[extname(file)];
    // The name carries the content's hash: it never changes under that name.
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
    ctx.body = readFileSync(path);
  });
  r.get(APP_PATHS, (ctx) => {
    const index = join(DIST_DIR, 'index.html');
    ctx.set('Content-Security-Policy', DASHBOARD_POLICY);
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    if (!existsSync(index)) {
      ctx.status = 503;
      ctx.body = '<!doctype html><title>Mailwright</title><p>The dashboard is not built yet: run <code>npm run build</code> (or restart with <code>npm start</code>).</p>';
      return;
    }
    ctx.body = readFileSync(index);
  });
  return r;
}
