// Keeps what arrives at a domain's report addresses (receive/route.ts): a DMARC aggregate report with its rows,
// or a TLS report with its policies, once per (reporter, report id); what could not be read, or is about a
// domain other than the one whose address it came to, is kept aside in rejected_reports with the reason. A new
// source failing DMARC alignment in volume raises domain.dmarc_failure. Queries (db/query.ts) for the writer's
// transaction that the 250 waits for (receive/file.ts).
import type { DbContext } from '../db/writer.ts';
import { newId } from '../db/ids.ts';
import { run, value, type Query } from '../db/query.ts';
import { iso } from '../clock.ts';
import { addDomainEvent, pruneDomainEvents } from '../domains/domain-events.ts';
import { DMARC_FAILURE_THRESHOLD, failingSources, MAX_ANNOUNCED_PER_REPORT, type ReportReading } from '../mail/received-report.ts';
import type { DmarcReport } from '../mail/dmarc-aggregate.ts';
import type { TlsReport } from '../mail/tls-report.ts';

/** How long received reports and the rejected ones are kept (a little over a year: year-on-year comparisons). */
export const REPORT_RETENTION_DAYS = 400;
const DAY = 24 * 60 * 60_000;

export interface ReportAddress {
  workspaceId: string;
  domainId: string;
  domain: string;
}

export interface Sender {
  mailFrom: string;
  headerFrom: string;
  /** The report's own mail passed DMARC: it comes from the organization it names, as far as mail can tell. */
  authenticated: boolean;
}

/** Stores one reading for the domain whose address it came to; returns the id kept (report or rejection). */
export function* storeAggregateReport(ctx: DbContext, to: ReportAddress, reading: ReportReading, from: Sender): Query<string> {
  if ('rejected' in reading) return yield* keepAside(ctx, to, reading.format, from, reading.rejected, reading.bytes);
  const domains = reading.format === 'dmarc' ? [reading.report.policy.domain] : reading.report.policies.map((p) => p.domain);
  const foreign = domains.find((d) => !covers(to.domain, d));
  // RFC 7489 7.1: a report about another domain is not this domain's to keep (it may be another workspace's).
  if (foreign) return yield* keepAside(ctx, to, reading.format, from, `the report is about ${foreign}, not ${to.domain}`, 0);
  return reading.format === 'dmarc' ? yield* storeDmarc(ctx, to, reading.report, reading.ptrs, from.authenticated) : yield* storeTls(ctx, to, reading.report, from.authenticated);
}

const covers = (domain: string, name: string) => name === domain || name.endsWith(`.${domain}`);

function* keepAside(ctx: DbContext, to: ReportAddress, format: string, from: Sender, reason: string, bytes: number): Query<string> {
  const id = newId('rrej', ctx.clock.now());
  yield* run(
    'INSERT INTO rejected_reports (id, workspace_id, domain_id, format, mail_from, header_from, reason, bytes, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    id, to.workspaceId, to.domainId, format, from.mailFrom.slice(0, 320), from.headerFrom.slice(0, 320), reason.slice(0, 500), bytes, ctx.clock.now(),
  );
  ctx.log.info('report kept aside', { domain: to.domain, format, reason });
  return id;
}

function* storeDmarc(ctx: DbContext, to: ReportAddress, r: DmarcReport, ptrs: Record<string, string | null>, authenticated: boolean): Query<string> {
  const now = ctx.clock.now();
  const known = yield* value<string>('SELECT id FROM dmarc_reports WHERE domain_id = ? AND org_name = ? AND report_id = ?', to.domainId, r.orgName, r.reportId);
  if (known) return known;
  const id = newId('dmarc', now);
  const messages = r.rows.reduce((n, row) => n + row.count, 0);
  const failed = r.rows.reduce((n, row) => n + (row.dkim !== 'pass' && row.spf !== 'pass' ? row.count : 0), 0);
  yield* run(
    `INSERT INTO dmarc_reports (id, workspace_id, domain_id, org_name, org_email, report_id, begin_at, end_at, policy, messages, failed, authenticated, received_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id, to.workspaceId, to.domainId, r.orgName, r.email, r.reportId, r.begin, r.end, JSON.stringify(r.policy), messages, failed, authenticated ? 1 : 0, now,
  );
  const insert = `INSERT INTO dmarc_report_rows (report_id, domain_id, source_ip, count, disposition, dkim, spf, header_from, envelope_from, auth, reasons)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
  for (const row of r.rows) {
    yield* run(insert, id, to.domainId, row.sourceIp, row.count, row.disposition, row.dkim, row.spf, row.headerFrom, row.envelopeFrom, JSON.stringify(row.auth), JSON.stringify(row.reasons));
  }
  yield* announceFailures(now, to, { id, report: r, ptrs, authenticated });
  return id;
}

/**
 * domain.dmarc_failure for each source at or over the threshold that this domain has not announced before, at
 * most MAX_ANNOUNCED_PER_REPORT per report, most failing first.
 */
function* announceFailures(now: number, to: ReportAddress, k: { id: string; report: DmarcReport; ptrs: Record<string, string | null>; authenticated: boolean }): Query<void> {
  const totals = new Map<string, number>();
  for (const row of k.report.rows) totals.set(row.sourceIp, (totals.get(row.sourceIp) ?? 0) + row.count);
  let announced = 0;
  for (const [ip, failing] of failingSources(k.report)) {
    if (announced >= MAX_ANNOUNCED_PER_REPORT) break;
    if ((yield* run('INSERT INTO dmarc_failing_sources (domain_id, source_ip, first_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', to.domainId, ip, now)) === 0) continue;
    announced++;
    yield* addDomainEvent(now, {
      workspaceId: to.workspaceId,
      domainId: to.domainId,
      type: 'domain.dmarc_failure',
      data: {
        domain: { id: to.domainId, name: to.domain },
        source: { ip, ptr: k.ptrs[ip] ?? null },
        messages: failing,
        totalMessages: totals.get(ip) ?? failing,
        threshold: DMARC_FAILURE_THRESHOLD,
        report: { id: k.id, orgName: k.report.orgName, reportId: k.report.reportId, begin: iso(k.report.begin), end: iso(k.report.end), authenticated: k.authenticated },
      },
    });
  }
}

function* storeTls(ctx: DbContext, to: ReportAddress, r: TlsReport, authenticated: boolean): Query<string> {
  const now = ctx.clock.now();
  const known = yield* value<string>('SELECT id FROM tls_reports WHERE domain_id = ? AND org_name = ? AND report_id = ?', to.domainId, r.orgName, r.reportId);
  if (known) return known;
  const id = newId('tlsr', now);
  const successful = r.policies.reduce((n, p) => n + p.successful, 0);
  const failed = r.policies.reduce((n, p) => n + p.failed, 0);
  yield* run(
    `INSERT INTO tls_reports (id, workspace_id, domain_id, org_name, contact, report_id, begin_at, end_at, successful, failed, policies, authenticated, received_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id, to.workspaceId, to.domainId, r.orgName, r.contact, r.reportId, r.begin, r.end, successful, failed, JSON.stringify(r.policies), authenticated ? 1 : 0, now,
  );
  return id;
}

/** Housekeeping: reports and rejections past REPORT_RETENTION_DAYS, domain events past 30 days. */
export function* pruneReceivedReports(now: number): Query<number> {
  const before = now - REPORT_RETENTION_DAYS * DAY;
  let n = 0;
  n += yield* run('DELETE FROM dmarc_reports WHERE received_at < ?', before);
  n += yield* run('DELETE FROM tls_reports WHERE received_at < ?', before);
  n += yield* run('DELETE FROM rejected_reports WHERE received_at < ?', before);
  n += yield* pruneDomainEvents(now - 30 * DAY);
  return n;
}
