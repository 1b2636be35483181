// The MTA-STS policy the box publishes for a domain that receives mail here (RFC 8461 3.2): its text, the id
// its _mta-sts TXT record carries, and a reading of a fetched policy for the checks. Pure: no lookups, no I/O.
import { createHash } from 'node:crypto';

export type MtaStsMode = 'testing' | 'enforce';
export const MTA_STS_MODES: readonly MtaStsMode[] = ['testing', 'enforce'];

/** RFC 8461 3.3: the policy's well-known path on the policy host. */
export const MTA_STS_PATH = '/.well-known/mta-sts.txt';
export const POLICY_HOST_PREFIX = 'mta-sts';
/** A week: long enough that a sender keeps the policy across an outage, short enough to retire it. */
export const MTA_STS_MAX_AGE = 604_800;

export const policyHost = (domain: string) => `${POLICY_HOST_PREFIX}.${domain}`;
export const policyUrl = (domain: string, port = 443) => `https://${policyHost(domain)}${port === 443 ? '' : `:${port}`}${MTA_STS_PATH}`;

/** RFC 8461 3.2: key/value lines ended by CRLF; one `mx` line per MX host (here, only the box). */
export function policyText(p: { mode: MtaStsMode; mx: string }): string {
  return ['version: STSv1', `mode: ${p.mode}`, `mx: ${p.mx}`, `max_age: ${MTA_STS_MAX_AGE}`].map((line) => `${line}\r\n`).join('');
}

/**
 * RFC 8461 3.1: 1-32 alphanumerics that change whenever the policy does. Taken from a hash of the text, so a
 * new mode or a new hostname changes it by itself, and the id in DNS tells which policy it announces.
 */
export const policyId = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 20);

export interface ParsedPolicy {
  version: string | null;
  mode: string | null;
  mx: string[];
  maxAge: number | null;
}

/** Reads a policy as a sender would (RFC 8461 3.2): LF or CRLF lines, unknown keys ignored. */
export function parsePolicy(text: string): ParsedPolicy {
  const policy: ParsedPolicy = { version: null, mode: null, mx: [], maxAge: null };
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (key === 'version' && policy.version === null) policy.version = value;
    else if (key === 'mode' && policy.mode === null) policy.mode = value;
    else if (key === 'mx') policy.mx.push(value.toLowerCase());
    else if (key === 'max_age' && policy.maxAge === null) policy.maxAge = /^\d{1,10}$/.test(value) ? Number(value) : null;
  }
  return policy;
}

/** Does an `mx` pattern of a policy name the host? A leading `*.` matches one label (RFC 8461 4.1). */
export function mxMatches(pattern: string, host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  const p = pattern.toLowerCase().replace(/\.$/, '');
  if (p.startsWith('*.')) return h.endsWith(p.slice(1)) && !h.slice(0, -(p.length - 1)).includes('.') && h.length > p.length - 1;
  return h === p;
}

/** The id of a `v=STSv1; id=...;` TXT record (RFC 8461 3.1), or null when the record is not one. */
export function stsRecordId(record: string): string | null {
  const tags = new Map(
    record
      .split(';')
      .map((t) => t.trim())
      .filter((t) => t.includes('='))
      .map((t) => [t.slice(0, t.indexOf('=')).trim(), t.slice(t.indexOf('=') + 1).trim()] as const),
  );
  if (tags.get('v') !== 'STSv1') return null;
  const id = tags.get('id') ?? '';
  return /^[A-Za-z0-9]{1,32}$/.test(id) ? id : null;
}
