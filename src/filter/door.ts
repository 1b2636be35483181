// The evidence the door hands the spam filter: Signals about the sending server (a blocklist listing
// it, its reverse DNS, its HELO) and about the domains a message links to, in the words an owner reads on the
// email's `spam.signals`. Pure: the lookups are dns/blocklist.ts's and the session's are smtp/door.ts's.
import { isIP } from 'node:net';
import { plainAddress, v6ToBigInt } from '../dns/ip-ranges.ts';
import type { Signal } from './signals.ts';

/** How far each piece of evidence leans, as a spam probability (signals.ts): none decides alone but a listing. */
export const DOOR_WEIGHTS = {
  /** A DNS blocklist in score mode lists the client. */
  dnsbl: 0.95,
  /** A URI blocklist lists a domain the message links to. */
  uribl: 0.9,
  /** The client's address has no PTR record, or its lookup failed. */
  noPtr: 0.7,
  /** The PTR names a host whose A/AAAA records do not include the client's address. */
  ptrNotConfirmed: 0.65,
  /** The forward lookup of the PTR name did not answer in time. */
  ptrUnconfirmed: 0.55,
  /** The client said HELO with the box's own name or one of its domains. */
  heloOurs: 0.9,
  /** The client said HELO with an address that is not its own. */
  heloOtherAddress: 0.8,
  /** The client said HELO with its own address, unbracketed (RFC 5321 4.1.3 wants [192.0.2.1]). */
  heloBareAddress: 0.6,
} as const;

export function dnsblSignal(zone: string, ip: string, codes: readonly string[]): Signal {
  return { kind: 'dnsbl', detail: `The sending server ${ip} is listed in ${zone} (${codes.join(', ')})`, weight: DOOR_WEIGHTS.dnsbl };
}

export function uriblSignal(zone: string, domain: string, codes: readonly string[]): Signal {
  return { kind: 'uribl', detail: `The message links to ${domain}, which is listed in ${zone} (${codes.join(', ')})`, weight: DOOR_WEIGHTS.uribl };
}

/**
 * The client's forward-confirmed reverse DNS: its PTR name (null when it has none or the lookup failed) and
 * whether that name's A/AAAA records include its address ('unknown': they could not be asked in time).
 * Nothing when it is confirmed.
 */
export function rdnsSignal(ip: string, ptr: string | null, confirmed: 'yes' | 'no' | 'unknown'): Signal | null {
  if (ptr === null) return { kind: 'rdns', detail: `The sending server ${ip} has no reverse DNS (PTR) name`, weight: DOOR_WEIGHTS.noPtr };
  if (confirmed === 'yes') return null;
  if (confirmed === 'no') return { kind: 'rdns', detail: `The reverse DNS name of ${ip}, ${ptr}, does not point back to it`, weight: DOOR_WEIGHTS.ptrNotConfirmed };
  return { kind: 'rdns', detail: `The reverse DNS name of ${ip}, ${ptr}, could not be confirmed: its address lookup did not answer`, weight: DOOR_WEIGHTS.ptrUnconfirmed };
}

/**
 * What the client's HELO/EHLO name says of it: claiming the box's own name or one of its domains (a stranger
 * pretending to be us), or an address literal that is not the client's own (RFC 5321 4.1.3 writes one
 * [192.0.2.1] or [IPv6:2001:db8::1]; an unbracketed address is itself a mark of hand-rolled senders).
 */
export function heloSignal(helo: string, ip: string, ours: { hostname: string; isOurDomain: (name: string) => boolean }): Signal | null {
  const name = heloName(helo);
  if (!name) return null;
  const literal = /^\[(?:ipv6:)?([^\]]+)\]$/.exec(name)?.[1];
  const address = literal ?? (isIP(name) ? name : null);
  if (address !== null) {
    if (!sameAddress(address, ip)) return { kind: 'helo', detail: `The sending server ${ip} introduced itself (HELO) as ${helo.trim()}, another address`, weight: DOOR_WEIGHTS.heloOtherAddress };
    if (literal === undefined) return { kind: 'helo', detail: `The sending server introduced itself (HELO) with its bare address ${helo.trim()} instead of a host name`, weight: DOOR_WEIGHTS.heloBareAddress };
    return null;
  }
  if (name === ours.hostname || ours.isOurDomain(name)) {
    return { kind: 'helo', detail: `The sending server ${ip} introduced itself (HELO) as ${name}, this box's own name`, weight: DOOR_WEIGHTS.heloOurs };
  }
  return null;
}

/** The name a HELO gives, as heloSignal judges it: lower case, without a final dot. */
export const heloName = (helo: string) => helo.trim().toLowerCase().replace(/\.$/, '');

function sameAddress(a: string, b: string): boolean {
  const [x, y] = [plainAddress(a), plainAddress(b)];
  if (isIP(x) === 0 || isIP(x) !== isIP(y)) return false;
  return x === y || (isIP(x) === 6 && v6ToBigInt(x) === v6ToBigInt(y));
}
