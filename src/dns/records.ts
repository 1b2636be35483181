// The DNS records a sending domain must publish, as DESIGN.md shapes them: DKIM TXT at the selector, the
// return path (MX and SPF on the bounce subdomain, both pointing at the box), and the recommended DMARC; with
// dkim_ed25519 a second DKIM TXT for the ed25519 key (RFC 8463), recommended like DMARC, never required.
// Pure: no lookups here (verify.ts checks them against live DNS).

export type RecordKind = 'DKIM' | 'SPF' | 'MX' | 'DMARC';

export interface RequiredRecord {
  record: RecordKind;
  type: 'TXT' | 'MX';
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
}

export const RETURN_PATH_PREFIX = 'bounces';
export const MX_PRIORITY = 10;

export const dkimName = (d: Pick<DomainDns, 'selector' | 'domain'>) => `${d.selector}._domainkey.${d.domain}`;
export const dkimValue = (publicKey: string, algorithm: 'rsa' | 'ed25519' = 'rsa') => `v=DKIM1; k=${algorithm}; p=${publicKey}`;
export const spfValue = (hostname: string) => `v=spf1 a:${hostname} -all`;
export const dmarcName = (domain: string) => `_dmarc.${domain}`;
// p=none: start by observing; tighten to quarantine or reject once reports show only our mail.
export const DMARC_VALUE = 'v=DMARC1; p=none;';

export function requiredRecords(d: DomainDns): RequiredRecord[] {
  return [
    { record: 'DKIM', type: 'TXT', name: dkimName(d), value: dkimValue(d.publicKey) },
    ...(d.ed25519
      ? [{ record: 'DKIM' as const, type: 'TXT' as const, name: dkimName({ selector: d.ed25519.selector, domain: d.domain }), value: dkimValue(d.ed25519.publicKey, 'ed25519'), algorithm: 'ed25519' as const }]
      : []),
    { record: 'MX', type: 'MX', name: d.returnPath, value: d.hostname, priority: MX_PRIORITY },
    { record: 'SPF', type: 'TXT', name: d.returnPath, value: spfValue(d.hostname) },
    { record: 'DMARC', type: 'TXT', name: dmarcName(d.domain), value: DMARC_VALUE },
  ];
}

/**
 * Which record a check or a stored state is about: the kind, but `DKIM:ed25519` for the second DKIM record, so
 * its state never stands in for the RSA record's (which alone, with SPF and MX, verifies a domain).
 */
export const recordSlot = (r: { record: RecordKind; algorithm?: 'ed25519' }) => (r.algorithm ? `${r.record}:${r.algorithm}` : r.record);

/** The records whose value names the box (MAILWRIGHT_HOSTNAME): the return path's MX and SPF. */
export const namesTheBox = (r: { record: string }) => r.record === 'MX' || r.record === 'SPF';

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
