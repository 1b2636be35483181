// Label endpoints (API-SPEC.md 4.3). For now the labelling of one email: POST /emails/:id/labels adds and
// removes labels by id or name, creating unknown names unless `create` is false.
import { z } from 'zod';
import type { App } from '../context.ts';
import { notFound } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { changeEmailLabels, labelRef } from './labels.ts';

const LabelChange = z
  .object({
    add: z.array(labelRef).max(100).optional(),
    remove: z.array(labelRef).max(100).optional(),
    create: z.boolean().optional(),
  })
  .strict();

export function labelRoutes(app: App) {
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  r.post('/emails/:id/labels', auth, async (ctx) => {
    const body = parseInput(LabelChange, ctx.request.body ?? {});
    const workspaceId = principalOf(ctx).workspaceId;
    const labels = await app.commit.run(() =>
      changeEmailLabels(app.db, app.clock, workspaceId, ctx.params.id, { add: body.add ?? [], remove: body.remove ?? [], create: body.create ?? true }),
    );
    if (!labels) throw notFound('Email');
    ctx.body = { id: ctx.params.id, labels };
  });

  return r;
}
