// Checks a domain's records against live DNS through the configured resolver. Each check ends verified,
// failed (DNS answered, and the answer is wrong or missing) or pending (DNS could not answer: SERVFAIL,
// timeout), so a transient failure is never mistaken for a broken record. SPF is evaluated for real
// (mailauth) against the box's own addresses, not matched as text.
import type { Resolver } from 'node:dns/promises';
import type { spf as Spf } from 'mailauth';
import { dkimName, dkimValue, dmarcName, dmarcValue, MX_PRIORITY, spfValue, type DomainDns, type RecordKind } from './records.ts';

export type CheckState = 'verified' | 'failed' | 'pending';

export interface DnsIssue {
  record: RecordKind | 'INBOUND_MX' | 'HOST';
  type: string;
  name: string;
  expected: string;
  found: string[];
  message: string;
}

export interface RecordCheck {
  record: RecordKind;
  /** 'ed25519' for the check of the second DKIM record (dkim_ed25519); records.ts recordSlot tells them apart. */
  algorithm?: 'ed25519';
  state: CheckState;
  issue?: DnsIssue;
}

export type Lookup<T> = { ok: true; value: T } | { ok: false; missing: true } | { ok: false; missing: false; code: string };

const MISSING = new Set(['ENOTFOUND', 'ENODATA']);

export async function lookup<T>(query: () => Promise<T>): Promise<Lookup<T>> {
  try {
    return { ok: true, value: await query() };
  } catch (err) {
    const code = String((err as NodeJS.ErrnoException).code ?? 'EUNKNOWN');
    return MISSING.has(code) ? { ok: false, missing: true } : { ok: false, missing: false, code };
  }
}

export const sameHost = (a: string, b: string) => a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '');

export function temporary(record: RecordKind, type: string, name: string, expected: string, code: string): RecordCheck {
  return { record, state: 'pending', issue: { record, type, name, expected, found: [], message: `DNS lookup of ${name} (${type}) failed temporarily (${code}); will check again` } };
}

export function failed(record: RecordKind, type: string, name: string, expected: string, found: string[], message: string): RecordCheck {
  return { record, state: 'failed', issue: { record, type, name, expected, found, message } };
}

// A TXT record may be split into several character-strings (a 2048-bit DKIM key must be): join them.
export const txtLookup = (resolver: Resolver, name: string) => lookup(async () => (await resolver.resolveTxt(name)).map((parts) => parts.join('')));

function dkimTags(record: string): Map<string, string> {
  return new Map(
    record
      .split(';')
      .map((t) => t.trim())
      .filter(Boolean)
      .map((t) => [t.slice(0, t.indexOf('=')).trim().toLowerCase(), t.slice(t.indexOf('=') + 1).replace(/\s+/g, '')] as const),
  );
}

function dkimKey(record: string): string | null {
  const tags = dkimTags(record);
  if (tags.has('v') && tags.get('v') !== 'DKIM1') return null;
  return tags.get('p') ?? null;
}

export async function checkDkim(resolver: Resolver, d: DomainDns): Promise<RecordCheck> {
  return checkDkimKey(resolver, d.domain, d.selector, d.publicKey, 'rsa');
}

/**
 * The ed25519 key's record (dkim_ed25519, RFC 8463): recommended, not required. A receiver takes k= from the
 * record (RSA when absent), so an ed25519 key must say k=ed25519.
 */
export async function checkDkimEd25519(resolver: Resolver, d: DomainDns & { ed25519: NonNullable<DomainDns['ed25519']> }): Promise<RecordCheck> {
  return { ...(await checkDkimKey(resolver, d.domain, d.ed25519.selector, d.ed25519.publicKey, 'ed25519')), algorithm: 'ed25519' };
}

async function checkDkimKey(resolver: Resolver, domain: string, selector: string, publicKey: string, algorithm: 'rsa' | 'ed25519'): Promise<RecordCheck> {
  const name = dkimName({ selector, domain });
  const expected = dkimValue(publicKey, algorithm);
  const missing =
    algorithm === 'ed25519'
      ? `No ed25519 DKIM record at ${name} (recommended: mail gets its second, ed25519 signature once DNS serves the TXT record shown)`
      : `No DKIM record at ${name}: publish the TXT record shown`;
  const txt = await txtLookup(resolver, name);
  if (!txt.ok) return txt.missing ? failed('DKIM', 'TXT', name, expected, [], missing) : temporary('DKIM', 'TXT', name, expected, txt.code);
  const keys = txt.value.map(dkimKey);
  if (txt.value.length === 1 && keys[0] === publicKey) {
    if (algorithm === 'rsa' || dkimTags(txt.value[0]!).get('k')?.toLowerCase() === 'ed25519') return { record: 'DKIM', state: 'verified' };
    return failed('DKIM', 'TXT', name, expected, txt.value, `The DKIM record at ${name} holds the ed25519 key but not k=ed25519, so receivers would read it as RSA`);
  }
  if (txt.value.length > 1) {
    const glued = txt.value.map((r) => r.replace(/\s+/g, '')).join('');
    const split = !keys.includes(publicKey) && glued.includes(publicKey);
    const message = split
      ? `The DKIM record at ${name} is published as ${txt.value.length} separate TXT records; publish it as one record (one record may hold several quoted strings)`
      : `${txt.value.length} TXT records at ${name}; publish exactly one, the DKIM record shown`;
    return failed('DKIM', 'TXT', name, expected, txt.value, message);
  }
  if (keys[0] === null) return failed('DKIM', 'TXT', name, expected, txt.value, `The TXT record at ${name} is not a DKIM key record`);
  if (keys[0] === '') return failed('DKIM', 'TXT', name, expected, txt.value, `The DKIM key at ${name} is revoked (empty p=); publish the key shown`);
  return failed('DKIM', 'TXT', name, expected, txt.value, `The DKIM key at ${name} differs from this box's key for selector ${selector}`);
}

export async function checkReturnPathMx(resolver: Resolver, d: DomainDns): Promise<RecordCheck> {
  const name = d.returnPath;
  const mx = await lookup(() => resolver.resolveMx(name));
  if (!mx.ok) {
    return mx.missing ? failed('MX', 'MX', name, d.hostname, [], `No MX record at ${name}: bounces could not reach the box`) : temporary('MX', 'MX', name, d.hostname, mx.code);
  }
  if (mx.value.some((r) => sameHost(r.exchange, d.hostname))) return { record: 'MX', state: 'verified' };
  const found = mx.value.map((r) => `${r.priority} ${r.exchange}`);
  return failed('MX', 'MX', name, d.hostname, found, `The MX of ${name} points at ${mx.value.map((r) => r.exchange).join(', ')}, not at ${d.hostname}`);
}

/** The addresses the box sends from, as the world sees MAILWRIGHT_HOSTNAME. */
export async function boxAddresses(resolver: Resolver, hostname: string): Promise<Lookup<string[]>> {
  const [a, aaaa] = await Promise.all([lookup(() => resolver.resolve4(hostname)), lookup(() => resolver.resolve6(hostname))]);
  for (const r of [a, aaaa]) if (!r.ok && !r.missing) return r;
  const addresses = [...(a.ok ? a.value : []), ...(aaaa.ok ? aaaa.value : [])];
  return addresses.length ? { ok: true, value: addresses } : { ok: false, missing: true };
}

export async function checkSpf(resolver: Resolver, d: DomainDns, box: Lookup<string[]>): Promise<RecordCheck> {
  const name = d.returnPath;
  const expected = spfValue(d.hostname);
  const txt = await txtLookup(resolver, name);
  if (!txt.ok) {
    return txt.missing ? failed('SPF', 'TXT', name, expected, [], `No SPF record at ${name}: publish the TXT record shown`) : temporary('SPF', 'TXT', name, expected, txt.code);
  }
  const records = txt.value.filter((r) => /^v=spf1(\s|$)/i.test(r.trim()));
  if (records.length === 0) return failed('SPF', 'TXT', name, expected, txt.value, `No SPF record (v=spf1) among the TXT records at ${name}`);
  if (records.length > 1) {
    return failed('SPF', 'TXT', name, expected, records, `${records.length} SPF records at ${name}: receivers treat that as a permanent error (RFC 7208 4.5); merge them into one`);
  }
  if (!box.ok) {
    if (!box.missing) return temporary('SPF', 'TXT', name, expected, box.code);
    return failed('SPF', 'TXT', name, expected, records, `${d.hostname} (MAILWRIGHT_HOSTNAME) has no A or AAAA record, so no SPF record can allow the box; publish its address`);
  }
  // Loaded at the first check, and only mailauth's SPF: the package root (DKIM, ARC, BIMI and their fetchers)
  // costs the event loop's thread about 30 MiB the analyze threads already pay.
  const { spf } = (await import('mailauth/lib/spf/index.js')) as { spf: typeof Spf };
  for (const ip of box.value) {
    const result = await spf({
      sender: `postmaster@${name}`,
      ip,
      helo: d.hostname,
      mta: d.hostname,
      resolver: (domain: string, type: string) => resolver.resolve(domain, type) as Promise<string[][] | string[]>,
    });
    const verdict = result.status.result;
    if (verdict === 'temperror') return temporary('SPF', 'TXT', name, expected, 'temperror');
    if (verdict !== 'pass') {
      return failed('SPF', 'TXT', name, expected, records, `The SPF record at ${name} does not allow this box (${ip}): SPF says ${verdict}; include a:${d.hostname}`);
    }
  }
  return { record: 'SPF', state: 'verified' };
}

export async function checkDmarc(resolver: Resolver, domain: string): Promise<RecordCheck> {
  // RFC 7489 6.6.3: without a record at the domain itself, the organizational domain's policy applies.
  const labels = domain.split('.');
  const candidates = [domain, ...(labels.length > 2 ? [labels.slice(-2).join('.')] : [])];
  // Any one DMARC record verifies, whatever its policy and wherever its reports go: the value shown is advice.
  const advised = dmarcValue(domain);
  for (const candidate of candidates) {
    const name = dmarcName(candidate);
    const txt = await txtLookup(resolver, name);
    if (!txt.ok && !txt.missing) return temporary('DMARC', 'TXT', name, advised, txt.code);
    const records = txt.ok ? txt.value.filter((r) => /^v=DMARC1\s*(;|$)/i.test(r.trim())) : [];
    if (records.length === 1) return { record: 'DMARC', state: 'verified' };
    if (records.length > 1) return failed('DMARC', 'TXT', name, advised, records, `${records.length} DMARC records at ${name}; receivers ignore all of them: keep one`);
  }
  const name = dmarcName(domain);
  return failed('DMARC', 'TXT', name, advised, [], `No DMARC record at ${name} (recommended: receivers such as Gmail and Yahoo expect one from bulk senders)`);
}

export async function checkDomain(resolver: Resolver, d: DomainDns): Promise<RecordCheck[]> {
  const box = await boxAddresses(resolver, d.hostname);
  const ed25519 = d.ed25519;
  return Promise.all([
    checkDkim(resolver, d),
    ...(ed25519 ? [checkDkimEd25519(resolver, { ...d, ed25519 })] : []),
    checkReturnPathMx(resolver, d),
    checkSpf(resolver, d, box),
    checkDmarc(resolver, d.domain),
  ]);
}

export interface InboundCheck {
  state: CheckState;
  issue?: DnsIssue;
}

/** Does the domain's own MX route mail to the box? */
export async function checkInboundMx(resolver: Resolver, domain: string, hostname: string): Promise<InboundCheck> {
  const expected = `${MX_PRIORITY} ${hostname}`;
  const mx = await lookup(() => resolver.resolveMx(domain));
  const issue = (found: string[], message: string): DnsIssue => ({ record: 'INBOUND_MX', type: 'MX', name: domain, expected, found, message });
  if (!mx.ok) {
    if (!mx.missing) return { state: 'pending', issue: issue([], `DNS lookup of ${domain} (MX) failed temporarily (${mx.code}); will check again`) };
    return { state: 'failed', issue: issue([], `No MX record at ${domain}: publish the MX record shown`) };
  }
  const found = mx.value.map((r) => `${r.priority} ${r.exchange}`);
  if (mx.value.length === 1 && mx.value[0].exchange === '') return { state: 'failed', issue: issue(found, `${domain} publishes a null MX (RFC 7505): it accepts no mail`) };
  const ours = mx.value.filter((r) => sameHost(r.exchange, hostname));
  if (ours.length === 0) return { state: 'failed', issue: issue(found, `The MX of ${domain} points at ${mx.value.map((r) => r.exchange).join(', ')}, not at ${hostname}`) };
  const best = Math.min(...mx.value.map((r) => r.priority));
  if (!ours.some((r) => r.priority === best)) {
    return { state: 'failed', issue: issue(found, `${hostname} is only a backup MX of ${domain}: a host with a lower preference receives the mail first`) };
  }
  return { state: 'verified' };
}
