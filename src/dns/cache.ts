// A short-lived answer cache in front of the configured resolvers, for authenticating received mail: the same
// sender domains' SPF, DKIM and DMARC records are asked for again and again, and a box pointed at a
// non-caching resolver would otherwise ask the network two or three times per message. Answers (and "no such
// record", which SPF and DMARC lookups mostly get) are kept for a fixed time because c-ares does not expose
// TTLs for TXT; failures (SERVFAIL, timeouts) are never kept. Domain verification does not use this cache:
// it must see DNS as it is now.

export interface DnsLookup {
  resolve(name: string, type: string): Promise<unknown>;
}

const NEGATIVE = new Set(['ENOTFOUND', 'ENODATA']);

export function cachingLookup(upstream: DnsLookup, opts: { ttlMs?: number; maxEntries?: number; now?: () => number } = {}): DnsLookup {
  const ttlMs = opts.ttlMs ?? 60_000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const now = opts.now ?? Date.now;
  const entries = new Map<string, { until: number; answer: Promise<unknown> }>();

  return {
    resolve(name, type) {
      const key = `${type} ${name.toLowerCase()}`;
      const hit = entries.get(key);
      if (hit && hit.until > now()) return hit.answer;
      if (hit) entries.delete(key);
      // The promise itself is kept, so concurrent lookups of one name share one query.
      const answer = upstream.resolve(name, type);
      const entry = { until: now() + ttlMs, answer };
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
      entries.set(key, entry);
      answer.catch((err: { code?: string }) => {
        if (!NEGATIVE.has(err?.code ?? '') && entries.get(key) === entry) entries.delete(key);
      });
      return answer;
    },
  };
}
