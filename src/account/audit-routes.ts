// GET /audit (session only, DESIGN.md "audit"): the workspace's audit log and the box-wide rows, newest first,
// paged like every list, filtered by action, actor, target and time. A key asking gets 403 session_required.
import { z } from 'zod';
import type { App } from '../context.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireSession } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { AUDIT_ACTIONS, listAudit } from './audit.ts';

const time = z
  .string()
  .max(40)
  .refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 time or date')
  .transform((s) => Date.parse(s));
const actions = z
  .string()
  .max(2000)
  .transform((s) => s.split(',').map((a) => a.trim()).filter(Boolean))
  .refine((list) => list.every((a) => (AUDIT_ACTIONS as readonly string[]).includes(a)), `must be one or more (comma-separated) of ${AUDIT_ACTIONS.join(', ')}`);
const AuditQuery = z
  .object({
    action: actions.optional(),
    actor: z.string().min(1).max(200).optional(),
    target_id: z.string().min(1).max(200).optional(),
    after: time.optional(),
    before: time.optional(),
    limit: z.string().optional(),
    offset: z.string().optional(),
  })
  .strict();

export function auditRoutes(app: App) {
  const r = apiRouter();
  r.get('/audit', requireSession(app.config.publicUrl), async (ctx) => {
    const q = parseInput(AuditQuery, ctx.query, 'query');
    const page = parsePage(ctx.query);
    const rows = await app.store.read(listAudit({ workspaceId: principalOf(ctx).workspaceId, actions: q.action, actor: q.actor, targetId: q.target_id, after: q.after, before: q.before, ...page }));
    ctx.body = pageOf(rows, page);
  });
  return r;
}
