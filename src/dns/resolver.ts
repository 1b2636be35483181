// The one DNS resolver of the box: every lookup goes to the servers in MAILWRIGHT_DNS_SERVERS (tests point
// it at their own authoritative server), never through the system's getaddrinfo.
import { Resolver } from 'node:dns/promises';

export function createResolver(servers: string[], opts: { timeoutMs?: number; tries?: number } = {}): Resolver {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 5000, tries: opts.tries ?? 2 });
  resolver.setServers(servers);
  return resolver;
}
