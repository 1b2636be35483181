// GET /analytics (API-SPEC.md 4.7; DESIGN.md "analytics days"): `days` 7, 30 (default) or 90, anything else a
// 400 naming it; an API key or a session. It reads, but for the first request of a day, which first counts the
// day that ended and moves the subject windows on (analytics.ts), in commits of their own. Mounted by start/front-doors.ts.
import { z } from 'zod';
import type { App } from '../context.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { analyticsOf, settleSubjectWindow, type Analytics, type WindowDays } from './analytics.ts';

const Query = z.object({ days: z.enum(['7', '30', '90'], { error: 'must be 7, 30 or 90' }).default('30') });

export function analyticsRoutes(app: App) {
  const r = apiRouter();
  r.get('/analytics', requireAuth(app.config.publicUrl), async (ctx) => {
    const days = Number(parseInput(Query, ctx.query, 'query').days) as WindowDays;
    ctx.body = await analytics(app, principalOf(ctx).workspaceId, days);
  });
  return r;
}

async function analytics(app: App, workspaceId: string, days: WindowDays): Promise<Analytics> {
  // Settled twice at most: again only when a day ended between settling and reading.
  for (let attempt = 0; attempt < 3; attempt++) {
    // One read transaction, so that every part of the answer is from the same moment.
    const answer = await app.store.read(analyticsOf(workspaceId, days, app.clock.now()), { snapshot: true });
    if (answer) return answer;
    // Derived data, counted again if a crash loses it: a write that acknowledges nobody, no fsync of its own.
    while (!(await app.store.write(() => settleSubjectWindow(workspaceId, days, app.clock.now()), { acknowledged: false })));
  }
  throw new Error(`the ${days}-day subject window of workspace ${workspaceId} did not settle`);
}
