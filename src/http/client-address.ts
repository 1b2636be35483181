// Who the client is: the peer's address, or, when the peer is one of trusted_proxies (the reverse proxy in front
// of the box), the address that proxy saw, from X-Forwarded-For or else Forwarded (RFC 7239). Every later use of
// ctx.ip (login throttles, rate limits, logs, tracking visits, the /metrics gate) reads what this sets.
//
// The header is read from its right end, where each proxy appends the address it got the request from: hops
// are taken while they are trusted proxies themselves, and the first that is not is the client. Anything a
// client put in the header itself lies to the left of that and is never read, so it cannot claim an address.
import { isIP } from 'node:net';
import type { Middleware } from 'koa';
import { plainAddress, type RangeTest } from '../dns/ip-ranges.ts';

export function clientAddress(trusted: RangeTest): Middleware {
  return (ctx, next) => {
    const peer = plainAddress(ctx.req.socket.remoteAddress ?? '');
    ctx.request.ip = trusted(peer) ? forwardedClient(peer, forwardedHops(ctx.req.headers), trusted) : peer;
    return next();
  };
}

/**
 * X-Forwarded-For when the request has one (nginx's $proxy_add_x_forwarded_for and Caddy append to it), else
 * Forwarded's `for=` parameters: the hops in the order they were added, each an address or null when unreadable.
 */
export function forwardedHops(headers: Record<string, string | string[] | undefined>): Array<string | null> {
  const xff = headers['x-forwarded-for'];
  if (typeof xff === 'string' && xff.trim()) return xff.split(',').map((hop) => addressOf(hop));
  const forwarded = headers.forwarded;
  if (typeof forwarded !== 'string' || !forwarded.trim()) return [];
  return forwarded.split(',').map((element) => {
    const pair = element.split(';').map((p) => p.trim()).find((p) => /^for=/i.test(p));
    return pair ? addressOf(pair.slice(4).replace(/^"(.*)"$/, '$1')) : null;
  });
}

/** The client among the hops: the rightmost one that is not a trusted proxy. */
export function forwardedClient(peer: string, hops: Array<string | null>, trusted: RangeTest): string {
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i];
    // An unreadable hop (`unknown`, an obfuscated name): nothing beyond it can be trusted; the last proxy stands in.
    if (hop === null) return client;
    client = hop;
    if (!trusted(hop)) return hop;
  }
  return client;
}

// `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]:4711`, `2001:db8::1`: the address, or null.
function addressOf(hop: string): string | null {
  const s = hop.trim();
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(s) ?? /^(\d+\.\d+\.\d+\.\d+)(?::\d+)?$/.exec(s);
  const ip = m ? m[1] : s;
  return isIP(ip) ? plainAddress(ip) : null;
}
