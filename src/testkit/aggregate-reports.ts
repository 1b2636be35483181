// Test-only: DMARC aggregate reports and TLS reports as the big receivers send them. The XML follows each one's
// published format (Google: zip named google.com!<domain>!<begin>!<end>.zip as the whole message; Microsoft:
// enterprise.protection.outlook.com!...xml.gz with its namespaces, version, envelope_to and SPF scope; Yahoo:
// gzip with its report id style), and the TLS report is RFC 8460 4.4's example shape.
import { gzipSync } from 'node:zlib';
import { zipSync } from 'fflate';

export interface Row {
  ip: string;
  count: number;
  disposition?: string;
  dkim: 'pass' | 'fail';
  spf: 'pass' | 'fail';
  envelopeFrom?: string;
}

export interface ReportSpec {
  domain: string;
  reportId: string;
  begin: number | string;
  end: number | string;
  rows: Row[];
}

const record = (domain: string, r: Row, ms: boolean) => `  <record>
    <row>
      <source_ip>${r.ip}</source_ip>
      <count>${r.count}</count>
      <policy_evaluated>
        <disposition>${r.disposition ?? 'none'}</disposition>
        <dkim>${r.dkim}</dkim>
        <spf>${r.spf}</spf>
      </policy_evaluated>
    </row>
    <identifiers>
${ms ? '      <envelope_to>contoso.example</envelope_to>\n' : ''}${r.envelopeFrom ? `      <envelope_from>${r.envelopeFrom}</envelope_from>\n` : ''}      <header_from>${domain}</header_from>
    </identifiers>
    <auth_results>
      <dkim>
        <domain>${r.dkim === 'pass' ? domain : 'spoofer.example'}</domain>
        <selector>mw1</selector>
        <result>${r.dkim}</result>
      </dkim>
      <spf>
        <domain>${r.envelopeFrom ?? domain}</domain>
${ms ? '        <scope>mfrom</scope>\n' : ''}        <result>${r.spf}</result>
      </spf>
    </auth_results>
  </record>`;

export function googleXml(s: ReportSpec): string {
  return `<?xml version="1.0" encoding="UTF-8" ?>
<feedback>
  <report_metadata>
    <org_name>google.com</org_name>
    <email>noreply-dmarc-support@google.com</email>
    <extra_contact_info>https://support.google.com/a/answer/2466580</extra_contact_info>
    <report_id>${s.reportId}</report_id>
    <date_range>
      <begin>${s.begin}</begin>
      <end>${s.end}</end>
    </date_range>
  </report_metadata>
  <policy_published>
    <domain>${s.domain}</domain>
    <adkim>r</adkim>
    <aspf>r</aspf>
    <p>none</p>
    <sp>none</sp>
    <pct>100</pct>
    <np>none</np>
  </policy_published>
${s.rows.map((r) => record(s.domain, r, false)).join('\n')}
</feedback>
`;
}

export function microsoftXml(s: ReportSpec): string {
  return `<?xml version="1.0"?>
<feedback xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <version>1.0</version>
  <report_metadata>
    <org_name>Enterprise Outlook</org_name>
    <email>dmarcreport@microsoft.com</email>
    <report_id>${s.reportId}</report_id>
    <date_range>
      <begin>${s.begin}</begin>
      <end>${s.end}</end>
    </date_range>
  </report_metadata>
  <policy_published>
    <domain>${s.domain}</domain>
    <adkim>r</adkim>
    <aspf>r</aspf>
    <p>none</p>
    <sp>none</sp>
    <pct>100</pct>
    <fo>0</fo>
  </policy_published>
${s.rows.map((r) => record(s.domain, r, true)).join('\n')}
</feedback>`;
}

export function yahooXml(s: ReportSpec): string {
  return `<?xml version="1.0"?>
<feedback>
  <report_metadata>
    <org_name>Yahoo</org_name>
    <email>dmarchelp@yahooinc.com</email>
    <report_id>${s.reportId}</report_id>
    <date_range>
      <begin>${s.begin}</begin>
      <end>${s.end}</end>
    </date_range>
  </report_metadata>
  <policy_published>
    <domain>${s.domain}</domain>
    <adkim>r</adkim>
    <aspf>r</aspf>
    <p>none</p>
    <pct>100</pct>
  </policy_published>
${s.rows.map((r) => record(s.domain, r, false)).join('\n')}
</feedback>
`;
}

export const zipped = (name: string, content: string | Buffer) => Buffer.from(zipSync({ [name]: typeof content === 'string' ? Buffer.from(content) : content }, { level: 9 }));
export const gzipped = (content: string | Buffer) => gzipSync(content);

const base64 = (b: Buffer) => b.toString('base64').replace(/.{76}/g, '$&\r\n');

/** Google's shape: the zip is the whole message, no multipart. */
export function googleMessage(to: string, file: string, zip: Buffer, domain: string, reportId: string): string {
  return [
    'From: noreply-dmarc-support@google.com',
    `To: ${to}`,
    `Subject: Report domain: ${domain} Submitter: google.com Report-ID: ${reportId}`,
    `Message-ID: <${reportId}@google.com>`,
    'MIME-Version: 1.0',
    `Content-Type: application/zip; name="${file}"`,
    `Content-Disposition: attachment; filename="${file}"`,
    'Content-Transfer-Encoding: base64',
    '',
    base64(zip),
    '',
  ].join('\r\n');
}

/** Microsoft's and Yahoo's shape: a short text part, then the gzip file. */
export function multipartMessage(m: { from: string; to: string; subject: string; file: string; contentType: string; content: Buffer; text?: string }): string {
  const b = 'report-boundary-4f1c';
  return [
    `From: ${m.from}`,
    `To: ${m.to}`,
    `Subject: ${m.subject}`,
    `Message-ID: <${Math.random().toString(36).slice(2)}@reports.example>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    m.text ?? 'This is a report. Please do not reply.',
    `--${b}`,
    `Content-Type: ${m.contentType}; name="${m.file}"`,
    `Content-Disposition: attachment; filename="${m.file}"`,
    'Content-Transfer-Encoding: base64',
    '',
    base64(m.content),
    `--${b}--`,
    '',
  ].join('\r\n');
}

/** RFC 8460 4.4's example report, for `domain`. */
export function tlsReportJson(domain: string, reportId: string): string {
  return JSON.stringify({
    'organization-name': 'Company-X',
    'date-range': { 'start-datetime': '2026-11-27T00:00:00Z', 'end-datetime': '2026-11-27T23:59:59Z' },
    'contact-info': 'sts-reporting@company-x.example',
    'report-id': reportId,
    policies: [
      {
        policy: { 'policy-type': 'sts', 'policy-string': ['version: STSv1', 'mode: testing', `mx: *.mail.${domain}`, 'max_age: 86400'], 'policy-domain': domain, 'mx-host': [`*.mail.${domain}`] },
        summary: { 'total-successful-session-count': 5326, 'total-failure-session-count': 303 },
        'failure-details': [
          { 'result-type': 'certificate-expired', 'sending-mta-ip': '2001:db8:abcd:0012::1', 'receiving-mx-hostname': `mx1.mail.${domain}`, 'failed-session-count': 100 },
          { 'result-type': 'starttls-not-supported', 'sending-mta-ip': '2001:db8:abcd:0013::1', 'receiving-mx-hostname': `mx2.mail.${domain}`, 'receiving-ip': '203.0.113.56', 'failed-session-count': 200, 'additional-information': `https://reports.company-x.example/report_info?id=5065427c-23d3#StarttlsNotSupported` },
          { 'result-type': 'validation-failure', 'sending-mta-ip': '198.51.100.62', 'receiving-ip': '203.0.113.58', 'receiving-mx-hostname': `mx-backup.mail.${domain}`, 'failed-session-count': 3, 'failure-reason-code': 'X509_V_ERR_PROXY_PATH_LENGTH_EXCEEDED' },
        ],
      },
    ],
  });
}
