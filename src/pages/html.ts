// The small HTML pages that links in mail open (forwarding confirmation, unsubscribe, a refused click): one
// look, every interpolated value escaped by the caller with escapeHtml, and a policy that lets them have only
// their inline style and a form that posts to the page itself. No script, ever.
import type { Context } from 'koa';

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A whole page: `body` is HTML (its values already escaped), the title is text. */
export function renderPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#222}
button{font:inherit;padding:.5rem 1.25rem;border:0;border-radius:4px;background:#1a5fb4;color:#fff;cursor:pointer}
.small{font-size:.875rem;color:#555}</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
}

export function sendPage(ctx: Context, page: { status: number; html: string }): void {
  // The API's policy forbids everything; these pages need their inline style and a form posting to itself.
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  ctx.set('X-Robots-Tag', 'noindex');
  ctx.status = page.status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page.html;
}
