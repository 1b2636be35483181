// The Host a request names must be one this box answers to (DESIGN.md section 2): a page on a name an
// attacker controls, re-pointed at 127.0.0.1 (DNS rebinding), would otherwise talk to the API as if it were
// the dashboard. Rebinding needs a DNS name, so IP literals are always allowed; so are the public URL's
// host, localhost, the names in http_allowed_hosts and those the box holds a certificate for (`alsoServes`:
// the hostname and each mta-sts.<domain> pointed at the box). Anything else is 421, but for one path: senders
// fetch a domain's MTA-STS policy (RFC 8461 3.3) with Host mta-sts.<domain>, so any such name may GET it (the
// route answers 404 for a domain without one); the page is public, read-only and carries no credential.
import { isIP } from 'node:net';
import type { Middleware } from 'koa';
import { ApiError } from '../errors.ts';
import { MTA_STS_PATH, POLICY_HOST_PREFIX } from '../dns/mta-sts-policy.ts';

export function hostCheck(opts: { publicUrl: string; allowed: string[]; alsoServes?: (host: string) => boolean }): Middleware {
  const names = new Set([new URL(opts.publicUrl).hostname, 'localhost', ...opts.allowed].map(canonical));
  return async (ctx, next) => {
    // Koa's hostname drops the port; an HTTP/1.0 request may carry no Host at all, and no browser sends that.
    const host = canonical(ctx.hostname);
    if (host !== '' && !names.has(host) && !opts.alsoServes?.(host) && isIP(host.replace(/^\[(.*)\]$/, '$1')) === 0 && !policyFetch(ctx.method, ctx.path, host)) {
      throw new ApiError(421, 'misdirected_request', 'This server does not answer to that host name: use the address in public_url, or add the name to http_allowed_hosts');
    }
    await next();
  };
}

const canonical = (host: string) => host.toLowerCase().replace(/\.$/, '');

const policyFetch = (method: string, path: string, host: string) => (method === 'GET' || method === 'HEAD') && path === MTA_STS_PATH && host.startsWith(`${POLICY_HOST_PREFIX}.`);
