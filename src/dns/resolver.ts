// The one DNS resolver of the box: every lookup goes to the servers in MAILWRIGHT_DNS_SERVERS (tests point
// it at their own authoritative server), never through the system's getaddrinfo.
import { Resolver } from 'node:dns/promises';
import { isIPv4 } from 'node:net';

export function createResolver(servers: string[], opts: { timeoutMs?: number; tries?: number } = {}): Resolver {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 5000, tries: opts.tries ?? 2 });
  resolver.setServers(servers);
  return resolver;
}

/** The in-addr.arpa / ip6.arpa name whose PTR names an address (RFC 1035 3.5, RFC 3596 2.5). */
export function arpaName(ip: string): string {
  if (isIPv4(ip)) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
  const [head, tail = ''] = ip.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail).length;
  const full = [...groups(head), ...Array(ip.includes('::') ? missing : 0).fill('0'), ...groups(tail)].map((g) => g.padStart(4, '0')).join('');
  return `${[...full].reverse().join('.')}.ip6.arpa`;
}

/**
 * PTR names of an address, asked of DNS itself. Not Resolver.reverse(): c-ares answers that from
 * /etc/hosts first, which on a VPS often names the box whatever the real reverse DNS says.
 */
export async function reverseLookup(resolver: Resolver, ip: string): Promise<string[]> {
  return (await resolver.resolvePtr(arpaName(ip))).map((n) => n.toLowerCase().replace(/\.$/, ''));
}
