// Which addresses a request from the box must never reach (OWASP SSRF cheat sheet, catalogue API-10 and
// SEC-02): the box itself, its LAN, the cloud metadata service, nothing routable, and IPv6 addresses that a
// transition mechanism (6to4, Teredo, NAT64, SIIT) turns back into one of those IPv4 addresses.
import net from 'node:net';
import { v6ToBigInt } from './ip-ranges.ts';

const V4_BLOCKED: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'a "this network" address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];
const V6_BLOCKED: Array<[string, number, string]> = [
  ['::', 128, 'the unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['fc00::', 7, 'a unique-local address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
  // RFC 8215: a NAT64 prefix for one network's own translators, so whatever it embeds is reached from inside.
  ['64:ff9b:1::', 48, 'a local-use NAT64 address (RFC 8215)'],
];

const LOW32 = 0xffffffffn;

/** IPv6 forms that carry IPv4 addresses a packet to them ends up reaching: each its prefix, its name, and the IPv4 addresses it carries. */
const V6_EMBEDDING_V4: Array<{ base: string; bits: number; name: string; embedded: (value: bigint) => bigint[] }> = [
  // RFC 4291 2.5.5.2; the deprecated IPv4-compatible form (2.5.5.1); RFC 2765 SIIT's IPv4-translated form.
  { base: '::ffff:0:0', bits: 96, name: 'IPv4-mapped', embedded: (v) => [v & LOW32] },
  { base: '::', bits: 96, name: 'IPv4-compatible', embedded: (v) => [v & LOW32] },
  { base: '::ffff:0:0:0', bits: 96, name: 'SIIT IPv4-translated (RFC 2765)', embedded: (v) => [v & LOW32] },
  // RFC 6052: a NAT64 gateway translates to 169.254.169.254 as readily as to anything else.
  { base: '64:ff9b::', bits: 96, name: 'NAT64 (RFC 6052)', embedded: (v) => [v & LOW32] },
  // RFC 3056 2: 2002:V4ADDR::/48, the relay's IPv4 address in bits 16-47.
  { base: '2002::', bits: 16, name: '6to4 (RFC 3056)', embedded: (v) => [(v >> 80n) & LOW32] },
  // RFC 4380 4: the Teredo server's IPv4 address in bits 32-63, the client's in the last 32, every bit inverted.
  { base: '2001::', bits: 32, name: 'Teredo (RFC 4380)', embedded: (v) => [(v >> 64n) & LOW32, ~v & LOW32] },
];

/** Why an address must not be fetched from, or null when it is a public address. */
export function blockedReason(address: string): string | null {
  if (net.isIPv4(address)) return v4Reason(address);
  if (!net.isIPv6(address)) return 'not an IP address';
  const value = v6ToBigInt(address);
  for (const [base, bits, why] of V6_BLOCKED) if (inPrefix(value, v6ToBigInt(base), bits, 128)) return why;
  for (const { base, bits, name, embedded } of V6_EMBEDDING_V4) {
    if (!inPrefix(value, v6ToBigInt(base), bits, 128)) continue;
    for (const v4 of embedded(value)) {
      const dotted = v4Dotted(Number(v4));
      const why = v4Reason(dotted);
      if (why) return `${why} (${dotted}) embedded in IPv6 as ${name}`;
    }
  }
  return null;
}

function v4Reason(address: string): string | null {
  if (address === '255.255.255.255') return 'the broadcast address';
  const value = BigInt(v4ToInt(address));
  for (const [base, bits, why] of V4_BLOCKED) if (inPrefix(value, BigInt(v4ToInt(base)), bits, 32)) return why;
  return null;
}

function inPrefix(value: bigint, base: bigint, bits: number, width: number): boolean {
  const shift = BigInt(width - bits);
  return value >> shift === base >> shift;
}

function v4ToInt(address: string): number {
  return address.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

const v4Dotted = (v4: number) => [v4 >>> 24, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255].join('.');
