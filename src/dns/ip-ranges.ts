// Addresses and CIDR ranges from the configuration (trusted_proxies, metrics_allow) as a membership test, on
// node's net.BlockList. An IPv4 address written IPv4-mapped (::ffff:192.0.2.1, as a dual-stack listener
// reports it) is the IPv4 address it maps.
import { BlockList, isIP } from 'node:net';

export type RangeTest = (ip: string) => boolean;

/** One client however its address was written: IPv4-mapped IPv6 is plain IPv4, letters in lower case. */
export const plainAddress = (raw: string) => raw.trim().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '').toLowerCase();

/** Whether an address lies in any of `ranges` (as config-values.ts's addressRanges checked them). */
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
