// The TLS a delivery to one MX host must have (outbound-tls.ts decides it) and a session's result for the
// TLS report (RFC 8460 4.3, 4.4), as data: route.ts's Target carries the one, connect.ts reports the other.
import type { TlsaRecord } from './dane.ts';

export type ResultType =
  | 'starttls-not-supported' | 'certificate-host-mismatch' | 'certificate-expired' | 'certificate-not-trusted' | 'validation-failure'
  | 'tlsa-invalid' | 'dnssec-invalid' | 'sts-policy-fetch-error' | 'sts-policy-invalid' | 'sts-webpki-invalid';

/** The policy a session was held to, as RFC 8460 4.4 reports it. */
export interface ReportedPolicy {
  type: 'sts' | 'tlsa' | 'no-policy-found';
  strings: string[];
  mxHost: string[];
}

export interface TlsSessionResult {
  domain: string;
  policy: ReportedPolicy;
  /** null: the session succeeded. */
  failure: { type: ResultType; reason: string } | null;
  sendingIp: string;
  receivingMx: string;
  receivingIp: string;
}

export interface TlsRequirement {
  domain: string;
  kind: 'dane' | 'sts-enforce' | 'sts-testing' | 'none';
  /** DANE or MTA-STS enforce: a session that fails the check is closed unused. */
  mandatory: boolean;
  records?: TlsaRecord[];
  policy: ReportedPolicy;
  /** A failure known before connecting (a policy that could not be fetched, a failed validated TLSA lookup). */
  known?: { type: ResultType; reason: string };
}

