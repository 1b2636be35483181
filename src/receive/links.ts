// URI blocklists for received mail: the analyze threads find the domains a message links to (at
// most MAX_LINK_DOMAINS, filter/tokens.ts linkDomains) and ask about each over a channel the main thread
// answers (dns/remote.ts), where one cache with the door's DNS blocklists serves every thread, the metrics
// count and listings are logged. The lookups run while the message is authenticated, inside its analysis
// budget; none holds the writer, and the 250 still waits for the commit.
import type { Config } from '../config/config.ts';
import type { Blocklists } from '../dns/blocklist.ts';
import type { DnsLookup } from '../dns/cache.ts';
import type { Log } from '../log.ts';
import { uriblSignal } from '../filter/door.ts';
import type { Signal } from '../filter/signals.ts';

/** Domains of one message looked up: enough for a spam run's few landing pages, bounded for a link farm. */
export const MAX_LINK_DOMAINS = 20;

/** The channel's "record type" for a URI blocklist question, told apart from the DNS lookups of authentication. */
const URIBL = 'URIBL';

/** The main thread's side: a domain's listings in every `uribl` zone at once, as Signals (none when not listed). */
export function linkListings(config: Pick<Config, 'uribl'>, blocklists: Blocklists, log: Log): DnsLookup {
  return {
    async resolve(domain, type) {
      if (type !== URIBL) throw Object.assign(new Error(`not a URI blocklist question: ${type}`), { code: 'ENOTIMP' });
      const found = await Promise.all(config.uribl.map((zone) => blocklists.lookup('uribl', zone, domain)));
      const listed = found.filter((l) => l.outcome === 'listed');
      for (const l of listed) log.info('link domain listed in a URI blocklist', { domain, zone: l.zone, codes: l.codes });
      return listed.map((l) => uriblSignal(l.zone, domain, l.codes)) satisfies Signal[];
    },
  };
}

/** The analyze thread's side: the listings of every domain, asked at once; a failed question counts as none. */
export async function askLinks(remote: DnsLookup, domains: readonly string[]): Promise<Signal[]> {
  const answers = await Promise.all(domains.map((d) => (remote.resolve(d, URIBL) as Promise<Signal[]>).catch((): Signal[] => [])));
  return answers.flat();
}
