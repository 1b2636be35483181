// The DNS records a sending domain must publish, as DESIGN.md shapes them: DKIM TXT at the selector, the
// return path (MX and SPF on the bounce subdomain, both pointing at the box), and the recommended DMARC.
// Pure: no lookups here (verify.ts checks them against live DNS).

export type RecordKind = 'DKIM' | 'SPF' | 'MX' | 'DMARC';

export interface RequiredRecord {
  record: RecordKind;
  type: 'TXT' | 'MX';
  /** Fully qualified host name. */
  name: string;
  value: string;
  priority?: number;
}

export interface DomainDns {
  domain: string;
  returnPath: string;
  selector: string;
  /** base64 DER SubjectPublicKeyInfo, the p= tag. */
  publicKey: string;
  /** MAILWRIGHT_HOSTNAME: MX target and the host SPF must allow. */
  hostname: string;
}

export const RETURN_PATH_PREFIX = 'bounces';
export const MX_PRIORITY = 10;

export const dkimName = (d: Pick<DomainDns, 'selector' | 'domain'>) => `${d.selector}._domainkey.${d.domain}`;
export const dkimValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`;
export const spfValue = (hostname: string) => `v=spf1 a:${hostname} -all`;
export const dmarcName = (domain: string) => `_dmarc.${domain}`;
// p=none: start by observing; tighten to quarantine or reject once reports show only our mail.
export const DMARC_VALUE = 'v=DMARC1; p=none;';

export function requiredRecords(d: DomainDns): RequiredRecord[] {
  return [
    { record: 'DKIM', type: 'TXT', name: dkimName(d), value: dkimValue(d.publicKey) },
    { record: 'MX', type: 'MX', name: d.returnPath, value: d.hostname, priority: MX_PRIORITY },
    { record: 'SPF', type: 'TXT', name: d.returnPath, value: spfValue(d.hostname) },
    { record: 'DMARC', type: 'TXT', name: dmarcName(d.domain), value: DMARC_VALUE },
  ];
}

/** The MX that routes a domain's inbound mail to the box (API-SPEC.md: value `<priority> <mail_host>`). */
export const inboundRecord = (domain: string, hostname: string) => ({ type: 'MX' as const, name: domain, value: `${MX_PRIORITY} ${hostname}` });
