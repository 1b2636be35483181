// DNS from a Map, for the benchmarks that run mailauth without a DNS server (analyze-profile.ts, the inbound
// floor): what the analyze worker's answer cache gives once it holds every answer, no lookup waiting on a socket.
import type { DnsLookup } from '../../src/dns/cache.ts';

/** Answers keyed `TYPE name` (lower case); any other name does not exist. */
export function mapLookup(records: Map<string, unknown[]>): DnsLookup {
  return {
    async resolve(name, type) {
      const answer = records.get(`${type} ${name.toLowerCase()}`);
      if (answer) return answer;
      throw Object.assign(new Error(`query${type} ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    },
  };
}

/**
 * The records a sending client at 127.0.0.1 has: its HELO name's A record and 127.0.0.1's PTR naming it, and its
 * envelope domain's SPF (ip4:127.0.0.1) and DMARC (p=none), as the inbound benchmark's DNS server publishes them.
 */
export function senderRecords(client: string, senderDomain: string): Map<string, unknown[]> {
  return new Map<string, unknown[]>([
    [`A ${client}`, ['127.0.0.1']],
    ['PTR 1.0.0.127.in-addr.arpa', [client]],
    [`TXT ${senderDomain}`, [['v=spf1 ip4:127.0.0.1 -all']]],
    [`TXT _dmarc.${senderDomain}`, [['v=DMARC1; p=none']]],
  ]);
}
