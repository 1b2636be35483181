// Label endpoints (API-SPEC.md 4.3): the label list with the mailbox summary, one label by id or name, create
// (with rules, a dry run, and applying to stored mail), rename and recolour, bucket on and off, delete, rules
// added and removed; and labelling one email by hand. Applying to stored mail runs in the background
// (resort.ts); a label's deletion, which rewrites every email carrying it, runs on the writer thread.
import { z } from 'zod';
import type { App } from '../context.ts';
import { ApiError, notFound, validationError } from '../errors.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { iso } from '../clock.ts';
import { mailboxCounts } from '../emails/counts.ts';
import { getInbox } from '../inboxes/inboxes.ts';
import { changeEmailLabels, COLOR, createLabel, labelByRef, labelName, LabelExists, labelRef, listLabelRows, updateLabel, type LabelRow } from './labels.ts';
import { createRule, deleteRule, dryRun, presentRule, rulesOfWorkspace, type DryRun, type Rule, type RuleConditions } from './rules.ts';
import { resortPending, startResort, type Resorter } from './resort.ts';

const LabelChange = z
  .object({
    add: z.array(labelRef).max(100).optional(),
    remove: z.array(labelRef).max(100).optional(),
    create: z.boolean().optional(),
  })
  .strict();

const substring = z.string().trim().min(1).max(200).regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters');
const RuleBody = z
  .object({
    direction: z.enum(['in', 'out']).nullable().optional(),
    inbox_id: z.string().min(1).nullable().optional(),
    from: substring.nullable().optional(),
    to: substring.nullable().optional(),
    subject: substring.nullable().optional(),
    skip_inbox: z.boolean().optional(),
  })
  .strict();
const RuleRequest = RuleBody.extend({ apply_to_existing: z.boolean().optional(), dry_run: z.boolean().optional() }).strict();
const name = z.string().max(200).transform((s, ctx) => {
  const n = labelName(s);
  if (n.ok) return n.name;
  ctx.addIssue({ code: 'custom', message: n.reason });
  return z.NEVER;
});
const color = z.string().regex(COLOR, 'must be a colour of the form #rrggbb');
const CreateBody = z
  .object({ name, color: color.optional(), skip_inbox: z.boolean().optional(), rules: z.array(RuleBody).max(50).optional(), apply_to_existing: z.boolean().optional(), dry_run: z.boolean().optional() })
  .strict();
const PatchBody = z
  .object({ name: name.optional(), color: color.optional(), skip_inbox: z.boolean().optional(), apply_to_existing: z.boolean().optional() })
  .strict()
  .refine((b) => b.name !== undefined || b.color !== undefined || b.skip_inbox !== undefined, { message: 'give name, color or skip_inbox' });

const presentLabel = (l: LabelRow, rules: Rule[]) => ({
  id: l.id,
  name: l.name,
  color: l.color,
  skipInbox: l.skip_inbox === 1,
  totalCount: l.total_count,
  unreadCount: l.unread_count,
  rules: rules.filter((r) => r.labelId === l.id).map(presentRule),
});

/** GET /labels' reads, together. */
function* labelList(workspaceId: string) {
  return { rules: yield* rulesOfWorkspace(workspaceId), labels: yield* listLabelRows(workspaceId), pending: yield* resortPending(workspaceId) };
}

/** A label by id or name with the workspace's rules (presentLabel picks its own), or null. */
function* labelWithRules(workspaceId: string, ref: string) {
  const label = yield* labelByRef(workspaceId, ref);
  return label ? { label, rules: yield* rulesOfWorkspace(workspaceId) } : null;
}

/** The dry run of each rule's conditions. */
function* dryRuns(workspaceId: string, conditions: RuleConditions[]) {
  const results: DryRun[] = [];
  for (const c of conditions) results.push(yield* dryRun(workspaceId, c));
  return results;
}

export function labelRoutes(app: App, resorter: Pick<Resorter, 'wake'>) {
  const { store, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  /** A rule's conditions from a request, checked: at least one, and an inbox of this workspace. */
  const conditionsOf = async (workspaceId: string, b: z.infer<typeof RuleBody>, path: string): Promise<RuleConditions & { skipInbox: boolean }> => {
    const c = { direction: b.direction ?? null, inboxId: b.inbox_id ?? null, from: b.from ?? null, to: b.to ?? null, subject: b.subject ?? null, skipInbox: b.skip_inbox ?? false };
    if (!c.direction && !c.inboxId && !c.from && !c.to && !c.subject) throw validationError(path || 'body', 'a rule needs at least one condition: direction, inbox_id, from, to or subject');
    if (c.inboxId && !(await store.read(getInbox(workspaceId, c.inboxId)))) throw validationError(path ? `${path}.inbox_id` : 'inbox_id', `no inbox ${c.inboxId} in this workspace`);
    return c;
  };
  const labelOf = async (workspaceId: string, ref: string) => {
    const label = await store.read(labelByRef(workspaceId, ref));
    if (!label) throw notFound('Label');
    return label;
  };
  const presentDryRun = (result: DryRun) => ({
    dryRun: true,
    count: result.count,
    emails: result.newest.map((e) => ({ id: e.id, direction: e.direction, from: e.from_address, subject: e.subject, createdAt: iso(e.created_at) })),
  });

  r.get('/labels', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const { rules, labels, pending, counts } = await store.read(
      (function* () {
        return { ...(yield* labelList(workspaceId)), counts: yield* mailboxCounts(workspaceId) };
      })(),
    );
    const data = labels.map((l) => presentLabel(l, rules));
    ctx.body = { data, count: data.length, mailbox: { ...counts, resortPending: pending } };
  });

  r.get('/labels/:id', auth, async (ctx) => {
    const found = await store.read(labelWithRules(principalOf(ctx).workspaceId, ctx.params.id));
    if (!found) throw notFound('Label');
    ctx.body = presentLabel(found.label, found.rules);
  });

  r.post('/labels', auth, async (ctx) => {
    const body = parseInput(CreateBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const conditions: Array<RuleConditions & { skipInbox: boolean }> = [];
    for (const [i, rule] of (body.rules ?? []).entries()) conditions.push(await conditionsOf(workspaceId, rule, `rules.${i}`));
    if (body.dry_run) {
      // What the label's rules would file among stored mail: each rule's matches, the newest of the first.
      const results = await store.read(dryRuns(workspaceId, conditions));
      ctx.body = { dryRun: true, rules: results.map(presentDryRun) };
      return;
    }
    const label = await store.write(function* () {
      let created: LabelRow;
      try {
        created = yield* createLabel(clock.now(), workspaceId, { name: body.name, color: body.color, skipInbox: body.skip_inbox ?? false });
      } catch (err) {
        if (err instanceof LabelExists) throw new ApiError(409, 'label_exists', `A label named "${body.name}" already exists in this workspace`);
        throw err;
      }
      for (const c of conditions) {
        const rule = yield* createRule(clock.now(), workspaceId, created.id, c);
        if (body.apply_to_existing) yield* startResort(clock.now(), workspaceId, created.id, rule.id);
      }
      return created;
    });
    if (body.apply_to_existing && conditions.length) resorter.wake();
    ctx.status = 201;
    ctx.body = presentLabel(label, await store.read(rulesOfWorkspace(workspaceId)));
  });

  r.patch('/labels/:id', auth, async (ctx) => {
    const body = parseInput(PatchBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const label = await labelOf(workspaceId, ctx.params.id);
    // API-SPEC.md 4.3 rule 5: turning skip_inbox on archives the received mail already in the label.
    const bucketNow = body.skip_inbox === true && label.skip_inbox === 0 && body.apply_to_existing !== false;
    await store.write(function* () {
      try {
        yield* updateLabel(workspaceId, label.id, { name: body.name, color: body.color, skipInbox: body.skip_inbox });
      } catch (err) {
        if (err instanceof LabelExists) throw new ApiError(409, 'label_exists', `A label named "${body.name}" already exists in this workspace`);
        throw err;
      }
      if (bucketNow) yield* startResort(clock.now(), workspaceId, label.id, null);
    });
    if (bucketNow) resorter.wake();
    const after = await labelOf(workspaceId, label.id);
    ctx.body = { id: after.id, name: after.name, color: after.color, skipInbox: after.skip_inbox === 1 };
  });

  r.delete('/labels/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const label = await labelOf(workspaceId, ctx.params.id);
    await app.writer.commit([{ kind: 'labels.delete', payload: { workspaceId, labelId: label.id } }], { now: clock.now(), log: app.log });
    ctx.body = { ok: true };
  });

  r.post('/labels/:id/rules', auth, async (ctx) => {
    const body = parseInput(RuleRequest, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const label = await labelOf(workspaceId, ctx.params.id);
    const conditions = await conditionsOf(workspaceId, body, '');
    if (body.dry_run) {
      ctx.body = presentDryRun(await store.read(dryRun(workspaceId, conditions)));
      return;
    }
    const rule = await store.write(function* () {
      const created = yield* createRule(clock.now(), workspaceId, label.id, conditions);
      if (body.apply_to_existing) yield* startResort(clock.now(), workspaceId, label.id, created.id);
      return created;
    });
    if (body.apply_to_existing) resorter.wake();
    ctx.status = 201;
    ctx.body = presentRule(rule);
  });

  r.delete('/labels/:id/rules/:rule_id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const label = await labelOf(workspaceId, ctx.params.id);
    if (!(await store.write(() => deleteRule(workspaceId, label.id, ctx.params.rule_id)))) throw notFound('Rule');
    ctx.body = { ok: true };
  });

  r.post('/emails/:id/labels', auth, async (ctx) => {
    const body = parseInput(LabelChange, ctx.request.body ?? {});
    const workspaceId = principalOf(ctx).workspaceId;
    const labels = await store.write(() =>
      changeEmailLabels(clock, workspaceId, ctx.params.id, { add: body.add ?? [], remove: body.remove ?? [], create: body.create ?? true }),
    );
    if (!labels) throw notFound('Email');
    ctx.body = { id: ctx.params.id, labels };
  });

  return r;
}
