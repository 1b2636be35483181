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
import { runOn } from '../db/sqlite-query.ts';
import { getInbox } from '../inboxes/inboxes.ts';
import { changeEmailLabels, COLOR, createLabel, labelByRef, labelName, LabelExists, labelRef, listLabelRows, updateLabel, type LabelRow } from './labels.ts';
import { createRule, deleteRule, dryRun, presentRule, rulesOfWorkspace, type Rule, type RuleConditions } from './rules.ts';
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

export function labelRoutes(app: App, resorter: Pick<Resorter, 'wake'>) {
  const { db, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);

  /** A rule's conditions from a request, checked: at least one, and an inbox of this workspace. */
  const conditionsOf = (workspaceId: string, b: z.infer<typeof RuleBody>, path: string): RuleConditions & { skipInbox: boolean } => {
    const c = { direction: b.direction ?? null, inboxId: b.inbox_id ?? null, from: b.from ?? null, to: b.to ?? null, subject: b.subject ?? null, skipInbox: b.skip_inbox ?? false };
    if (!c.direction && !c.inboxId && !c.from && !c.to && !c.subject) throw validationError(path || 'body', 'a rule needs at least one condition: direction, inbox_id, from, to or subject');
    if (c.inboxId && !getInbox(db, workspaceId, c.inboxId)) throw validationError(path ? `${path}.inbox_id` : 'inbox_id', `no inbox ${c.inboxId} in this workspace`);
    return c;
  };
  const labelOf = (workspaceId: string, ref: string) => {
    const label = labelByRef(db, workspaceId, ref);
    if (!label) throw notFound('Label');
    return label;
  };
  const presentDryRun = (result: ReturnType<typeof dryRun>) => ({
    dryRun: true,
    count: result.count,
    emails: result.newest.map((e) => ({ id: e.id, direction: e.direction, from: e.from_address, subject: e.subject, createdAt: iso(e.created_at) })),
  });

  r.get('/labels', auth, (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const rules = rulesOfWorkspace(db, workspaceId);
    const data = listLabelRows(db, workspaceId).map((l) => presentLabel(l, rules));
    // Bridge: a synchronous route of labels/ (async once its own reads are queries).
    ctx.body = { data, count: data.length, mailbox: { ...runOn(db, mailboxCounts(workspaceId)), resortPending: resortPending(db, workspaceId) } };
  });

  r.get('/labels/:id', auth, (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    ctx.body = presentLabel(labelOf(workspaceId, ctx.params.id), rulesOfWorkspace(db, workspaceId));
  });

  r.post('/labels', auth, async (ctx) => {
    const body = parseInput(CreateBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const conditions = (body.rules ?? []).map((rule, i) => conditionsOf(workspaceId, rule, `rules.${i}`));
    if (body.dry_run) {
      // What the label's rules would file among stored mail: each rule's matches, the newest of the first.
      const results = conditions.map((c) => dryRun(db, workspaceId, c));
      ctx.body = { dryRun: true, rules: results.map(presentDryRun) };
      return;
    }
    const label = await app.commit.run(() => {
      let created: LabelRow;
      try {
        created = createLabel(db, clock.now(), workspaceId, { name: body.name, color: body.color, skipInbox: body.skip_inbox ?? false });
      } catch (err) {
        if (err instanceof LabelExists) throw new ApiError(409, 'label_exists', `A label named "${body.name}" already exists in this workspace`);
        throw err;
      }
      for (const c of conditions) {
        const rule = createRule(db, clock.now(), workspaceId, created.id, c);
        if (body.apply_to_existing) startResort(db, clock.now(), workspaceId, created.id, rule.id);
      }
      return created;
    });
    if (body.apply_to_existing && conditions.length) resorter.wake();
    ctx.status = 201;
    ctx.body = presentLabel(label, rulesOfWorkspace(db, workspaceId));
  });

  r.patch('/labels/:id', auth, async (ctx) => {
    const body = parseInput(PatchBody, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const label = labelOf(workspaceId, ctx.params.id);
    // API-SPEC.md 4.3 rule 5: turning skip_inbox on archives the received mail already in the label.
    const bucketNow = body.skip_inbox === true && label.skip_inbox === 0 && body.apply_to_existing !== false;
    await app.commit.run(() => {
      try {
        updateLabel(db, workspaceId, label.id, { name: body.name, color: body.color, skipInbox: body.skip_inbox });
      } catch (err) {
        if (err instanceof LabelExists) throw new ApiError(409, 'label_exists', `A label named "${body.name}" already exists in this workspace`);
        throw err;
      }
      if (bucketNow) startResort(db, clock.now(), workspaceId, label.id, null);
    });
    if (bucketNow) resorter.wake();
    const after = labelOf(workspaceId, label.id);
    ctx.body = { id: after.id, name: after.name, color: after.color, skipInbox: after.skip_inbox === 1 };
  });

  r.delete('/labels/:id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const label = labelOf(workspaceId, ctx.params.id);
    await app.writer.commit([{ kind: 'labels.delete', payload: { workspaceId, labelId: label.id } }], { now: clock.now(), log: app.log });
    ctx.body = { ok: true };
  });

  r.post('/labels/:id/rules', auth, async (ctx) => {
    const body = parseInput(RuleRequest, ctx.request.body);
    const workspaceId = principalOf(ctx).workspaceId;
    const label = labelOf(workspaceId, ctx.params.id);
    const conditions = conditionsOf(workspaceId, body, '');
    if (body.dry_run) {
      ctx.body = presentDryRun(dryRun(db, workspaceId, conditions));
      return;
    }
    const rule = await app.commit.run(() => {
      const created = createRule(db, clock.now(), workspaceId, label.id, conditions);
      if (body.apply_to_existing) startResort(db, clock.now(), workspaceId, label.id, created.id);
      return created;
    });
    if (body.apply_to_existing) resorter.wake();
    ctx.status = 201;
    ctx.body = presentRule(rule);
  });

  r.delete('/labels/:id/rules/:rule_id', auth, async (ctx) => {
    const workspaceId = principalOf(ctx).workspaceId;
    const label = labelOf(workspaceId, ctx.params.id);
    if (!(await app.commit.run(() => deleteRule(db, workspaceId, label.id, ctx.params.rule_id)))) throw notFound('Rule');
    ctx.body = { ok: true };
  });

  r.post('/emails/:id/labels', auth, async (ctx) => {
    const body = parseInput(LabelChange, ctx.request.body ?? {});
    const workspaceId = principalOf(ctx).workspaceId;
    const labels = await app.commit.run(() =>
      changeEmailLabels(db, clock, workspaceId, ctx.params.id, { add: body.add ?? [], remove: body.remove ?? [], create: body.create ?? true }),
    );
    if (!labels) throw notFound('Email');
    ctx.body = { id: ctx.params.id, labels };
  });

  return r;
}
