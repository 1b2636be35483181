// The Host a request names must be one this box answers to (DESIGN.md section 2): a page on a name an
// attacker controls, re-pointed at 127.0.0.1 (DNS rebinding), would otherwise talk to the API as if it were
// the dashboard. Rebinding needs a DNS name, so IP literals are always allowed; so are the public URL's
// host, localhost, the names in http_allowed_hosts and those the box holds a certificate for (`alsoServes`:
// the hostname and each mta-sts.<domain> pointed at the box, issue 45). Anything else is 421.
import { isIP } from 'node:net';
import type { Middleware } from 'koa';
import { ApiError } from '../errors.ts';

export function hostCheck(opts: { publicUrl: string; allowed: string[]; alsoServes?: (host: string) => boolean }): Middleware {
  const names = new Set([new URL(opts.publicUrl).hostname, 'localhost', ...opts.allowed].map(canonical));
  return async (ctx, next) => {
    // Koa's hostname drops the port; an HTTP/1.0 request may carry no Host at all, and no browser sends that.
    const host = canonical(ctx.hostname);
    if (host !== '' && !names.has(host) && !opts.alsoServes?.(host) && isIP(host.replace(/^\[(.*)\]$/, '$1')) === 0) {
      throw new ApiError(421, 'misdirected_request', 'This server does not answer to that host name: use the address in public_url, or add the name to http_allowed_hosts');
    }
    await next();
  };
}

const canonical = (host: string) => host.toLowerCase().replace(/\.$/, '');
