// Reads a TLS report (RFC 8460 4: the JSON of "organization-name", "date-range", "policies" with their
// summaries and failure details) into typed values, bounded. Pure: a ReportRejected says why it could not.
import { ReportRejected } from './report-files.ts';

const MAX_POLICIES = 1000;
const MAX_FAILURES = 1000;

export interface TlsFailure {
  resultType: string;
  sendingMtaIp: string | null;
  receivingMxHostname: string | null;
  receivingIp: string | null;
  failedSessions: number;
  failureReasonCode: string | null;
}

export interface TlsPolicy {
  /** sts, tlsa or no-policy-found (RFC 8460 4.3). */
  type: string;
  string: string[];
  domain: string;
  mxHost: string[];
  successful: number;
  failed: number;
  failures: TlsFailure[];
}

export interface TlsReport {
  orgName: string;
  contact: string;
  reportId: string;
  begin: number;
  end: number;
  policies: TlsPolicy[];
}

type Node = Record<string, unknown>;

export function readTlsReport(bytes: Buffer): TlsReport {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new ReportRejected(`the JSON could not be parsed (${(err as Error).message})`);
  }
  const r = obj(doc, 'the report');
  const range = obj(r['date-range'], 'date-range');
  const begin = time(range['start-datetime'], 'start-datetime');
  const end = time(range['end-datetime'], 'end-datetime');
  if (begin > end) throw new ReportRejected('malformed date-range: start is after end');
  const policies = r.policies;
  if (!Array.isArray(policies)) throw new ReportRejected('not a TLS report: policies is missing');
  if (policies.length > MAX_POLICIES) throw new ReportRejected(`the report has more than ${MAX_POLICIES} policies`);
  return {
    orgName: str(r['organization-name'], 'organization-name', 200),
    contact: str(r['contact-info'] ?? '', 'contact-info', 320, true),
    reportId: str(r['report-id'], 'report-id', 200),
    begin,
    end,
    policies: policies.map((p, i) => policy(obj(p, `policy ${i + 1}`), i + 1)),
  };
}

function policy(p: Node, n: number): TlsPolicy {
  const pol = obj(p.policy, `policy ${n}: policy`);
  const summary = obj(p.summary, `policy ${n}: summary`);
  const details = Array.isArray(p['failure-details']) ? p['failure-details'] : [];
  if (details.length > MAX_FAILURES) throw new ReportRejected(`policy ${n} has more than ${MAX_FAILURES} failure details`);
  return {
    type: str(pol['policy-type'], `policy ${n}: policy-type`, 30),
    string: strings(pol['policy-string']),
    domain: str(pol['policy-domain'], `policy ${n}: policy-domain`, 253).toLowerCase(),
    mxHost: strings(pol['mx-host']),
    successful: count(summary['total-successful-session-count'], `policy ${n}: total-successful-session-count`),
    failed: count(summary['total-failure-session-count'], `policy ${n}: total-failure-session-count`),
    failures: details.map((d, i) => {
      const f = obj(d, `policy ${n}: failure ${i + 1}`);
      return {
        resultType: str(f['result-type'], `policy ${n}: failure ${i + 1}: result-type`, 60),
        sendingMtaIp: maybe(f['sending-mta-ip']),
        receivingMxHostname: maybe(f['receiving-mx-hostname']),
        receivingIp: maybe(f['receiving-ip']),
        failedSessions: count(f['failed-session-count'], `policy ${n}: failure ${i + 1}: failed-session-count`),
        failureReasonCode: maybe(f['failure-reason-code']),
      };
    }),
  };
}

function obj(v: unknown, what: string): Node {
  if (v && typeof v === 'object' && !Array.isArray(v)) return v as Node;
  throw new ReportRejected(`not a TLS report: ${what} is missing`);
}

const maybe = (v: unknown) => (typeof v === 'string' && v ? v.slice(0, 253) : null);

// RFC 8460 4.4: policy-string and mx-host are arrays; some reporters send one string.
const strings = (v: unknown) => (Array.isArray(v) ? v : typeof v === 'string' ? [v] : []).filter((s): s is string => typeof s === 'string').slice(0, 50).map((s) => s.slice(0, 500));

function str(v: unknown, what: string, max: number, empty = false): string {
  if (typeof v !== 'string' || (!v && !empty)) throw new ReportRejected(`not a TLS report: ${what} is missing`);
  if (v.length > max) throw new ReportRejected(`${what} is longer than ${max} characters`);
  return v;
}

function count(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new ReportRejected(`${what} is not a whole number`);
  return v;
}

// RFC 8460 4.4: RFC 3339 date-times.
function time(v: unknown, what: string): number {
  const ms = typeof v === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(ms) || ms < Date.UTC(2000, 0, 1) || ms > Date.UTC(2100, 0, 1)) throw new ReportRejected(`malformed ${what}: "${String(v).slice(0, 40)}" is not an RFC 3339 time`);
  return ms;
}
