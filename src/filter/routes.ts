// The spam filter over the API: the owner's allow and block lists (GET/POST/DELETE /spam/allow and /spam/block)
// and what the workspace's content filter has learned (GET /spam/filter). Workspace-scoped: an entry of another
// workspace's list is simply not found here.
import { z } from 'zod';
import type { App } from '../context.ts';
import { ApiError, notFound } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { addEntry, findEntry, listEntries, MAX_ENTRIES, parseEntry, removeEntry, type SpamList } from './lists.ts';
import { pendingTraining } from './learning.ts';
import { modelStats } from './store.ts';
import { MIN_TRAINED } from './verdict.ts';

const entry = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .transform((s, ctx) => {
    const parsed = parseEntry(s);
    if (parsed.ok) return parsed;
    ctx.addIssue({ code: 'custom', message: parsed.reason });
    return z.NEVER;
  });

const CreateBody = z.object({ entry }).strict();

const LISTS: SpamList[] = ['allow', 'block'];
const other = (list: SpamList): SpamList => (list === 'allow' ? 'block' : 'allow');

function* filterState(workspaceId: string) {
  return { stats: yield* modelStats(workspaceId), pending: yield* pendingTraining(workspaceId) };
}

/** The stored form of an entry in a path; one that fails the rules can only be absent. */
function pathEntry(raw: string): string {
  const parsed = parseEntry(raw);
  return parsed.ok ? parsed.entry : raw.trim().toLowerCase();
}

export function spamRoutes(app: App) {
  const { store, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  for (const list of LISTS) {
    r.get(`/spam/${list}`, auth, async (ctx) => {
      const page = parsePage(ctx.query);
      ctx.body = pageOf(await store.read(listEntries(principalOf(ctx).workspaceId, list, { limit: page.limit + 1, offset: page.offset })), page);
    });

    r.get(`/spam/${list}/:entry`, auth, async (ctx) => {
      const found = await store.read(findEntry(principalOf(ctx).workspaceId, pathEntry(ctx.params.entry)));
      if (!found || found.list !== list) throw notFound('Entry');
      ctx.body = { entry: found.entry, type: found.type, createdAt: found.createdAt };
    });

    r.post(`/spam/${list}`, auth, async (ctx) => {
      const body = parseInput(CreateBody, ctx.request.body);
      const workspaceId = principalOf(ctx).workspaceId;
      const outcome = await store.write(() => addEntry(workspaceId, list, body.entry, clock.now()));
      if ('exists' in outcome) {
        throw outcome.exists === list
          ? new ApiError(409, 'entry_exists', `${body.entry.entry} is already on your ${list} list`)
          : new ApiError(409, 'entry_on_other_list', `${body.entry.entry} is on your ${other(list)} list: remove it there first (DELETE /spam/${other(list)}/${encodeURIComponent(body.entry.entry)})`);
      }
      if ('full' in outcome) throw new ApiError(400, 'limit_exceeded', `Your allow and block lists hold ${MAX_ENTRIES} entries together, the most they may: remove some first, or block a whole domain`);
      ctx.status = 201;
      ctx.body = outcome.added;
    });

    r.delete(`/spam/${list}/:entry`, auth, async (ctx) => {
      const workspaceId = principalOf(ctx).workspaceId;
      if (!(await store.write(() => removeEntry(workspaceId, list, pathEntry(ctx.params.entry))))) throw notFound('Entry');
      ctx.body = { ok: true };
    });
  }

  // What the content filter has learned, and how many corrections wait to be learned.
  r.get('/spam/filter', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    // Read together. Not a snapshot (store.read is none): a training the writer commits between the two statements
    // shows for that moment as learned and still pending, or as neither.
    const { stats, pending } = await store.read(filterState(workspaceId));
    ctx.body = { filter: app.config.spamFilter, state: stats.state, learned: { spam: stats.spam, ham: stats.ham }, minimumEach: MIN_TRAINED, tokens: stats.tokens, pending };
  });

  return r;
}
