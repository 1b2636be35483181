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
    const answer = analyticsOf(app.db, workspaceId, days, app.clock.now());
    if (answer) return answer;
    // Derived data, counted again if a crash loses it: no fsync of its own (GroupCommit.runUnacknowledged).
    while (!(await app.commit.runUnacknowledged(() => settleSubjectWindow(app.db, workspaceId, days, app.clock.now()))));
  }
  throw new Error(`the ${days}-day subject window of workspace ${workspaceId} did not settle`);
}
