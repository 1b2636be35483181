// What a delivery's TLS must be, per MX host, and whether an opened session met it: DANE (RFC 7672) where the
// resolver vouches for TLSA records, else the domain's MTA-STS policy (RFC 8461; DANE takes precedence, 2),
// else Postfix's "may" as before. In `enforce` and under DANE a session that fails is never used: delivery
// defers with the reason, never in plaintext, never to a host the policy does not name. Every session opened
// is described for the TLS report (RFC 8460 4.4). It must not connect, look up or store anything itself.
import tls from 'node:tls';
import type { Target } from './route.ts';
import { daneMismatch, tlsaText, type DaneLookup } from './dane.ts';
import type { ReportedPolicy, ResultType, TlsRequirement, TlsSessionResult } from './tls-requirement.ts';

export type { ReportedPolicy, ResultType, TlsRequirement, TlsSessionResult } from './tls-requirement.ts';
import { mxAllowed } from './mta-sts/policy.ts';
import type { StsLookup } from './mta-sts/policies.ts';

/** What delivery asks of the outside (app: the policy cache, the TLSA lookup, the TLS report's counts). */
export interface OutboundTlsChecks {
  sts(domain: string): Promise<StsLookup>;
  dane(host: string): Promise<DaneLookup>;
  observe(session: TlsSessionResult): void;
}

export type TlsPlan = { hosts: Target[] } | { none: string; policy: ReportedPolicy };

/**
 * The hosts to try with what each must prove. Under `enforce` only hosts the policy names are kept (RFC 8461
 * 4.1); a host with usable DANE records is kept whatever the policy says and held to them.
 */
export async function planTls(checks: OutboundTlsChecks, domain: string, hosts: Target[]): Promise<TlsPlan> {
  const [sts, danes] = await Promise.all([checks.sts(domain), Promise.all(hosts.map((h) => checks.dane(h.host)))]);
  const stsPolicy: ReportedPolicy = sts.policy
    ? { type: 'sts', strings: sts.policy.text.split(/\r?\n/).filter((l) => l.trim() !== ''), mxHost: sts.policy.policy.mx }
    : sts.problem
      ? { type: 'sts', strings: [], mxHost: [] }
      : { type: 'no-policy-found', strings: [], mxHost: [] };
  const mode = sts.policy?.policy.mode ?? 'none';
  const planned: Target[] = [];
  hosts.forEach((target, i) => {
    const dane = danes[i]!;
    if (dane.kind === 'dane') {
      const policy: ReportedPolicy = { type: 'tlsa', strings: dane.records.map(tlsaText), mxHost: [target.host] };
      planned.push(withTls(target, { domain, kind: 'dane', mandatory: true, records: dane.records, policy }));
    } else if (dane.kind === 'error') {
      // RFC 7672 2.2: a TLSA lookup that fails (not "no records") leaves the host unusable, not insecure.
      const policy: ReportedPolicy = { type: 'tlsa', strings: [], mxHost: [target.host] };
      planned.push(withTls(target, { domain, kind: 'dane', mandatory: true, policy, known: { type: 'dnssec-invalid', reason: `DANE: ${dane.reason}` } }));
    } else if (mode === 'enforce') {
      if (mxAllowed(sts.policy!.policy, target.host)) planned.push(withTls(target, { domain, kind: 'sts-enforce', mandatory: true, policy: stsPolicy }));
    } else if (mode === 'testing') {
      planned.push(withTls(target, { domain, kind: 'sts-testing', mandatory: false, policy: stsPolicy }));
    } else {
      planned.push(withTls(target, { domain, kind: 'none', mandatory: false, policy: stsPolicy, ...(sts.problem ? { known: sts.problem } : {}) }));
    }
  });
  if (planned.length > 0) return { hosts: planned };
  return { none: `MTA-STS: no MX host of ${domain} matches the policy (mx: ${sts.policy!.policy.mx.join(', ')})`, policy: stsPolicy };
}

/** Mandatory sessions get a pool of their own: an opportunistic session to the same host must never carry them. */
function withTls(target: Target, requirement: TlsRequirement): Target {
  return { ...target, tls: requirement, pool: requirement.mandatory ? `${target.pool ?? target.host}#${requirement.kind}` : target.pool };
}

/**
 * Null when the session meets the requirement; else the failure in RFC 8460's words and ours. `plain` says why
 * a session is not encrypted when it is not simply that STARTTLS was not offered (refused, or broken earlier).
 */
export function judgeSession(req: TlsRequirement, socket: unknown, host: string, plain: { type: ResultType; reason: string } | null): { type: ResultType; reason: string } | null {
  if (req.known) return req.known;
  const label = req.kind === 'dane' ? 'DANE' : 'MTA-STS';
  if (!(socket instanceof tls.TLSSocket) || !socket.encrypted) {
    const why = plain ?? { type: 'starttls-not-supported' as const, reason: `${host} did not offer STARTTLS` };
    return req.kind === 'none' ? null : { type: why.type, reason: `${label}: ${why.reason}` };
  }
  if (req.kind === 'dane') {
    const why = daneMismatch(req.records ?? [], socket, host);
    return why ? { type: 'validation-failure', reason: `DANE: ${why}` } : null;
  }
  if (req.kind === 'none') return null;
  // RFC 8461 4.2: a certificate valid for the MX host name (not the policy host), chaining to a trusted root.
  const wrongName = tls.checkServerIdentity(host, socket.getPeerCertificate());
  if (wrongName) return { type: 'certificate-host-mismatch', reason: `${label}: certificate not valid for ${host}: ${wrongName.message}` };
  if (!socket.authorized) {
    const code = String(socket.authorizationError);
    const type: ResultType = code === 'CERT_HAS_EXPIRED' ? 'certificate-expired' : 'certificate-not-trusted';
    return { type, reason: `${label}: certificate not valid for ${host}: ${code}` };
  }
  return null;
}
