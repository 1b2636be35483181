// The received reports of a domain over the API: GET /domains/:id/dmarc-reports (filters after, before,
// source_ip, disposition, aligned), .../dmarc-reports/summary ("who sends as you", with PTR names),
// .../dmarc-reports/:reportId, /domains/:id/tls-reports and /domains/:id/rejected-reports. A domain of another
// workspace is a 404 like an unknown one.
import { isIP } from 'node:net';
import { z } from 'zod';
import type { App } from '../context.ts';
import { notFound } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { getDomain } from '../domains/domains.ts';
import { ptrCache } from '../dns/ptr-cache.ts';
import { dmarcReport, dmarcSummary, listDmarcReports, listRejectedReports, listTlsReports } from './report-queries.ts';

const ISO = /^\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?)?$/i;
const time = z
  .string()
  .refine((s) => ISO.test(s.trim()) && !Number.isNaN(Date.parse(s.trim())), 'must be an ISO 8601 date or timestamp, such as 2026-11-21 or 2026-11-21T10:00:00Z')
  .transform((s) => Date.parse(s.trim()));
const page = { limit: z.string().optional(), offset: z.string().optional() };
const Window = z.object({ after: time.optional(), before: time.optional(), ...page }).strict();
const DmarcQuery = Window.extend({
  source_ip: z.string().max(45).refine((s) => isIP(s) !== 0, 'must be an IPv4 or IPv6 address').optional(),
  disposition: z.enum(['none', 'quarantine', 'reject'], { error: 'must be none, quarantine or reject' }).optional(),
  aligned: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
}).strict();

const DAY = 24 * 60 * 60_000;
/** The summary's window when none is given: the last 30 days. */
const SUMMARY_DAYS = 30;

export function reportRoutes(app: App) {
  const { store } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);
  const ptr = ptrCache(app.dns);
  const domainOf = async (workspaceId: string, id: string) => {
    const row = await store.read(getDomain(workspaceId, id));
    if (!row) throw notFound('Domain');
    return row;
  };

  r.get('/domains/:id/dmarc-reports', auth, async (ctx) => {
    const q = parseInput(DmarcQuery, ctx.query, 'query');
    const domain = await domainOf(principalOf(ctx).workspaceId, ctx.params.id);
    const p = parsePage(ctx.query);
    const filter = { after: q.after, before: q.before, sourceIp: q.source_ip, disposition: q.disposition, aligned: q.aligned === undefined ? undefined : q.aligned === 'true' };
    ctx.body = pageOf(await store.read(listDmarcReports(domain.id, filter, p)), p);
  });

  r.get('/domains/:id/dmarc-reports/summary', auth, async (ctx) => {
    const q = parseInput(Window, ctx.query, 'query');
    const domain = await domainOf(principalOf(ctx).workspaceId, ctx.params.id);
    const p = parsePage(ctx.query);
    const before = q.before ?? app.clock.now();
    const { totals, sources } = await store.read(dmarcSummary(domain.id, { after: q.after ?? before - SUMMARY_DAYS * DAY, before }, p));
    const listed = pageOf(sources, p);
    const names = await Promise.all(listed.data.map((s) => ptr(s.sourceIp)));
    ctx.body = { domain: domain.name, totals, ...listed, data: listed.data.map((s, i) => ({ ...s, ptr: names[i] })) };
  });

  r.get('/domains/:id/dmarc-reports/:reportId', auth, async (ctx) => {
    const domain = await domainOf(principalOf(ctx).workspaceId, ctx.params.id);
    const report = await store.read(dmarcReport(domain.id, ctx.params.reportId));
    if (!report) throw notFound('DMARC report');
    ctx.body = report;
  });

  r.get('/domains/:id/tls-reports', auth, async (ctx) => {
    const q = parseInput(Window, ctx.query, 'query');
    const domain = await domainOf(principalOf(ctx).workspaceId, ctx.params.id);
    const p = parsePage(ctx.query);
    ctx.body = pageOf(await store.read(listTlsReports(domain.id, q, p)), p);
  });

  r.get('/domains/:id/rejected-reports', auth, async (ctx) => {
    parseInput(z.object(page).strict(), ctx.query, 'query');
    const domain = await domainOf(principalOf(ctx).workspaceId, ctx.params.id);
    const p = parsePage(ctx.query);
    ctx.body = pageOf(await store.read(listRejectedReports(domain.id, p)), p);
  });

  return r;
}
