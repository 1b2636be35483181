// The DNS records a sending domain must publish, as DESIGN.md shapes them: DKIM TXT at the selector, the
// return path (MX and SPF on the bounce subdomain, both pointing at the box), and the recommended DMARC; with
// dkim_ed25519 a second DKIM TXT for the ed25519 key (RFC 8463), recommended like DMARC, never required; once
// inbound is set up, MTA-STS (RFC 8461) and TLS-RPT (RFC 8460), recommended too.
// Pure: no lookups here (verify.ts and mta-sts-check.ts check them against live DNS).
import { policyHost } from './mta-sts-policy.ts';

/**
 * `MTA-STS` is the _mta-sts TXT, `MTA-STS-HOST` the policy host's CNAME to the box, `TLS-RPT` the _smtp._tls
 * TXT; `MTA-STS-POLICY` is no record but the check that the policy file is served as senders fetch it.
 */
export type RecordKind = 'DKIM' | 'SPF' | 'MX' | 'DMARC' | 'MTA-STS' | 'MTA-STS-HOST' | 'TLS-RPT' | 'MTA-STS-POLICY';

export interface RequiredRecord {
  record: RecordKind;
  type: 'TXT' | 'MX' | 'CNAME';
  /** Fully qualified host name. */
  name: string;
  value: string;
  priority?: number;
  /** The second DKIM record's key type (dkim_ed25519); absent for every other record. */
  algorithm?: 'ed25519';
}

export interface DomainDns {
  domain: string;
  returnPath: string;
  selector: string;
  /** base64 DER SubjectPublicKeyInfo, the p= tag. */
  publicKey: string;
  /** The ed25519 key (dkim_ed25519): its selector and the base64 raw 32-byte public key (RFC 8463 4). */
  ed25519?: { selector: string; publicKey: string };
  /** MAILWRIGHT_HOSTNAME: MX target and the host SPF must allow. */
  hostname: string;
  /** Set once inbound is set up: the id of the MTA-STS policy the box serves for the domain (mta-sts-policy.ts). */
  mtaSts?: { policyId: string };
}

export const RETURN_PATH_PREFIX = 'bounces';
export const MX_PRIORITY = 10;

export const dkimName = (d: Pick<DomainDns, 'selector' | 'domain'>) => `${d.selector}._domainkey.${d.domain}`;
export const dkimValue = (publicKey: string, algorithm: 'rsa' | 'ed25519' = 'rsa') => `v=DKIM1; k=${algorithm}; p=${publicKey}`;
export const spfValue = (hostname: string) => `v=spf1 a:${hostname} -all`;
export const dmarcName = (domain: string) => `_dmarc.${domain}`;
// p=none: start by observing; tighten to quarantine or reject once reports show only our mail. The aggregate
// reports (rua) come to the box, which reads them (dmarcReportAddress below).
export const dmarcValue = (domain: string) => `v=DMARC1; p=none; rua=mailto:${dmarcReportAddress(domain)};`;

export const mtaStsName = (domain: string) => `_mta-sts.${domain}`;
export const mtaStsValue = (policyId: string) => `v=STSv1; id=${policyId};`;
export const tlsRptName = (domain: string) => `_smtp._tls.${domain}`;
export const tlsRptValue = (domain: string) => `v=TLSRPTv1; rua=mailto:${tlsReportAddress(domain)}`;

/** What a domain that receives here publishes for MTA-STS (RFC 8461 3) and TLS reports (RFC 8460 3). */
export function mtaStsRecords(domain: string, hostname: string, policyId: string): RequiredRecord[] {
  return [
    { record: 'MTA-STS', type: 'TXT', name: mtaStsName(domain), value: mtaStsValue(policyId) },
    { record: 'MTA-STS-HOST', type: 'CNAME', name: policyHost(domain), value: hostname },
    { record: 'TLS-RPT', type: 'TXT', name: tlsRptName(domain), value: tlsRptValue(domain) },
  ];
}

export function requiredRecords(d: DomainDns): RequiredRecord[] {
  return [
    { record: 'DKIM', type: 'TXT', name: dkimName(d), value: dkimValue(d.publicKey) },
    ...(d.ed25519
      ? [{ record: 'DKIM' as const, type: 'TXT' as const, name: dkimName({ selector: d.ed25519.selector, domain: d.domain }), value: dkimValue(d.ed25519.publicKey, 'ed25519'), algorithm: 'ed25519' as const }]
      : []),
    { record: 'MX', type: 'MX', name: d.returnPath, value: d.hostname, priority: MX_PRIORITY },
    { record: 'SPF', type: 'TXT', name: d.returnPath, value: spfValue(d.hostname) },
    { record: 'DMARC', type: 'TXT', name: dmarcName(d.domain), value: dmarcValue(d.domain) },
    ...(d.mtaSts ? mtaStsRecords(d.domain, d.hostname, d.mtaSts.policyId) : []),
  ];
}

/**
 * Which record a check or a stored state is about: the kind, but `DKIM:ed25519` for the second DKIM record, so
 * its state never stands in for the RSA record's (which alone, with SPF and MX, verifies a domain).
 */
export const recordSlot = (r: { record: RecordKind; algorithm?: 'ed25519' }) => (r.algorithm ? `${r.record}:${r.algorithm}` : r.record);

/**
 * The records whose value names the box (MAILWRIGHT_HOSTNAME): the return path's MX and SPF, the policy host's
 * CNAME, and the MTA-STS id (its policy names the box as the MX) with the policy's check.
 */
export const namesTheBox = (r: { record: string }) => ['MX', 'SPF', 'MTA-STS', 'MTA-STS-HOST', 'MTA-STS-POLICY'].includes(r.record);

/** The record a check was about, among a domain's required records. */
export const recordFor = <R extends { record: RecordKind; algorithm?: 'ed25519' }>(records: R[], check: { record: RecordKind; algorithm?: 'ed25519' }) =>
  records.find((r) => recordSlot(r) === recordSlot(check));

/** The MX that routes a domain's inbound mail to the box (API-SPEC.md: value `<priority> <mail_host>`). */
export const inboundRecord = (domain: string, hostname: string) => ({ type: 'MX' as const, name: domain, value: `${MX_PRIORITY} ${hostname}` });

/**
 * Where receivers send their reports about a domain: on its return path (`bounces.<domain>`), whose MX already
 * names the box for every domain, sending-only ones included, and which shares the domain's organizational
 * domain, so no external-destination record is needed (RFC 7489 7.1). DMARC aggregate reports (rua) and TLS
 * reports (RFC 8460) have a local part each; mail to them is read as a report, never filed in an inbox.
 */
export const DMARC_REPORTS_LOCAL_PART = 'dmarc-reports';
export const TLS_REPORTS_LOCAL_PART = 'tls-reports';
export const dmarcReportAddress = (domain: string) => `${DMARC_REPORTS_LOCAL_PART}@${RETURN_PATH_PREFIX}.${domain}`;
export const tlsReportAddress = (domain: string) => `${TLS_REPORTS_LOCAL_PART}@${RETURN_PATH_PREFIX}.${domain}`;
