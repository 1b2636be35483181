// Domain names as people type them -> the one ASCII form the box stores and looks up: IDNs become punycode
// (UTS #46 via the URL parser), case and one trailing dot are dropped, and anything that is not a plain
// host name (IP literals, ports, paths, spaces, underscores, single labels) is refused with the reason.
import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

export function normaliseDomain(input: string): { ok: true; name: string } | { ok: false; reason: string } {
  const raw = input.trim();
  if (!raw) return { ok: false, reason: 'is required' };
  if (raw.length > 253 + 1) return { ok: false, reason: 'is longer than 253 characters' };
  // The URL parser would quietly cut these off ("example.com/x" -> "example.com"): refuse them instead.
  if (/[\s/\\:@?#[\]%,;*"'<>()]/.test(raw)) return { ok: false, reason: 'must be a bare domain name such as example.com, without scheme, port, path or spaces' };
  const withoutDot = raw.endsWith('.') ? raw.slice(0, -1) : raw;
  if (isIP(withoutDot) || /^[\d.]+$/.test(withoutDot)) return { ok: false, reason: 'must be a domain name, not an IP address' };
  const ascii = domainToASCII(withoutDot);
  if (!ascii) return { ok: false, reason: 'is not a valid domain name' };
  const labels = ascii.split('.');
  if (labels.length < 2) return { ok: false, reason: 'must have at least two labels, such as example.com' };
  if (ascii.length > 253 || !labels.every((l) => LABEL.test(l))) return { ok: false, reason: 'must consist of letters, digits and hyphens between dots (labels of 1 to 63 characters)' };
  if (/^\d+$/.test(labels.at(-1)!)) return { ok: false, reason: 'must end in a top-level domain, not a number' };
  return { ok: true, name: ascii };
}
