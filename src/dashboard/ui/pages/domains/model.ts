// What the Domains pages read from the API (a domain, its records and what DNS answered, its DNS provider) and
// how each state is shown. Inboxes and Developers read domains too.
import type { Tone } from '../../components/feedback.tsx';
import type { Rotation } from './dkim-rotation.tsx';
import type { HostnameProblem } from './hostname-banner.tsx';

type CheckState = 'pending' | 'verified' | 'failed';
export interface Checks {
  dkim: boolean;
  spf: boolean;
  returnPath: boolean;
  dmarc: boolean;
  mx: boolean;
  /** Once inbound is set up: the MTA-STS records and the policy as senders fetch it; the TLS-RPT record. */
  mtaSts?: boolean;
  tlsRpt?: boolean;
}
export interface DomainSummary {
  id: string;
  name: string;
  status: 'pending' | 'verified' | 'failed';
  setup_status: 'checking' | 'action_required' | 'complete';
  checks: Checks;
  createdAt: string;
  checkedAt: string | null;
  /** A local domain of `mailwright try`: no DNS records, never checked. */
  local?: boolean;
}
export interface DnsRecord {
  record: 'DKIM' | 'SPF' | 'MX' | 'DMARC' | 'MTA-STS' | 'MTA-STS-HOST' | 'TLS-RPT';
  type: 'TXT' | 'MX' | 'CNAME';
  name: string;
  value: string;
  priority?: number;
  status: CheckState;
}
export interface DnsIssue {
  record: string;
  type: string;
  name: string;
  expected: string;
  found: string[];
  message: string;
}
export interface Domain extends DomainSummary {
  records: DnsRecord[];
  dns_issues: DnsIssue[];
  returnPath: string;
  marketing: boolean;
  open_tracking: boolean;
  click_tracking: boolean;
  inbound: { status: 'not_configured' | 'dns_pending' | 'ready'; record: { type: 'MX'; name: string; value: string } | null; issue: DnsIssue | null; checkedAt: string | null };
  verifiedAt: string | null;
  dkimSelector: string;
  dkimRotation: Rotation;
  /** Set while the box's hostname cannot be right: `records` then leaves out the MX and SPF that would name it. */
  hostnameProblem: HostnameProblem | null;
  /** The MTA-STS policy the box serves for the domain; null until inbound is set up. */
  mtaSts: MtaSts | null;
}
export interface MtaSts {
  mode: 'testing' | 'enforce';
  policyId: string;
  policyUrl: string;
  /** Served once inbound is ready. */
  served: boolean;
  /** What the last check found fetching it as a sender would. */
  status: CheckState;
  maxAge: number;
}
export interface Provider {
  detectionStatus: 'detected' | 'unknown' | 'no_nameservers' | 'error';
  detected: string;
  zone: string;
  nameservers: string[];
  error?: string;
  recordHosts: { dkim: string; returnPathMx: string; returnPathSpf: string; dmarc: string; inboundMx: string };
  providers: { domainConnect: { available: boolean; providerName: string | null } };
}

export const STATUS: Record<Domain['status'], [Tone, string]> = { verified: ['good', 'Verified'], pending: ['warn', 'Not verified yet'], failed: ['bad', 'Records missing or wrong'] };
export const RECORD_STATUS: Record<CheckState, [Tone, string]> = { verified: ['good', 'Found'], pending: ['neutral', 'Not checked'], failed: ['bad', 'Not right yet'] };
export const RECORD_LABEL: Record<DnsRecord['record'], [string, string]> = {
  DKIM: ['DKIM', 'Signs your mail'],
  SPF: ['SPF', 'Return path: allows this box'],
  MX: ['MX', 'Return path: bounces come back'],
  DMARC: ['DMARC', 'Recommended'],
  'MTA-STS': ['MTA-STS', 'Recommended: TLS to this box'],
  'MTA-STS-HOST': ['MTA-STS host', 'Where senders fetch the policy'],
  'TLS-RPT': ['TLS-RPT', 'Recommended: TLS reports'],
};
export const INBOUND: Record<Domain['inbound']['status'], [Tone, string]> = { not_configured: ['neutral', 'Not set up'], dns_pending: ['warn', 'Waiting for the MX record'], ready: ['good', 'Receiving mail'] };
