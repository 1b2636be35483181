// Reads of the received reports of one domain for the API and the dashboard: DMARC aggregate reports (filtered),
// the "who sends as you" summary by source IP, TLS reports, and what was kept aside. The domain is the caller's
// to check against the workspace (report-routes.ts); nothing here writes. Queries (db/query.ts).
import { iso } from '../clock.ts';
import { all, get } from '../db/query.ts';
/** limit and offset, as http/pagination.ts parses them. */
interface Page {
  limit: number;
  offset: number;
}

export interface DmarcFilter {
  after?: number;
  before?: number;
  sourceIp?: string;
  disposition?: string;
  /** false: only rows failing alignment (neither DKIM nor SPF aligned); true: only passing ones. */
  aligned?: boolean;
}

/** Rows of one report shown in a list item; GET .../dmarc-reports/:reportId has them all. */
const ROWS_IN_LIST = 100;

interface ReportRow {
  id: string;
  org_name: string;
  org_email: string;
  report_id: string;
  begin_at: number;
  end_at: number;
  policy: string;
  messages: number;
  failed: number;
  authenticated: number;
  received_at: number;
}

interface RowRow {
  source_ip: string;
  count: number;
  disposition: string;
  dkim: string;
  spf: string;
  header_from: string;
  envelope_from: string | null;
  auth: string;
  reasons: string;
}

function rowWhere(f: DmarcFilter): { sql: string; args: Record<string, unknown> } {
  const parts: string[] = [];
  if (f.sourceIp) parts.push('r.source_ip = @sourceIp');
  if (f.disposition) parts.push('r.disposition = @disposition');
  if (f.aligned === false) parts.push("r.dkim != 'pass' AND r.spf != 'pass'");
  if (f.aligned === true) parts.push("(r.dkim = 'pass' OR r.spf = 'pass')");
  return { sql: parts.join(' AND '), args: { sourceIp: f.sourceIp ?? null, disposition: f.disposition ?? null } };
}

const presentRow = (r: RowRow) => ({
  sourceIp: r.source_ip,
  count: r.count,
  disposition: r.disposition,
  dkim: r.dkim,
  spf: r.spf,
  aligned: r.dkim === 'pass' || r.spf === 'pass',
  headerFrom: r.header_from,
  envelopeFrom: r.envelope_from,
  authResults: JSON.parse(r.auth) as unknown,
  reasons: JSON.parse(r.reasons) as unknown,
});

const presentReport = (r: ReportRow) => ({
  id: r.id,
  orgName: r.org_name,
  email: r.org_email,
  reportId: r.report_id,
  begin: iso(r.begin_at),
  end: iso(r.end_at),
  policy: JSON.parse(r.policy) as unknown,
  messages: r.messages,
  failed: r.failed,
  authenticated: r.authenticated === 1,
  receivedAt: iso(r.received_at),
});

/** A domain's DMARC reports, newest first; with row filters, only reports that have such rows, with those rows. */
export function* listDmarcReports(domainId: string, f: DmarcFilter, page: Page) {
  const rows = rowWhere(f);
  const reports = yield* all<ReportRow>(
    `SELECT * FROM dmarc_reports d WHERE d.domain_id = @domainId
       AND (CAST(@after AS BIGINT) IS NULL OR d.end_at >= @after) AND (CAST(@before AS BIGINT) IS NULL OR d.begin_at < @before)
       ${rows.sql ? `AND EXISTS (SELECT 1 FROM dmarc_report_rows r WHERE r.report_id = d.id AND ${rows.sql})` : ''}
     ORDER BY d.end_at DESC, d.id DESC LIMIT @limit OFFSET @offset`,
    { domainId, after: f.after ?? null, before: f.before ?? null, ...rows.args, limit: page.limit + 1, offset: page.offset },
  );
  const rowsOf = `SELECT * FROM dmarc_report_rows r WHERE r.report_id = @id ${rows.sql ? `AND ${rows.sql}` : ''} ORDER BY r.count DESC LIMIT ${ROWS_IN_LIST + 1}`;
  const listed = [];
  for (const r of reports) {
    const found = yield* all<RowRow>(rowsOf, { id: r.id, ...rows.args });
    listed.push({ ...presentReport(r), rows: found.slice(0, ROWS_IN_LIST).map(presentRow), rowsTruncated: found.length > ROWS_IN_LIST });
  }
  return listed;
}

/** One report with all its rows. */
export function* dmarcReport(domainId: string, id: string) {
  const r = yield* get<ReportRow>('SELECT * FROM dmarc_reports WHERE domain_id = ? AND id = ?', domainId, id);
  if (!r) return null;
  const rows = yield* all<RowRow>('SELECT * FROM dmarc_report_rows WHERE report_id = ? ORDER BY count DESC', id);
  return { ...presentReport(r), rows: rows.map(presentRow), rowsTruncated: false };
}

interface SourceRow {
  source_ip: string;
  messages: number;
  dkim_aligned: number;
  spf_aligned: number;
  passed: number;
  none: number;
  quarantine: number;
  reject: number;
  reporters: string;
  header_from: string;
  last_end: number;
}

/** "Who sends as you": the sources of a window's reports, most messages first, with totals for the window. */
export function* dmarcSummary(domainId: string, window: { after: number; before: number }, page: Page) {
  const args = { domainId, after: window.after, before: window.before };
  const from = `FROM dmarc_report_rows r JOIN dmarc_reports d ON d.id = r.report_id
    WHERE r.domain_id = @domainId AND d.end_at >= @after AND d.begin_at < @before`;
  const sources = yield* all<SourceRow>(
    `SELECT r.source_ip, sum(r.count) AS messages,
       sum(CASE WHEN r.dkim = 'pass' THEN r.count ELSE 0 END) AS dkim_aligned,
       sum(CASE WHEN r.spf = 'pass' THEN r.count ELSE 0 END) AS spf_aligned,
       sum(CASE WHEN r.dkim = 'pass' OR r.spf = 'pass' THEN r.count ELSE 0 END) AS passed,
       sum(CASE WHEN r.disposition = 'none' THEN r.count ELSE 0 END) AS none,
       sum(CASE WHEN r.disposition = 'quarantine' THEN r.count ELSE 0 END) AS quarantine,
       sum(CASE WHEN r.disposition = 'reject' THEN r.count ELSE 0 END) AS reject,
       group_concat(DISTINCT d.org_name) AS reporters, max(r.header_from) AS header_from, max(d.end_at) AS last_end
     ${from} GROUP BY r.source_ip ORDER BY messages DESC, r.source_ip LIMIT @limit OFFSET @offset`,
    { ...args, limit: page.limit + 1, offset: page.offset },
  );
  const totals = (yield* get<{ reports: number; messages: number; passed: number; sources: number }>(
    `SELECT count(DISTINCT d.id) AS reports, coalesce(sum(r.count), 0) AS messages, coalesce(sum(CASE WHEN r.dkim = 'pass' OR r.spf = 'pass' THEN r.count ELSE 0 END), 0) AS passed, count(DISTINCT r.source_ip) AS sources ${from}`,
    args,
  ))!;
  const share = (n: number, of: number) => (of ? Math.round((n / of) * 1000) / 1000 : 0);
  return {
    totals: { ...totals, failed: totals.messages - totals.passed, after: iso(window.after), before: iso(window.before) },
    sources: sources.map((s) => ({
      sourceIp: s.source_ip,
      messages: s.messages,
      dkimAligned: share(s.dkim_aligned, s.messages),
      spfAligned: share(s.spf_aligned, s.messages),
      passed: s.passed,
      failed: s.messages - s.passed,
      dispositions: { none: s.none, quarantine: s.quarantine, reject: s.reject },
      reporters: s.reporters ? s.reporters.split(',') : [],
      headerFrom: s.header_from,
      lastSeen: iso(s.last_end),
    })),
  };
}

interface TlsRow {
  id: string;
  org_name: string;
  contact: string;
  report_id: string;
  begin_at: number;
  end_at: number;
  successful: number;
  failed: number;
  policies: string;
  authenticated: number;
  received_at: number;
}

export function* listTlsReports(domainId: string, f: { after?: number; before?: number }, page: Page) {
  const rows = yield* all<TlsRow>(
    `SELECT * FROM tls_reports WHERE domain_id = @domainId AND (CAST(@after AS BIGINT) IS NULL OR end_at >= @after) AND (CAST(@before AS BIGINT) IS NULL OR begin_at < @before)
     ORDER BY end_at DESC, id DESC LIMIT @limit OFFSET @offset`,
    { domainId, after: f.after ?? null, before: f.before ?? null, limit: page.limit + 1, offset: page.offset },
  );
  return rows.map((r) => ({
    id: r.id,
    orgName: r.org_name,
    contact: r.contact,
    reportId: r.report_id,
    begin: iso(r.begin_at),
    end: iso(r.end_at),
    successful: r.successful,
    failed: r.failed,
    policies: JSON.parse(r.policies) as unknown[],
    authenticated: r.authenticated === 1,
    receivedAt: iso(r.received_at),
  }));
}

export function* listRejectedReports(domainId: string, page: Page) {
  const rows = yield* all<{ id: string; format: string; mail_from: string; header_from: string; reason: string; bytes: number; received_at: number }>(
    'SELECT * FROM rejected_reports WHERE domain_id = ? ORDER BY received_at DESC, id DESC LIMIT ? OFFSET ?',
    domainId, page.limit + 1, page.offset,
  );
  return rows.map((r) => ({ id: r.id, format: r.format, mailFrom: r.mail_from, headerFrom: r.header_from, reason: r.reason, bytes: r.bytes, receivedAt: iso(r.received_at) }));
}
