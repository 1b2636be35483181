// The MX listener's look at a client before it takes a message: the DNS blocklists of `dnsbl`
// (a listing in a refuse-mode zone is answered 554 5.7.1 naming the list), and the door's evidence for the
// spam filter: score-mode listings, the client's forward-confirmed reverse DNS, its HELO name. The client is
// judged once per session, at its first accepted RCPT, like Postfix's reject_rbl_client among its recipient
// restrictions: a client that never names a recipient of ours (a scanner, a dictionary attack answered 550)
// costs no lookup, and a refusal is logged with the sender and recipient it stopped.
import type { Resolver } from 'node:dns/promises';
import { isIPv6 } from 'node:net';
import type { App } from '../context.ts';
import { SmtpError } from '../errors.ts';
import { BLOCKLISTED } from '../metrics/metrics.ts';
import { withTimeout, type Blocklists, type Lookup } from '../dns/blocklist.ts';
import { cachingLookup, type DnsLookup } from '../dns/cache.ts';
import { v6ToBigInt } from '../dns/ip-ranges.ts';
import { holderOf } from '../domains/claims.ts';
import { dnsblSignal, heloName, heloSignal, rdnsSignal } from '../filter/door.ts';
import type { Signal } from '../filter/signals.ts';

export interface ClientVerdict {
  /** The 554 for a client listed in a refuse-mode zone; null lets it in. */
  refusal: SmtpError | null;
  /** Evidence for the spam filter: score-mode listings, reverse DNS. */
  evidence: Signal[];
}

/**
 * The box's own loopback address is the box itself (a local program, `mailwright try`'s swaks): its reverse DNS
 * and HELO say nothing of a stranger. The rest of 127.0.0.0/8 is judged like anyone, so tests can play clients.
 */
const itself = (ip: string) => ip === '127.0.0.1' || ip === '::1';

export class Door {
  private readonly forward: DnsLookup;

  /** `resolver`: the configured resolvers with dnsbl_timeout (the forward half of FCrDNS asks through it). */
  constructor(private readonly app: App, private readonly blocklists: Blocklists, resolver: Resolver) {
    this.forward = cachingLookup(resolver);
  }

  /** A client at its first accepted RCPT: `ptr` is its PTR name (smtp-server's lookup), null when it has none. */
  async judge(client: { session: string; ip: string; ptr: string | null }): Promise<ClientVerdict> {
    const { config, log } = this.app;
    const wanted = config.spamFilter !== 'off';
    const [listings, rdns] = await Promise.all([
      Promise.all(config.dnsbl.map(async ({ zone, action }) => ({ ...(await this.blocklists.lookup('dnsbl', zone, client.ip)), action }))),
      wanted && !itself(client.ip) ? this.reverseDns(client.ip, client.ptr) : null,
    ]);
    const listed = listings.filter((l) => l.outcome === 'listed');
    for (const l of listed) log.info('client listed in a DNS blocklist', { session: client.session, ip: client.ip, zone: l.zone, codes: l.codes, action: l.action });
    const refusing = listed.find((l) => l.action === 'refuse');
    const evidence = wanted ? listed.filter((l) => l.action === 'score').map((l) => dnsblSignal(l.zone, client.ip, l.codes)) : [];
    if (rdns) evidence.push(rdns);
    return { refusal: refusing ? await this.refusal(refusing, client.ip) : null, evidence };
  }

  /** The HELO name's evidence, judged at DATA with the name the client gave last (RFC 5321 4.1.4: EHLO may come again). */
  async helo(helo: string, ip: string): Promise<Signal | null> {
    const { config, store } = this.app;
    if (config.spamFilter === 'off' || itself(ip)) return null;
    const name = heloName(helo);
    const ours = name !== '' && (await store.read(holderOf(name)))?.name === name;
    return heloSignal(helo, ip, { hostname: config.hostname, isOurDomain: () => ours });
  }

  /** Postfix's wording, which senders' postmasters know; the list's TXT reason (often a lookup link) when it has one in time. */
  private async refusal(listing: Lookup, ip: string): Promise<SmtpError> {
    const reason = await this.blocklists.reason('dnsbl', listing.zone, ip);
    return new SmtpError(554, `5.7.1 Service unavailable; client [${ip}] blocked using ${listing.zone}${reason ? `; ${reason}` : ''}`, BLOCKLISTED);
  }

  /** Forward-confirmed reverse DNS: the PTR name's A (or AAAA) records must include the client's address. */
  private async reverseDns(ip: string, ptr: string | null): Promise<Signal | null> {
    if (ptr === null) return rdnsSignal(ip, null, 'no');
    const v6 = isIPv6(ip);
    try {
      const addresses = (await withTimeout(this.forward.resolve(ptr, v6 ? 'AAAA' : 'A'), this.app.config.dnsblTimeout)) as string[];
      const same = (a: string) => (v6 ? isIPv6(a) && v6ToBigInt(a) === v6ToBigInt(ip) : a === ip);
      return rdnsSignal(ip, ptr, addresses.some(same) ? 'yes' : 'no');
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      return rdnsSignal(ip, ptr, code === 'ENOTFOUND' || code === 'ENODATA' ? 'no' : 'unknown');
    }
  }
}
