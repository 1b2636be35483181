// Replying to and forwarding one of the workspace's emails by its id: POST /emails/:id/reply and
// POST /emails/:id/forward. The answer is built from the stored original (send/reply.ts) and sent through
// send/submit like POST /emails: the same checks, limits, suppressions, idempotency and answer.
import type { App } from '../context.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth, sendChannel } from '../http/auth.ts';
import { claimOf, idempotent } from '../http/idempotency.ts';
import { parseAnswerRequest } from '../send/request.ts';
import { answerRequest } from '../send/reply.ts';
import { submit } from '../send/submit.ts';

export function replyRoutes(app: App) {
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);
  for (const kind of ['reply', 'forward'] as const) {
    // Keys are scoped to the email answered: one key reused for another email is another request.
    const scope = idempotent(app.idempotency, (ctx) => `POST /emails/${ctx.params.id}/${kind}`);
    r.post(`/emails/:id/${kind}`, auth, scope, async (ctx) => {
      const principal = principalOf(ctx);
      const fields = parseAnswerRequest(ctx.request.body, kind);
      const req = answerRequest(app.db, principal.workspaceId, ctx.params.id, kind, fields);
      ctx.body = await submit(app, principal.workspaceId, { ...req, sentBy: sendChannel(principal) }, claimOf(ctx));
    });
  }
  return r;
}
