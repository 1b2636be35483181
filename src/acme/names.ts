// Which names get a certificate: the box's hostname always, and mta-sts.<domain> of each domain whose inbound
// mail is ready, once that name resolves (A/AAAA, through a CNAME or not) only to the hostname's addresses.
// Ordering before then would fail validation and spend the CA's failed-validation allowance.
import type { Resolver } from 'node:dns/promises';

export const policyHost = (domain: string) => `mta-sts.${domain}`;

async function addresses(resolver: Resolver, name: string): Promise<string[]> {
  const [v4, v6] = await Promise.all([resolver.resolve4(name).catch(() => [] as string[]), resolver.resolve6(name).catch(() => [] as string[])]);
  return [...v4, ...v6];
}

/** The names to hold a certificate for now: [hostname, ...policy hosts that point at the box]. */
export async function wantedNames(resolver: Resolver, hostname: string, domains: string[]): Promise<string[]> {
  if (domains.length === 0) return [hostname];
  const box = new Set(await addresses(resolver, hostname));
  const ready: string[] = [];
  for (const domain of domains) {
    const name = policyHost(domain);
    const found = await addresses(resolver, name);
    if (found.length > 0 && found.every((a) => box.has(a))) ready.push(name);
  }
  return [hostname, ...ready];
}
