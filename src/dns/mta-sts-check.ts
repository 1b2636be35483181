// Checks what a domain that receives here publishes for MTA-STS (RFC 8461) and TLS-RPT (RFC 8460) against live
// DNS, and fetches its policy the way a sender does: over HTTPS from mta-sts.<domain>, certificate checked, no
// redirect followed. Each check ends verified, failed (with the reason) or pending (DNS could not answer).
import type { Resolver } from 'node:dns/promises';
import { mtaStsName, mtaStsValue, tlsReportAddress, tlsRptName, tlsRptValue } from './records.ts';
import { MTA_STS_MAX_AGE, mxMatches, parsePolicy, policyHost, policyId, policyText, policyUrl, stsRecordId, type MtaStsMode } from './mta-sts-policy.ts';
import { boxAddresses, failed, lookup, sameHost, temporary, txtLookup, type RecordCheck } from './verify.ts';
import { FetchFailed, FetchRefused, safeRequest, type FetchPolicy } from './safe-fetch.ts';

export interface MtaStsExpectation {
  domain: string;
  /** MAILWRIGHT_HOSTNAME: the policy's only mx, and the policy host's CNAME target. */
  hostname: string;
  mode: MtaStsMode;
}

/** How the policy is fetched: the box's resolver, lab mode, a test CA, and the port (443 but in a lab). */
export type PolicyFetch = Pick<FetchPolicy, 'resolver' | 'allowPrivate' | 'ca' | 'timeoutMs'> & { port: number };

export async function checkMtaSts(resolver: Resolver, e: MtaStsExpectation, fetch: PolicyFetch): Promise<RecordCheck[]> {
  return Promise.all([checkStsRecord(resolver, e), checkPolicyHost(resolver, e), checkTlsRpt(resolver, e.domain), checkPolicyFile(e, fetch)]);
}

/** RFC 8461 3.1: one TXT record starting v=STSv1 at _mta-sts, whose id is the one of the policy served now. */
export async function checkStsRecord(resolver: Resolver, e: MtaStsExpectation): Promise<RecordCheck> {
  const name = mtaStsName(e.domain);
  const id = policyId(policyText({ mode: e.mode, mx: e.hostname }));
  const expected = mtaStsValue(id);
  const txt = await txtLookup(resolver, name);
  if (!txt.ok) {
    return txt.missing
      ? failed('MTA-STS', 'TXT', name, expected, [], `No MTA-STS record at ${name}: publish the TXT record shown (recommended: senders that honour MTA-STS then deliver to this box over TLS only)`)
      : temporary('MTA-STS', 'TXT', name, expected, txt.code);
  }
  const records = txt.value.filter((r) => /^v=STSv1\s*(;|$)/.test(r.trim()));
  if (records.length === 0) return failed('MTA-STS', 'TXT', name, expected, txt.value, `No MTA-STS record (v=STSv1) among the TXT records at ${name}`);
  if (records.length > 1) return failed('MTA-STS', 'TXT', name, expected, records, `${records.length} MTA-STS records at ${name}: senders ignore them all (RFC 8461 3.1); keep one, the record shown`);
  const published = stsRecordId(records[0]!);
  if (published === null) return failed('MTA-STS', 'TXT', name, expected, records, `The MTA-STS record at ${name} has no valid id (1 to 32 letters and digits)`);
  if (published !== id) {
    return failed(
      'MTA-STS',
      'TXT',
      name,
      expected,
      records,
      `The MTA-STS record at ${name} announces id ${published}, but the policy served now (mode ${e.mode}) has id ${id}: publish the record shown, or senders keep the policy they cached`,
    );
  }
  return { record: 'MTA-STS', state: 'verified' };
}

/** The policy host must reach the box: the CNAME asked for, or A/AAAA records holding the box's addresses. */
export async function checkPolicyHost(resolver: Resolver, e: MtaStsExpectation): Promise<RecordCheck> {
  const name = policyHost(e.domain);
  const cname = await lookup(() => resolver.resolveCname(name));
  if (cname.ok) {
    if (cname.value.some((target) => sameHost(target, e.hostname))) return { record: 'MTA-STS-HOST', state: 'verified' };
    return failed('MTA-STS-HOST', 'CNAME', name, e.hostname, cname.value, `${name} is an alias of ${cname.value.join(', ')}, not of ${e.hostname}: senders would fetch the policy elsewhere`);
  }
  if (!cname.missing) return temporary('MTA-STS-HOST', 'CNAME', name, e.hostname, cname.code);
  const [own, box] = await Promise.all([boxAddresses(resolver, name), boxAddresses(resolver, e.hostname)]);
  for (const r of [own, box]) if (!r.ok && !r.missing) return temporary('MTA-STS-HOST', 'CNAME', name, e.hostname, r.code);
  if (!own.ok) return failed('MTA-STS-HOST', 'CNAME', name, e.hostname, [], `No record at ${name}: publish the CNAME shown (senders fetch the MTA-STS policy from this name)`);
  if (box.ok && own.value.every((a) => box.value.includes(a))) return { record: 'MTA-STS-HOST', state: 'verified' };
  return failed('MTA-STS-HOST', 'CNAME', name, e.hostname, own.value, `${name} resolves to ${own.value.join(', ')}, not to this box (${e.hostname}): publish the CNAME shown`);
}

/** RFC 8460 3: one TXT record starting v=TLSRPTv1 at _smtp._tls, whose rua includes the box's report address. */
export async function checkTlsRpt(resolver: Resolver, domain: string): Promise<RecordCheck> {
  const name = tlsRptName(domain);
  const expected = tlsRptValue(domain);
  const txt = await txtLookup(resolver, name);
  if (!txt.ok) {
    return txt.missing
      ? failed('TLS-RPT', 'TXT', name, expected, [], `No TLS-RPT record at ${name}: publish the TXT record shown (recommended: senders then report TLS failures to this box)`)
      : temporary('TLS-RPT', 'TXT', name, expected, txt.code);
  }
  const records = txt.value.filter((r) => /^v=TLSRPTv1\s*(;|$)/.test(r.trim()));
  if (records.length === 0) return failed('TLS-RPT', 'TXT', name, expected, txt.value, `No TLS-RPT record (v=TLSRPTv1) among the TXT records at ${name}`);
  if (records.length > 1) return failed('TLS-RPT', 'TXT', name, expected, records, `${records.length} TLS-RPT records at ${name}: senders use none of them (RFC 8460 3); keep one, the record shown`);
  const rua = /(?:^|;)\s*rua\s*=\s*([^;]*)/i.exec(records[0]!)?.[1] ?? '';
  const targets = rua.split(',').map((t) => t.trim().toLowerCase());
  if (targets.includes(`mailto:${tlsReportAddress(domain)}`.toLowerCase())) return { record: 'TLS-RPT', state: 'verified' };
  const where = rua.trim() ? `sends reports to ${rua.trim()}` : 'names no rua';
  return failed('TLS-RPT', 'TXT', name, expected, records, `The TLS-RPT record at ${name} ${where}, not to this box (mailto:${tlsReportAddress(domain)}): the box reads only the reports that reach it`);
}

// Certificate errors from Node's TLS, in the words a sender's log would use.
const UNTRUSTED = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT']);
const SENDERS_READ = 64 * 1024; // RFC 8461 3.3: senders may refuse a policy over 64 KiB

/** RFC 8461 3.3: GET the policy over HTTPS with a certificate valid for mta-sts.<domain>, 200, text/plain. */
export async function checkPolicyFile(e: MtaStsExpectation, fetch: PolicyFetch): Promise<RecordCheck> {
  const url = policyUrl(e.domain, fetch.allowPrivate ? fetch.port : 443);
  const host = policyHost(e.domain);
  const expected = policyText({ mode: e.mode, mx: e.hostname });
  const fail = (found: string[], message: string) => failed('MTA-STS-POLICY', 'HTTPS', url, expected, found, message);
  let res;
  try {
    res = await safeRequest(url, { method: 'GET', headers: { 'user-agent': 'Mailwright', accept: 'text/plain' } }, { resolver: fetch.resolver, allowPrivate: fetch.allowPrivate, ca: fetch.ca, maxBytes: SENDERS_READ, timeoutMs: fetch.timeoutMs ?? 10_000 });
  } catch (err) {
    // DNS did not answer (safe-fetch's lookup failed but for "no such name"): nothing is known, as for the records.
    if (err instanceof FetchFailed && err.code !== 'ENOTFOUND' && err.message.includes(`looking up ${host} failed`)) return temporary('MTA-STS-POLICY', 'HTTPS', url, expected, err.code);
    return fail([], fetchProblem(err, host, e.hostname));
  }
  if (res.status !== 200) return fail([`HTTP ${res.status}`], `${url} answered HTTP ${res.status}, not 200: senders find no policy${res.status === 404 ? ' (this box serves it only once the domain\'s MX points here and inbound is ready)' : ''}`);
  const type = (res.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'text/plain') return fail([`Content-Type: ${res.contentType ?? '(none)'}`], `${url} is served as ${res.contentType ?? 'no Content-Type'}, not text/plain: senders refuse it (RFC 8461 3.3)`);
  const body = res.body.toString('utf8');
  const policy = parsePolicy(body);
  const problem =
    policy.version !== 'STSv1' ? `its version is ${policy.version ?? 'missing'}, not STSv1` :
    policy.mode !== e.mode ? `its mode is ${policy.mode ?? 'missing'}, but this box's policy for ${e.domain} is ${e.mode}` :
    !policy.mx.some((p) => mxMatches(p, e.hostname)) ? `no mx line names ${e.hostname} (found ${policy.mx.join(', ') || 'none'}): senders would refuse to deliver to this box` :
    policy.maxAge !== MTA_STS_MAX_AGE ? `its max_age is ${policy.maxAge ?? 'missing'}, not ${MTA_STS_MAX_AGE}` :
    body !== expected ? 'its text differs from the policy this box serves' : null;
  if (problem) return fail([body.slice(0, 500)], `The policy at ${url} is not the one this box serves: ${problem}. Another server may answer for ${host}`);
  return { record: 'MTA-STS-POLICY', state: 'verified' };
}

function fetchProblem(err: unknown, host: string, hostname: string): string {
  if (err instanceof FetchRefused) {
    if (err.reason === 'redirect') return `${err.message}: a policy must be served at its own URL (RFC 8461 3.3)`;
    return err.message;
  }
  if (!(err instanceof FetchFailed)) return `fetching the policy failed: ${(err as Error).message}`;
  const code = err.code;
  if (code === 'ENOTFOUND') return `No such name: ${host} has no address, so senders cannot fetch the policy; publish the CNAME to ${hostname}`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `The certificate ${host} presents is not valid for that name: senders refuse the policy. The box gets one by ACME once ${host} resolves to it`;
  if (code === 'CERT_HAS_EXPIRED') return `The certificate ${host} presents has expired: senders refuse the policy`;
  if (UNTRUSTED.has(code)) return `The certificate ${host} presents is not signed by an authority senders trust (${code}): senders refuse the policy`;
  if (code === 'ECONNREFUSED') return `Nothing answers HTTPS at ${host}: ${err.message}`;
  if (code === 'ETIMEDOUT') return `${host} did not answer in time: ${err.message}`;
  return `Fetching the policy failed: ${err.message}`;
}
