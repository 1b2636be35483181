// Where a destination's mail goes: its MX hosts with their vetted addresses (dns/mx.ts), or the relay chosen
// for it (relays.ts), or a permanent/temporary verdict; lookups cached for a few seconds on the injected clock. It must not
// connect anywhere, resolve names but through the given Resolver, or throw for what DNS answered.
import net from 'node:net';
import type { Resolver } from 'node:dns/promises';
import type { Clock } from '../clock.ts';
import { lookupHost, resolveMxRoute, type MxRoute } from '../dns/mx.ts';
import { DNS_TROUBLE } from './outcome.ts';
import type { Relay } from './relays.ts';
import type { TlsRequirement } from './tls-requirement.ts';

export interface Target {
  /** MX host name or relay host: pool key, SNI name and what outcomes report as `mx`. */
  host: string;
  addresses: string[];
  /** A relay's pool key in place of the host: two relays may share a host, not credentials. */
  pool?: string;
  /** What TLS must prove on this host (outbound-tls.ts); absent for relays and when nothing is checked. */
  tls?: TlsRequirement;
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
    },
  ) {}

  /** The domain's MX hosts, or the relay's host when one carries this mail. */
  async lookup(domain: string, relay: Relay | null): Promise<Route> {
    if (!relay) return this.mx(domain);
    const { host, pool } = relay;
    // The relay is the operator's own configuration, often a smarthost on the LAN: the private-address rule
    // (catalogue API-10c) is about recipient domains, which anyone can point anywhere.
    if (net.isIP(host)) return { kind: 'hosts', hosts: [{ host, addresses: [host], pool }] };
    const found = await lookupHost(this.opts.resolver, host);
    if (found.addresses.length > 0) return { kind: 'hosts', hosts: [{ host, addresses: found.addresses, pool }] };
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
