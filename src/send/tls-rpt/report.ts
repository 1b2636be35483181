// One day's TLS report for one policy domain (RFC 8460 4.4), gzipped (5.1), and the mail that carries it
// (5.3: multipart/report; report-type="tlsrpt", TLS-Report-Domain, TLS-Report-Submitter, the subject's words).
// Pure: it must not look up, sign or send anything.
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { CountRow } from './counts.ts';

export interface ReportInput {
  day: string;
  domain: string;
  /** The box's hostname: organization-name. */
  organization: string;
  /** The domain whose DKIM key signs the mail (TLS-Report-Submitter). */
  submitter: string;
  contact: string;
  rows: CountRow[];
}

export interface TlsReport {
  reportId: string;
  json: Record<string, unknown>;
  gzip: Buffer;
  /** RFC 8460 5.1: submitter!policy-domain!begin!end!unique-id.json.gz */
  filename: string;
}

export function buildReport(input: ReportInput): TlsReport {
  const start = Date.parse(`${input.day}T00:00:00Z`);
  const end = start + 86_400_000;
  const unique = randomBytes(6).toString('hex');
  const reportId = `${input.day}.${unique}@${input.organization}`;
  const groups = new Map<string, CountRow[]>();
  for (const row of input.rows) {
    const key = JSON.stringify([row.policy_type, row.policy_string, row.mx_host]);
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  const policies = [...groups.values()].map((rows) => {
    const first = rows[0]!;
    const failed = rows.filter((r) => r.result_type !== '');
    const mxHost = JSON.parse(first.mx_host) as string[];
    const strings = JSON.parse(first.policy_string) as string[];
    return {
      policy: {
        'policy-type': first.policy_type,
        ...(strings.length > 0 ? { 'policy-string': strings } : {}),
        'policy-domain': input.domain,
        ...(mxHost.length > 0 ? { 'mx-host': mxHost } : {}),
      },
      summary: {
        'total-successful-session-count': sum(rows.filter((r) => r.result_type === '')),
        'total-failure-session-count': sum(failed),
      },
      ...(failed.length > 0
        ? {
            'failure-details': failed.map((r) => ({
              'result-type': r.result_type,
              ...(r.sending_ip ? { 'sending-mta-ip': r.sending_ip } : {}),
              ...(r.receiving_mx ? { 'receiving-mx-hostname': r.receiving_mx } : {}),
              ...(r.receiving_ip ? { 'receiving-ip': r.receiving_ip } : {}),
              'failed-session-count': r.count,
              ...(r.reason ? { 'additional-information': r.reason } : {}),
            })),
          }
        : {}),
    };
  });
  const json = {
    'organization-name': input.organization,
    'date-range': { 'start-datetime': iso(start), 'end-datetime': iso(end - 1000) },
    'contact-info': input.contact,
    'report-id': reportId,
    policies,
  };
  return {
    reportId,
    json,
    gzip: gzipSync(Buffer.from(JSON.stringify(json))),
    filename: `${input.submitter}!${input.domain}!${start / 1000}!${end / 1000}!${unique}.json.gz`,
  };
}

/** The report mail, CRLF line endings, ready to sign. */
export function reportMessage(report: TlsReport, input: ReportInput & { from: string; to: string; now: number }): Buffer {
  const boundary = `tlsrpt-${randomBytes(12).toString('hex')}`;
  const summary = (report.json.policies as Array<{ summary: Record<string, number> }>).reduce(
    (acc, p) => ({ ok: acc.ok + p.summary['total-successful-session-count']!, failed: acc.failed + p.summary['total-failure-session-count']! }),
    { ok: 0, failed: 0 },
  );
  const base64 = report.gzip.toString('base64').replace(/.{1,76}/g, '$&\r\n');
  const lines = [
    `From: ${input.from}`,
    `To: ${input.to}`,
    `Date: ${new Date(input.now).toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: <${randomBytes(12).toString('hex')}@${input.organization}>`,
    // RFC 8460 5.3: "Report Domain: ... Submitter: ... Report-ID: <...>".
    `Subject: Report Domain: ${input.domain} Submitter: ${input.submitter} Report-ID: <${report.reportId}>`,
    `TLS-Report-Domain: ${input.domain}`,
    `TLS-Report-Submitter: ${input.submitter}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type="tlsrpt";\r\n boundary="${boundary}"`,
    '',
    'This is a multipart message in MIME format.',
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    `This is an aggregate TLS report (RFC 8460) from ${input.organization} for ${input.domain}, covering ${input.day} (UTC):`,
    `${summary.ok} successful and ${summary.failed} failed TLS sessions.`,
    '',
    `--${boundary}`,
    `Content-Type: application/tlsrpt+gzip; name="${report.filename}"`,
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: attachment; filename="${report.filename}"`,
    '',
    base64.replace(/\r\n$/, ''),
    `--${boundary}--`,
    '',
  ];
  return Buffer.from(lines.join('\r\n'));
}

const sum = (rows: CountRow[]) => rows.reduce((n, r) => n + r.count, 0);
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
