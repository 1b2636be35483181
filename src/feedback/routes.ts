// The suppression list over the API: the owner sees why each address is on it (reason, origin, the email that
// caused it), adds addresses of their own and removes entries to send to an address again. Workspace-scoped:
// an address on another workspace's list is simply not found here.
import { z } from 'zod';
import type { App } from '../context.ts';
import { notFound } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { checkAddress } from '../mail/addresses.ts';
import { getSuppression, listSuppressions, suppress, unsuppress } from './suppressions.ts';

// The same address rules as sending, so an entry matches the recipient a send would use (IDN domains in ASCII).
const address = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .max(320, 'is longer than 320 characters')
  .transform((s, ctx) => {
    const checked = checkAddress(s.trim());
    if (checked.ok) return checked.mailbox.address.toLowerCase();
    ctx.addIssue({ code: 'custom', message: checked.reason });
    return z.NEVER;
  });

const CreateBody = z
  .object({
    email: address,
    scope: z.enum(['all', 'marketing'], { error: 'must be "all" or "marketing"' }).default('all'),
    // Bounces, complaints and unsubscribes are the recipients' to report; the owner's own entries are manual.
    reason: z.literal('manual', { error: 'must be "manual" (bounces, complaints and unsubscribes are recorded by the box)' }).default('manual'),
  })
  .strict();

const ListQuery = z
  .object({ reason: z.enum(['hard_bounce', 'complaint', 'unsubscribe', 'manual'], { error: 'must be one of hard_bounce, complaint, unsubscribe, manual' }).optional() })
  .passthrough();

/** The stored form of an address in a path; one that fails the address rules can only be absent. */
const pathAddress = (raw: string) => {
  const checked = checkAddress(raw.trim());
  return (checked.ok ? checked.mailbox.address : raw).toLowerCase();
};

export function suppressionRoutes(app: App) {
  const { store, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  r.get('/suppressions', auth, async (ctx) => {
    const { reason } = parseInput(ListQuery, ctx.query, 'query');
    const page = parsePage(ctx.query);
    ctx.body = pageOf(await store.read(listSuppressions(principalOf(ctx).workspaceId, page, reason)), page);
  });

  r.get('/suppressions/:email', auth, async (ctx) => {
    const entry = await store.read(getSuppression(principalOf(ctx).workspaceId, pathAddress(ctx.params.email)));
    if (!entry) throw notFound('Suppression');
    ctx.body = entry;
  });

  // 201 with the new entry; 200 with the entry as it stands when the address was already listed (an 'all'
  // entry keeps the reason that stopped the mail; a marketing-only one is widened when scope is 'all').
  r.post('/suppressions', auth, async (ctx) => {
    const body = parseInput(CreateBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const { existed, entry } = await store.write(function* () {
      const existed = (yield* getSuppression(workspaceId, body.email)) !== null;
      yield* suppress(clock, { workspaceId, email: body.email, scope: body.scope, reason: body.reason, origin: 'api' });
      return { existed, entry: yield* getSuppression(workspaceId, body.email) };
    });
    ctx.status = existed ? 200 : 201;
    ctx.body = entry;
  });

  r.delete('/suppressions/:email', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    if (!(await store.write(() => unsuppress(workspaceId, pathAddress(ctx.params.email))))) throw notFound('Suppression');
    ctx.body = { ok: true };
  });

  return r;
}
