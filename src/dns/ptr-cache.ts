// PTR names of the sources in DMARC reports, for "who sends as you": asked of the box's resolvers
// (reverseLookup) and kept an hour, failures a minute, so a summary page asks DNS once per source per hour.
import type { Resolver } from 'node:dns/promises';
import { reverseLookup } from './resolver.ts';

const HOUR = 60 * 60_000;
const MAX_ENTRIES = 10_000;

export function ptrCache(resolver: Resolver, now: () => number = Date.now) {
  const entries = new Map<string, { until: number; name: Promise<string | null> }>();
  return (ip: string): Promise<string | null> => {
    const hit = entries.get(ip);
    if (hit && hit.until > now()) return hit.name;
    entries.delete(ip);
    if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
    const entry = { until: now() + HOUR, name: Promise.resolve(null as string | null) };
    entry.name = reverseLookup(resolver, ip).then(
      (names) => names[0] ?? null,
      (err: { code?: string }) => {
        // No PTR is an answer; a timeout or SERVFAIL is asked again soon.
        if (err?.code !== 'ENOTFOUND' && err?.code !== 'ENODATA') entry.until = now() + 60_000;
        return null;
      },
    );
    entries.set(ip, entry);
    return entry.name;
  };
}
