// An MTA-STS policy file (RFC 8461 3.2) parsed strictly, and which MX hosts it allows (RFC 8461 4.1). Pure:
// it must not fetch, look up or store anything.
import { mxMatches } from '../../dns/mta-sts-policy.ts';

export type StsMode = 'enforce' | 'testing' | 'none';

export interface StsPolicy {
  mode: StsMode;
  /** Seconds, at most RFC 8461's 31557600 (about a year). */
  maxAge: number;
  /** Host names and `*.` wildcards, lower case, without a trailing dot. */
  mx: string[];
}

export const MAX_AGE_LIMIT = 31_557_600;

export class PolicyInvalid extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyInvalid';
  }
}

const HOST = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/;

/** Throws PolicyInvalid naming the first problem; unknown keys are ignored (RFC 8461 3.2 "extension"). */
export function parsePolicy(text: string): StsPolicy {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  const fields: Array<[string, string]> = [];
  for (const line of lines) {
    const at = line.indexOf(':');
    if (at <= 0) throw new PolicyInvalid(`line ${JSON.stringify(line.slice(0, 80))} is not "key: value"`);
    fields.push([line.slice(0, at).trim(), line.slice(at + 1).trim()]);
  }
  const one = (key: string) => fields.find(([k]) => k === key)?.[1];
  if (one('version') !== 'STSv1') throw new PolicyInvalid(`version must be STSv1, got ${JSON.stringify(one('version') ?? null)}`);
  const mode = one('mode');
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none') throw new PolicyInvalid(`mode must be enforce, testing or none, got ${JSON.stringify(mode ?? null)}`);
  const age = one('max_age');
  if (!age || !/^\d{1,10}$/.test(age)) throw new PolicyInvalid(`max_age must be a number of seconds, got ${JSON.stringify(age ?? null)}`);
  const mx = fields.filter(([k]) => k === 'mx').map(([, v]) => v.toLowerCase().replace(/\.$/, ''));
  for (const pattern of mx) {
    const host = pattern.startsWith('*.') ? pattern.slice(2) : pattern;
    if (!HOST.test(host)) throw new PolicyInvalid(`mx ${JSON.stringify(pattern)} is not a host name or a *. wildcard`);
  }
  if (mode !== 'none' && mx.length === 0) throw new PolicyInvalid(`a policy in mode ${mode} must name at least one mx`);
  return { mode, maxAge: Math.min(Number(age), MAX_AGE_LIMIT), mx };
}

/** RFC 8461 4.1: an exact name, or `*.` standing for exactly one leftmost label (dns/mta-sts-policy.ts). */
export const mxAllowed = (policy: Pick<StsPolicy, 'mx'>, host: string): boolean => policy.mx.some((pattern) => mxMatches(pattern, host));
