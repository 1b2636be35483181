// Replying to and forwarding one of the workspace's emails by its id: POST /emails/:id/reply and
// POST /emails/:id/forward. The answer is built from the stored original (send/reply.ts) and sent through
// send/submit like POST /emails: the same checks, limits, suppressions, idempotency and answer; or, with
// `draft: true`, kept as a composer draft for a person to read over and send.
import type { App } from '../context.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth, scopeOf, sendChannel } from '../http/auth.ts';
import { claimOf, idempotent } from '../http/idempotency.ts';
import { parseAnswerRequest } from '../send/request.ts';
import { answerRequest, draftOfAnswer } from '../send/reply.ts';
import { addFile, createDraft, draftById, shownDraft } from '../drafts/drafts.ts';
import { insufficientScope } from '../account/key-scope.ts';
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
      const req = await app.store.read(answerRequest(principal.workspaceId, ctx.params.id, kind, fields));
      if (fields.draft) {
        // Drafts are the workspace's, listed to whoever reads them: a scoped key may answer but not leave one.
        if (scopeOf(principal).permission !== 'full_access') throw insufficientScope('full_access', 'save a draft (drafts are the whole workspace\'s)');
        // A forward's draft carries the original's files as its own (within a draft's limits, else 400/413 and no draft).
        const draftId = await app.store.write(function* () {
          const id = yield* createDraft(app.clock.now(), principal.workspaceId, draftOfAnswer(req));
          const draft = (yield* draftById(principal.workspaceId, id))!;
          for (const f of req.attachments) yield* addFile(app.clock.now(), draft, f);
          return id;
        });
        ctx.status = 201;
        ctx.body = (await app.store.read(shownDraft(principal.workspaceId, draftId)))!;
        return;
      }
      ctx.body = await submit(app, principal.workspaceId, { ...req, sentBy: sendChannel(principal) }, claimOf(ctx));
    });
  }
  return r;
}
