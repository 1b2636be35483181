// Addresses and CIDR ranges from the configuration (trusted_proxies, metrics_allow) as a membership test, on
// node's net.BlockList. An IPv4 address written IPv4-mapped (::ffff:192.0.2.1, as a dual-stack listener
// reports it) is the IPv4 address it maps.
import { BlockList, isIP } from 'node:net';

export type RangeTest = (ip: string) => boolean;

/** One client however its address was written: IPv4-mapped IPv6 is plain IPv4, letters in lower case. */
export const plainAddress = (raw: string) => raw.trim().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '').toLowerCase();

/** Whether an address lies in any of `ranges` (as config/values.ts's addressRanges checked them). */
export function inRanges(ranges: readonly string[]): RangeTest {
  if (ranges.length === 0) return () => false;
  const list = new BlockList();
  for (const range of ranges) {
    const [ip, bits] = range.split('/');
    const family = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(plainAddress(ip), family);
    else list.addSubnet(plainAddress(ip), Number(bits), family);
  }
  return (raw) => {
    const ip = plainAddress(raw);
    const family = isIP(ip);
    return family !== 0 && list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/**
 * The network an address belongs to, the unit one operator usually holds: its IPv4 /24 ("192.0.2.0/24", the
 * smallest block routed on the Internet) or its IPv6 /64 ("2001:db8:1:2::/64", one link: RFC 4291 2.5.1 gives
 * interface ids 64 bits, so one host may use a whole /64). Written the same however the address was
 * (IPv4-mapped, upper case, leading zeros, an embedded IPv4 tail, a zone).
 */
export function networkOf(raw: string): string {
  const ip = plainAddress(raw).replace(/%.*$/, '');
  const family = isIP(ip);
  if (family === 4) return `${ip.slice(0, ip.lastIndexOf('.'))}.0/24`;
  if (family !== 6) return ip;
  const top = v6ToBigInt(ip) >> 64n;
  const prefix = [48n, 32n, 16n, 0n].map((shift) => ((top >> shift) & 0xffffn).toString(16));
  // RFC 5952 4.2: the zeros at the end of the prefix join the "::" (always the longest run of zeros here).
  while (prefix.at(-1) === '0') prefix.pop();
  return `${prefix.join(':')}::/64`;
}

/**
 * A client as per-client limits count it: an IPv4 address, or an IPv6 address's /64, the smallest network a
 * host is given (RFC 6177), so one host cannot count as 2^64 clients.
 */
export const clientKey = (ip: string): string => (isIP(plainAddress(ip)) === 6 ? networkOf(ip) : plainAddress(ip));

/** An IPv6 address (net.isIPv6 said yes) as a 128-bit number: '::', a zone index and a dotted IPv4 tail handled. */
export function v6ToBigInt(address: string): bigint {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number);
    text = text.slice(0, tail.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = rest === undefined ? [] : rest ? rest.split(':') : [];
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)), 0n);
}
