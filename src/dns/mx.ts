// Where mail for a domain goes: its MX hosts in RFC 5321 5.1 order, each with the addresses we may connect to,
// or a permanent/temporary verdict the queue can act on. It must not connect anywhere, ask getaddrinfo, or
// throw for what DNS answered: every outcome of the lookup is a value.
import { domainToASCII } from 'node:url';
import type { Resolver } from 'node:dns/promises';
import { blockedReason } from './safe-fetch.ts';

export interface MxHost {
  /** Lower-case, no trailing dot. For an implicit MX, the domain itself. */
  host: string;
  preference: number;
  /** IPv4 first, then IPv6, each as DNS listed them; already vetted (see allowPrivate). */
  addresses: string[];
}

export type MxRoute =
  | { kind: 'hosts'; hosts: MxHost[] }
  | { kind: 'permanent'; code: string; reason: string }
  | { kind: 'temporary'; code: string; reason: string };

export interface MxOptions {
  /** Lab/test mode: keep loopback and private addresses (MAILWRIGHT_ALLOW_PRIVATE_DELIVERY). */
  allowPrivate: boolean;
}

// RFC 3463 status codes the queue puts in DSNs when no server ever answered.
const NULL_MX = '5.1.10'; // RFC 7505 4.2
const NO_SUCH_DOMAIN = '5.1.2';
const NO_ROUTE = '5.4.4';
const DNS_TROUBLE = '4.4.3';

/** An address outbound delivery must not reach unless allowPrivate: loopback, RFC 1918, link-local, CGNAT, ULA, ... */
export function isPrivateAddress(ip: string): boolean {
  return blockedReason(ip) !== null;
}

/** RFC 5321 5.1: the MX list, or the A/AAAA of the domain itself when it has no MX at all. */
export async function resolveMxRoute(resolver: Resolver, domain: string, opts: MxOptions): Promise<MxRoute> {
  const name = asciiDomain(domain);
  if (!name) return { kind: 'permanent', code: NO_SUCH_DOMAIN, reason: `${JSON.stringify(domain)} is not a valid domain name` };

  let records: Array<{ exchange: string; priority: number }>;
  try {
    records = await resolver.resolveMx(name);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOTFOUND') return { kind: 'permanent', code: NO_SUCH_DOMAIN, reason: `domain ${name} does not exist (NXDOMAIN)` };
    if (code !== 'ENODATA') return { kind: 'temporary', code: DNS_TROUBLE, reason: `MX lookup for ${name} failed (${code})` };
    // RFC 5321 5.1: no MX records at all means the domain itself is the implicit MX.
    records = [];
  }

  if (records.length === 0) return implicitMx(resolver, name, opts);
  // RFC 7505 3: a single MX whose exchange is the root ("." arrives as '') says the domain takes no mail.
  if (records.length === 1 && normalizeHost(records[0]!.exchange) === '') {
    return { kind: 'permanent', code: NULL_MX, reason: `${name} does not accept mail (null MX, RFC 7505)` };
  }
  // A null MX mixed with real ones is a misconfiguration (RFC 7505 3): the root is no host, the others still are.
  const candidates = orderByPreference(records.map((r) => ({ host: normalizeHost(r.exchange), preference: r.priority })).filter((r) => r.host !== ''));
  const lookups = await Promise.all(candidates.map((c) => lookupHost(resolver, c.host)));
  return vet(name, candidates.map((c, i) => ({ ...c, ...lookups[i]! })), opts, 'MX');
}

async function implicitMx(resolver: Resolver, name: string, opts: MxOptions): Promise<MxRoute> {
  const found = await lookupHost(resolver, name);
  if (found.addresses.length === 0 && !found.temporary) {
    return { kind: 'permanent', code: NO_ROUTE, reason: `${name} has no MX and no A/AAAA records` };
  }
  return vet(name, [{ host: name, preference: 0, ...found }], opts, 'address');
}

type Looked = { host: string; preference: number; addresses: string[]; temporary: string | null };

/** Drops hosts without usable addresses and decides what it means when none is left. */
function vet(domain: string, hosts: Looked[], opts: MxOptions, what: 'MX' | 'address'): MxRoute {
  const usable: MxHost[] = [];
  let droppedPrivate = false;
  let temporary: string | null = null;
  for (const h of hosts) {
    // Catalogue API-10c: a recipient domain is DNS data anyone controls; pointing its MX at our LAN or loopback
    // must not make us a port-25 scanner of it.
    const addresses = opts.allowPrivate ? h.addresses : h.addresses.filter((a) => !isPrivateAddress(a));
    if (addresses.length < h.addresses.length) droppedPrivate = true;
    if (addresses.length > 0) usable.push({ host: h.host, preference: h.preference, addresses });
    else temporary ??= h.temporary;
  }
  if (usable.length > 0) return { kind: 'hosts', hosts: usable };
  // A host we could not look up might have had a public address: that is worth another try later.
  if (temporary) return { kind: 'temporary', code: DNS_TROUBLE, reason: temporary };
  if (droppedPrivate) return { kind: 'permanent', code: NO_ROUTE, reason: `MX of ${domain} resolves only to private addresses` };
  return { kind: 'permanent', code: NO_ROUTE, reason: `no ${what === 'MX' ? 'MX host' : 'address'} of ${domain} resolves to an address` };
}

/**
 * A and AAAA of one host (IPv4 first), unvetted. A family with no records is an answer; SERVFAIL or a timeout is
 * not, and `temporary` then says which lookup failed. Also how the relay host of MAILWRIGHT_RELAY_URL is found.
 */
export async function lookupHost(resolver: Resolver, host: string): Promise<{ addresses: string[]; temporary: string | null }> {
  const failures: string[] = [];
  const family = (lookup: Promise<string[]>, type: string) =>
    lookup.catch((err: unknown) => {
      const code = errorCode(err);
      if (code !== 'ENODATA' && code !== 'ENOTFOUND') failures.push(`${type} lookup for ${host} failed (${code})`);
      return [] as string[];
    });
  const [v4, v6] = await Promise.all([family(resolver.resolve4(host), 'A'), family(resolver.resolve6(host), 'AAAA')]);
  return { addresses: [...v4, ...v6], temporary: failures[0] ?? null };
}

/** RFC 5321 5.1: lowest preference first; hosts of equal preference in random order to spread the load. */
function orderByPreference<T extends { host: string; preference: number }>(list: T[]): T[] {
  const keyed = list.map((r) => ({ r, tiebreak: Math.random() }));
  keyed.sort((a, b) => a.r.preference - b.r.preference || a.tiebreak - b.tiebreak);
  // A host listed twice is tried once, at its best preference.
  const seen = new Set<string>();
  return keyed.map((k) => k.r).filter((r) => !seen.has(r.host) && seen.add(r.host));
}

function asciiDomain(domain: string): string {
  const bare = normalizeHost(domain.trim());
  return bare === '' ? '' : domainToASCII(bare);
}

function normalizeHost(host: string): string {
  const lower = host.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

function errorCode(err: unknown): string {
  return (err as NodeJS.ErrnoException | undefined)?.code ?? 'EDNS';
}
