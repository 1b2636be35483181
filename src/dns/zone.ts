// Zone apex discovery (closest SOA up the tree), a zone's NS set, and the host a provider's form wants.
// Every lookup goes through the Resolver the caller passes in; never the module-level dns functions.
// A lookup that could not be answered is a DnsLookupError, never mistaken for "no such record".
import type { Resolver } from 'node:dns/promises';

/** A lookup that failed for a reason other than "the name or record does not exist": worth retrying later. */
export class DnsLookupError extends Error {
  /** The c-ares code: ESERVFAIL, ETIMEOUT, EREFUSED, ECONNREFUSED, EBADRESP... */
  readonly code: string;
  /** The DNS name that was being looked up. */
  readonly hostname: string;
  override readonly name = 'DnsLookupError';

  constructor(hostname: string, code: string, cause?: unknown) {
    super(`DNS lookup of ${hostname} failed: ${code}`, { cause });
    this.code = code;
    this.hostname = hostname;
  }
}

export interface Soa {
  nsname: string;
  hostmaster: string;
}

/**
 * The zone apex of `name`: the closest ancestor-or-self that owns an SOA record, or null if none does.
 * The root is never asked; a single-label name (a TLD) is returned only if it owns an SOA itself.
 */
export async function findZone(resolver: Resolver, name: string): Promise<{ zone: string; soa: Soa } | null> {
  const labels = normalize(name).split('.').filter((l) => l !== '');
  for (let i = 0; i < labels.length; i++) {
    const candidate = labels.slice(i).join('.');
    let soa: Soa | null;
    try {
      const answer = await resolver.resolveSoa(candidate);
      soa = { nsname: stripDot(answer.nsname), hostmaster: stripDot(answer.hostmaster) };
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENODATA' || code === 'ENOTFOUND') continue;
      // c-ares answers EBADRESP when the answer holds a CNAME but no SOA; only a CNAME explains it.
      if (code !== 'EBADRESP' || !(await ownsCname(resolver, candidate))) throw asLookupError(err, candidate);
      continue;
    }
    // c-ares follows CNAMEs and returns the target zone's SOA without saying whose it is; a name that owns
    // a CNAME owns nothing else (RFC 1034 3.6.2), so it cannot be an apex.
    if (await ownsCname(resolver, candidate)) continue;
    return { zone: candidate, soa };
  }
  return null;
}

/** The zone's NS targets: lower case, no trailing dot, sorted, deduplicated; [] when it has none. */
export async function nameserversOf(resolver: Resolver, zone: string): Promise<string[]> {
  const name = normalize(zone);
  let targets: string[];
  try {
    targets = await resolver.resolveNs(name);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENODATA' || code === 'ENOTFOUND') return [];
    throw asLookupError(err, name);
  }
  return [...new Set(targets.map(normalize))].filter((t) => t !== '').sort();
}

/**
 * The host to type into a DNS provider's form for `fqdn` in `zone`: '@' for the apex, otherwise the labels
 * left of the zone (`sel._domainkey.mail`). A name outside the zone is returned unchanged.
 */
export function relativeHost(fqdn: string, zone: string): string {
  const host = stripDot(fqdn.trim());
  const apex = normalize(zone);
  // The root zone would make every name "inside" and every host absolute: treat it as no zone at all.
  if (apex === '') return fqdn;
  const lower = host.toLowerCase();
  if (lower === apex) return '@';
  if (lower.endsWith(`.${apex}`)) return host.slice(0, host.length - apex.length - 1);
  return fqdn;
}

async function ownsCname(resolver: Resolver, name: string): Promise<boolean> {
  try {
    return (await resolver.resolveCname(name)).length > 0;
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENODATA' || code === 'ENOTFOUND') return false;
    throw asLookupError(err, name);
  }
}

function asLookupError(err: unknown, name: string): unknown {
  const code = errorCode(err);
  // Only resolver failures carry a string code; anything else is a bug of ours and must surface as itself.
  return code === undefined ? err : new DnsLookupError(name, code, err);
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function normalize(name: string): string {
  return stripDot(name.trim().toLowerCase());
}

function stripDot(name: string): string {
  return name.replace(/\.+$/, '');
}
