// Inbox endpoints of API-SPEC.md 4.4: create an address on a domain of the workspace, list, show, rename or
// disable (a disabled inbox refuses mail at RCPT), delete (its messages are kept).
import { z } from 'zod';
import type { App } from '../context.ts';
import { ApiError, notFound } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { getDomain } from '../domains/domains.ts';
import { LOCAL_PART } from '../mail/addresses.ts';
import { createInbox, deleteInbox, getInbox, InboxExists, listInboxes, presentInbox, updateInbox } from './inboxes.ts';

const name = z.string().trim().max(200).regex(/^[^\p{Cc}]*$/u, 'must not contain control characters');

const CreateBody = z
  .object({
    domain_id: z.string().min(1, 'is required'),
    local_part: z.string().max(64, 'must be at most 64 characters').regex(LOCAL_PART, 'must be a plain local part such as support or first.last'),
    name: name.optional(),
  })
  .strict();
const PatchBody = z
  .object({ name: name.optional(), status: z.enum(['active', 'disabled']).optional() })
  .strict()
  .refine((b) => b.name !== undefined || b.status !== undefined, { message: 'give name or status' });
const ListQuery = z.object({ domain_id: z.string().min(1).optional() }).passthrough();

export function inboxRoutes(app: App) {
  const { db, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  r.post('/inboxes', auth, (ctx) => {
    const body = parseInput(CreateBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const domain = getDomain(db, workspaceId, body.domain_id);
    if (!domain) throw notFound('Domain');
    try {
      const row = createInbox(db, clock, { workspaceId, domainId: domain.id, domain: domain.name, localPart: body.local_part, name: body.name ?? '' });
      ctx.status = 201;
      ctx.body = presentInbox(row);
    } catch (err) {
      if (err instanceof InboxExists) throw new ApiError(409, 'inbox_exists', `The address ${err.message} is already an inbox`);
      throw err;
    }
  });

  r.get('/inboxes', auth, (ctx) => {
    const { domain_id } = parseInput(ListQuery, ctx.query, 'query');
    const page = parsePage(ctx.query);
    ctx.body = pageOf(listInboxes(db, principalOf(ctx).workspaceId, domain_id, page).map(presentInbox), page);
  });

  r.get('/inboxes/:id', auth, (ctx) => {
    const row = getInbox(db, principalOf(ctx).workspaceId, ctx.params.id);
    if (!row) throw notFound('Inbox');
    ctx.body = presentInbox(row);
  });

  r.patch('/inboxes/:id', auth, (ctx) => {
    const body = parseInput(PatchBody, ctx.request.body);
    const row = updateInbox(db, principalOf(ctx).workspaceId, ctx.params.id, body);
    if (!row) throw notFound('Inbox');
    ctx.body = presentInbox(row);
  });

  r.delete('/inboxes/:id', auth, (ctx) => {
    if (!deleteInbox(db, principalOf(ctx).workspaceId, ctx.params.id)) throw notFound('Inbox');
    ctx.body = { ok: true };
  });

  return r;
}
