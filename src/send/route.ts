// Where a destination's mail goes: its MX hosts with their vetted addresses (dns/mx.ts), or the configured
// relay, or a permanent/temporary verdict; lookups cached for a few seconds on the injected clock. It must not
// connect anywhere, resolve names but through the given Resolver, or throw for what DNS answered.
import net from 'node:net';
import type { Resolver } from 'node:dns/promises';
import type { Clock } from '../clock.ts';
import { lookupHost, resolveMxRoute, type MxRoute } from '../dns/mx.ts';
import { DNS_TROUBLE } from './outcome.ts';

export interface Target {
  /** MX host name or relay host: pool key, SNI name and what outcomes report as `mx`. */
  host: string;
  addresses: string[];
}

export interface Relay {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  pass: string;
}

export type Route = { kind: 'hosts'; hosts: Target[] } | { kind: 'permanent' | 'temporary'; code: string; reason: string };

const ROUTE_CACHE_MS = 5000;
const MAX_CACHED_ROUTES = 10_000;

export class Routes {
  private readonly cache = new Map<string, { route: MxRoute; until: number }>();

  constructor(
    private readonly opts: {
      resolver: Resolver;
      clock: Clock;
      /** MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: MX hosts on loopback and private addresses are kept. */
      allowPrivate: boolean;
      /** The smarthost every recipient goes to, or null to deliver to each domain's MX. */
      relay: Relay | null;
    },
  ) {}

  async lookup(domain: string): Promise<Route> {
    const { relay, resolver } = this.opts;
    if (!relay) return this.mx(domain);
    const { host } = relay;
    // The relay is the operator's own configuration, often a smarthost on the LAN: the private-address rule
    // (catalogue API-10c) is about recipient domains, which anyone can point anywhere.
    if (net.isIP(host)) return { kind: 'hosts', hosts: [{ host, addresses: [host] }] };
    const found = await lookupHost(resolver, host);
    if (found.addresses.length > 0) return { kind: 'hosts', hosts: [{ host, addresses: found.addresses }] };
    // Never a bounce: a relay that does not resolve is our configuration or DNS trouble, not the recipient's.
    return { kind: 'temporary', code: DNS_TROUBLE, reason: found.temporary ?? `relay host ${host} has no A/AAAA records` };
  }

  /**
   * A burst to one domain comes in many batches: one lookup serves them for a few seconds. Temporary failures
   * are never kept, so a retry always asks again.
   */
  private async mx(domain: string): Promise<MxRoute> {
    const now = this.opts.clock.now();
    const known = this.cache.get(domain);
    if (known && known.until > now) return known.route;
    const route = await resolveMxRoute(this.opts.resolver, domain, { allowPrivate: this.opts.allowPrivate });
    if (route.kind !== 'temporary') {
      if (this.cache.size > MAX_CACHED_ROUTES) this.cache.clear();
      this.cache.set(domain, { route, until: now + ROUTE_CACHE_MS });
    }
    return route;
  }
}

/** smtp://user:pass@host:port (STARTTLS when offered, AUTH), smtps://... (implicit TLS). */
export function parseRelayUrl(raw: string): Relay {
  const url = new URL(raw);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new TypeError(`relay URL must be smtp: or smtps:, got ${url.protocol}`);
  const secure = url.protocol === 'smtps:';
  const bare = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const host = bare.toLowerCase().replace(/\.$/, '');
  if (!host) throw new TypeError('relay URL has no host');
  return {
    host,
    // Submission ports, as nodemailer reads such URLs: 587 with STARTTLS, 465 with implicit TLS (RFC 8314).
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    user: decodeURIComponent(url.username),
    pass: decodeURIComponent(url.password),
  };
}
