// The network a client address belongs to, as the key under which work for that client is shared fairly
// (receive/analyzer.ts): an IPv4 /24 or an IPv6 /64, what one hosting customer or one home line usually holds,
// so a sender cannot claim more than its share by spreading its sessions over neighbouring addresses.
import { isIP } from 'node:net';
import { plainAddress } from './ip-ranges.ts';

/** "192.0.2.0/24", "2001:db8:0:1::/64"; anything that is not an IP address, as it was written. */
export function clientNetwork(raw: string): string {
  const ip = plainAddress(raw).replace(/%.*$/, '');
  const family = isIP(ip);
  if (family === 4) return `${ip.split('.').slice(0, 3).join('.')}.0/24`;
  if (family === 6) return `${groupsOf(ip).slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
  return ip;
}

/** The eight 16-bit groups of a valid IPv6 address ("::" filled in, a trailing dotted IPv4 as two groups). */
function groupsOf(ip: string): number[] {
  const part = (s: string) =>
    s === ''
      ? []
      : s.split(':').flatMap((g) => {
          if (!g.includes('.')) return [parseInt(g, 16)];
          const [a, b, c, d] = g.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head, tail] = ip.split('::');
  const before = part(head);
  const after = tail === undefined ? [] : part(tail);
  return [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after];
}
