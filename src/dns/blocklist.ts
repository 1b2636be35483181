// DNS blocklists (RFC 5782): the name an address or a domain is asked as in a zone, what an answer means, and
// the lookups themselves through the configured resolvers, each bounded by a short timeout, answers kept for
// their TTL in a bounded cache. Whatever goes wrong (a timeout, SERVFAIL, an answer no list gives as a
// listing) is "not listed": a DNS problem must never refuse mail. Decides nothing about mail itself.
import { isIPv4 } from 'node:net';
import { plainAddress, v6ToBigInt } from './ip-ranges.ts';

export type ListKind = 'dnsbl' | 'uribl';

/**
 * listed: an answer in 127.0.0.0/8 that means a listing; clear: NXDOMAIN or no A record; unusable: an answer
 * that is no listing (outside 127.0.0.0/8, 127.0.0.1, a list's error code such as Spamhaus's 127.255.255.254
 * for queries through a public resolver); timeout and error: no answer in time, or a failure.
 */
export type Outcome = 'listed' | 'clear' | 'unusable' | 'timeout' | 'error';

export interface Lookup {
  zone: string;
  /** What was asked about: the address or the domain. */
  subject: string;
  outcome: Outcome;
  /** The 127.x answers: the listing codes when listed, the error codes when unusable. */
  codes: string[];
}

/** What the lookups need of node's Resolver. */
export interface BlocklistResolver {
  resolve4(name: string, opts: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>;
  resolveTxt(name: string): Promise<string[][]>;
}

export interface BlocklistOptions {
  /** How long one lookup may take (config dnsbl_timeout). */
  timeoutMs: number;
  maxEntries?: number;
  now?: () => number;
  /** Every query actually sent (a cached answer is not one), by its outcome: metrics. */
  observe?: (kind: ListKind, zone: string, outcome: Outcome) => void;
  /** Said once per zone and code: a zone answering what is no listing is set up wrong or refuses us. */
  warn?: (message: string, fields: Record<string, unknown>) => void;
}

// c-ares gives no SOA minimum with NXDOMAIN: "not listed" is kept this long. A listing is kept for its TTL,
// within these bounds (a TTL of 0 would ask again for every client; a day-long one would outlive a delisting).
const NEGATIVE_TTL_MS = 60_000;
const MIN_TTL_MS = 10_000;
const MAX_TTL_MS = 3_600_000;
const MAX_REASON = 200;
// c-ares gives no TTL with TXT records: a listing's reason is kept this long.
const REASON_TTL_MS = 300_000;

/**
 * The labels an address is asked as (RFC 5782 2.1, 2.4): an IPv4 address's octets reversed
 * (192.0.2.1 -> 1.2.0.192), an IPv6 address's 32 nibbles reversed, dot-separated.
 */
export function reversedAddress(raw: string): string {
  const ip = plainAddress(raw);
  if (isIPv4(ip)) return ip.split('.').reverse().join('.');
  return [...v6ToBigInt(ip).toString(16).padStart(32, '0')].reverse().join('.');
}

/** The name asked of `zone` about an address (dnsbl) or a domain (uribl, RFC 5782 2.3). */
export const queryName = (kind: ListKind, zone: string, subject: string): string =>
  `${kind === 'dnsbl' ? reversedAddress(subject) : subject.toLowerCase().replace(/\.$/, '')}.${zone}`;

/**
 * What the A records of a blocklist answer mean. RFC 5782 2.1 and 5: listings are in 127.0.0.0/8 and
 * 127.0.0.1 is never one; Spamhaus answers 127.255.255.252, .254 and .255 for a malformed query, a query
 * through a public resolver and too many queries, and 127.0.1.255 when an address is asked of its DBL.
 */
export function meaning(addresses: readonly string[]): { outcome: 'listed' | 'clear' | 'unusable'; codes: string[] } {
  if (addresses.length === 0) return { outcome: 'clear', codes: [] };
  const listed = addresses.filter(isListingCode);
  return listed.length ? { outcome: 'listed', codes: listed } : { outcome: 'unusable', codes: [...addresses] };
}

function isListingCode(a: string): boolean {
  return /^127\.\d+\.\d+\.\d+$/.test(a) && a !== '127.0.0.1' && !a.startsWith('127.255.255.') && a !== '127.0.1.255';
}

interface Entry {
  until: number;
  answer: Promise<unknown>;
}

/** What an asking gives the cache: the answer, and how long it holds (0: not kept, a failure). */
type Asked<T> = { value: T; ttlMs: number };

const NEGATIVE = new Set(['ENOTFOUND', 'ENODATA']);

/** A lookup that did not answer within its time (withTimeout). */
export class DnsTimeout extends Error {
  readonly code = 'ETIMEOUT';
}

/** The query's answer, or a DnsTimeout after `ms`; a late answer is dropped. */
export function withTimeout<T>(query: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DnsTimeout(`no answer within ${ms} ms`)), ms);
  });
  query.catch(() => undefined);
  return Promise.race([query, late]).finally(() => clearTimeout(timer));
}

export class Blocklists {
  private readonly entries = new Map<string, Entry>();
  private readonly warned = new Set<string>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(private readonly resolver: BlocklistResolver, private readonly opts: BlocklistOptions) {
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  /** An address (dnsbl) or a domain (uribl) looked up in `zone`; never rejects. */
  async lookup(kind: ListKind, zone: string, subject: string): Promise<Lookup> {
    const name = queryName(kind, zone, subject);
    const found = await this.cached(`A ${name}`, () => this.ask(kind, zone, name));
    if (found.outcome === 'unusable') this.warnOnce(zone, found.codes);
    return { zone, subject, ...found };
  }

  /** The zone's TXT record for a listed name (its reason, often a link), printable and short; null if none in time. */
  async reason(kind: ListKind, zone: string, subject: string): Promise<string | null> {
    const name = queryName(kind, zone, subject);
    return this.cached(`TXT ${name}`, async (): Promise<Asked<string | null>> => {
      try {
        const txt = await withTimeout(this.resolver.resolveTxt(name), this.opts.timeoutMs);
        const text = txt.map((parts) => parts.join('')).join(' ').replace(/[^\x20-\x7e]/g, '').trim();
        return { value: text ? text.slice(0, MAX_REASON) : null, ttlMs: REASON_TTL_MS };
      } catch (err) {
        return { value: null, ttlMs: NEGATIVE.has((err as { code?: string }).code ?? '') ? REASON_TTL_MS : 0 };
      }
    });
  }

  /** The answer for `key`: from the cache while it holds (one query for concurrent askers), else asked. */
  private cached<T>(key: string, ask: () => Promise<Asked<T>>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && hit.until > this.now()) return hit.answer as Promise<T>;
    this.entries.delete(key);
    const entry: Entry = { until: Infinity, answer: Promise.resolve() };
    const answer = ask().then(({ value, ttlMs }) => {
      // A failure is not kept: the next client asks again.
      if (ttlMs > 0) entry.until = this.now() + ttlMs;
      else if (this.entries.get(key) === entry) this.entries.delete(key);
      return value;
    });
    entry.answer = answer;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, entry);
    return answer;
  }

  private async ask(kind: ListKind, zone: string, name: string): Promise<Asked<{ outcome: Outcome; codes: string[] }>> {
    let result: Asked<{ outcome: Outcome; codes: string[] }>;
    try {
      const records = await withTimeout(this.resolver.resolve4(name, { ttl: true }), this.opts.timeoutMs);
      const ttl = Math.min(...records.map((r) => r.ttl)) * 1000;
      result = { value: meaning(records.map((r) => r.address)), ttlMs: Math.max(MIN_TTL_MS, Math.min(MAX_TTL_MS, ttl)) };
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      const outcome = err instanceof DnsTimeout || code === 'ETIMEOUT' ? 'timeout' : NEGATIVE.has(code) ? 'clear' : 'error';
      result = { value: { outcome, codes: [] }, ttlMs: outcome === 'clear' ? NEGATIVE_TTL_MS : 0 };
    }
    this.opts.observe?.(kind, zone, result.value.outcome);
    return result;
  }

  private warnOnce(zone: string, codes: string[]): void {
    const key = `${zone} ${codes.join(',')}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    const spamhaus = codes.some((c) => c.startsWith('127.255.255.'));
    this.opts.warn?.(
      spamhaus
        ? `blocklist ${zone} refused the query (${codes.join(', ')}): Spamhaus answers this to queries through public or shared resolvers and past its free use; counted as not listed. Use a resolver of your own (dns_servers) or Spamhaus's Data Query Service`
        : `blocklist ${zone} gave an answer that is no listing (${codes.join(', ')}); counted as not listed`,
      { zone, codes },
    );
  }
}
