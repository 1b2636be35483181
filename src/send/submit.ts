// The one way mail enters the outbound queue (docs/architecture.md: API send, batch, and later templates,
// drafts, SMTP submission, forwarding). planSend checks the sender and threads the message with reads only;
// writeSend commits the email, its attachments, its full-text row, one queue row and one `sent` event per
// recipient. A front door's send is written by the writer thread with its idempotency record in one group
// commit, and the caller is answered only after that is on disk. Composition and DKIM signing happen later,
// once, in the queue.
import type { App, DbContext } from '../context.ts';
import { ApiError, validationError } from '../errors.ts';
import { isId, newId } from '../db/ids.ts';
import { boxSecret, readBoxSecret } from '../db/box-secret.ts';
import { domainOf } from '../mail/addresses.ts';
import { findSendingDomain, unsubscribePrefixes } from '../domains/domains.ts';
import { findLabels, resolveForAdding } from '../labels/labels.ts';
import { countedSend, storeSentEmail } from '../emails/store.ts';
import { fileNewEmail } from '../labels/filing.ts';
import { emailById, emailByMessageId } from '../emails/lookup.ts';
import { answerStep, storeAnswer, type IdempotencyClaim, type IdempotencyRecord } from '../db/idempotency.ts';
import { dialect, nothing, together, type Query } from '../db/query.ts';
import { cached, type NodeCache } from '../db/node-cache.ts';
import { heldPlans, limitsOf, meter, type Limits, type PlanConfig } from '../account/plans.ts';
import { rulesOfWorkspace, type Rule } from '../labels/rules.ts';
import { assertSendingAllowed } from '../account/reputation.ts';
import type { Step } from '../db/writer.ts';
import { movingContents } from '../threads/worker-pool.ts';
import type { SendRequest } from './request.ts';
import { verpAddress } from '../feedback/verp.ts';
import { enqueue } from './enqueue.ts';
import { holdSend, scheduleTime } from './schedule.ts';
import { ownOneClickUrl, unsubscribeUrlAllowed } from '../feedback/unsubscribe.ts';
import { renderForSend } from '../templates/use.ts';
import { UNSUBSCRIBE_PLACEHOLDER } from '../templates/content.ts';
import { escapeHtml } from '../pages/html.ts';
import { learnFromSend } from '../filter/learning.ts';
import { suppressionsFor, type Suppression } from '../feedback/suppressions.ts';

export interface Submitted {
  id: string;
  providerMessageId: string;
  threadId: string;
}

/**
 * A send that passed every check, as plain data: what writeSend stores. It crosses to the writer thread by
 * structured clone, so it holds no functions and no connection.
 */
export interface PlannedSend {
  answer: Submitted;
  workspaceId: string;
  req: SendRequest;
  domainId: string;
  fromDomain: string;
  /** Without angle brackets. */
  messageId: string;
  inReplyTo: string | null;
  refs: string[];
  /** Envelope recipients, each address once. */
  recipients: string[];
  envelopeFrom: string;
  /** The email's creation time (ms). */
  now: number;
  /** When a scheduled send is released to the queue; null to queue it now. */
  scheduledAt: number | null;
  /** The workspace's plan limits and label rules, read with the plan on PostgreSQL (readsOutsideTheLock); absent, read in the writer's transaction. */
  readFirst?: { limits: Limits; rules: Rule[] };
  /** The recipients' suppressions, read with the plan on PostgreSQL (suppressionsOutsideTheLock); absent, read in the writer's transaction. */
  suppressed?: Map<string, Suppression>;
}

const MAX_REFERENCES = 20;

/**
 * Checks a send and works out its ids, thread and envelope with reads only; throws ApiError for what the
 * caller must fix. Nothing is written: writeSend does that, in the writer's transaction.
 */
export function* planSend(app: Pick<DbContext, 'clock' | 'config'> & { cache?: NodeCache | null }, workspaceId: string, req: SendRequest, secret?: Buffer): Query<PlannedSend> {
  const { clock } = app;
  // A send by template is rendered before it is planned (withTemplate), off the event loop when it is large.
  if (req.template) throw new Error('planSend: render the template first (withTemplate)');
  const fromDomain = domainOf(req.from.address);
  const parentKey = req.inReplyTo?.replace(/^<|>$/g, '');
  const addressed = req.envelopeTo ?? [...req.to, ...req.cc, ...req.bcc].map((m) => m.address);
  const recipients = [...new Map(addressed.map((a) => [a.toLowerCase(), a])).values()];
  // The reads a send needs, side by side (one round trip on PostgreSQL); a refusal is told in this order. The
  // sending state, domain, plans and rules come from the node's cache when it keeps them; suppressions never do.
  const [, domain, labels, parent, secretRead, readFirst, suppressed] = yield* together(
    assertSendingAllowed(app.config, workspaceId, clock.now(), app.cache),
    cached(app.cache, `domain ${workspaceId} ${fromDomain}`, findSendingDomain(workspaceId, fromDomain)),
    findLabels(workspaceId, req.labels),
    parentKey === undefined ? nothing() : isId('em', parentKey) ? emailById(workspaceId, parentKey) : emailByMessageId(workspaceId, parentKey),
    // The box secret, which never changes once made: given by a caller that holds it (boxSecret), else read.
    secret ? nothing() : readBoxSecret(),
    cached(app.cache, `plans and rules ${workspaceId}`, readsOutsideTheLock(app.config, workspaceId)),
    suppressionsOutsideTheLock(workspaceId, recipients, req.messageClass),
  );
  if (!domain || domain.status !== 'verified') {
    throw new ApiError(403, 'domain_not_verified', `The domain ${fromDomain} is not verified in this workspace: add it with POST /domains and verify its DNS records`);
  }
  if (req.messageClass === 'marketing' && domain.marketing !== 1) {
    throw new ApiError(403, 'marketing_not_enabled', `Marketing mail is not enabled for ${fromDomain}: PATCH /domains/${domain.id} with {"marketing": true}`);
  }

  const unknownLabel = labels.missing.find((ref) => isId('lbl', ref));
  if (unknownLabel) throw validationError('labels', `no label ${unknownLabel} in this workspace`);

  const now = clock.now();
  const id = newId('em', now);
  const messageId = `${id.slice(3).toLowerCase()}@${fromDomain}`;
  let threadId = id;
  let inReplyTo: string | null = null;
  let refs: string[] = [];
  if (parentKey !== undefined) {
    if (!parent && isId('em', parentKey)) throw validationError('in_reply_to', `no email ${parentKey} in this workspace`);
    inReplyTo = parent?.message_id ?? parentKey;
    // RFC 5322 3.6.4: the parent's References, or failing those its In-Reply-To, then its Message-ID.
    const parentRefs = parent ? (JSON.parse(parent.refs) as string[]) : [];
    const earlier = parentRefs.length ? parentRefs : parent?.in_reply_to ? [parent.in_reply_to] : [];
    refs = [...earlier, inReplyTo].slice(-MAX_REFERENCES);
    if (parent) threadId = parent.thread_id;
  }

  return {
    answer: { id, providerMessageId: `<${messageId}>`, threadId },
    workspaceId,
    req,
    domainId: domain.id,
    fromDomain,
    messageId,
    inReplyTo,
    refs,
    recipients,
    envelopeFrom: verpAddress(secret ?? secretRead!, id, domain.return_path),
    now,
    scheduledAt: scheduleTime(req.scheduledAt, now),
    ...(readFirst ? { readFirst } : {}),
    ...(suppressed ? { suppressed } : {}),
  };
}

/**
 * A send by template with the active release rendered into it (400 with the findings when it cannot be; 429 or
 * 503 from the render threads: templates/render-pool.ts); any other send as it is. A paused workspace is told
 * so before anything is rendered, as planSend would.
 */
async function withTemplate(app: App, workspaceId: string, req: SendRequest): Promise<SendRequest> {
  if (!req.template) return req;
  await app.store.read(assertSendingAllowed(app.config, workspaceId, app.clock.now(), app.cache));
  const { template: use, ...rest } = req;
  // Marketing mail keeps {{unsubscribe_url}} for the box to fill per recipient (send/personalise.ts), or, from a
  // first-party integration whose own one-click URL the domain allows, gets that URL: visible in the body, it
  // is what lets the sender's pair stand (feedback/unsubscribe.ts keepsOwnOneClick).
  const own = ownOneClickUrl(req.headers);
  const firstParty = own !== null && unsubscribeUrlAllowed(own, await app.store.read(unsubscribePrefixes(workspaceId, domainOf(req.from.address))));
  const keep = (messageClass: string) => messageClass === 'marketing';
  const { rendered, messageClass, origin } = await renderForSend(app, workspaceId, use!, keep, use!.messageClass);
  let { html, text } = rendered;
  if (messageClass === 'marketing' && firstParty) {
    html = html.replaceAll(UNSUBSCRIBE_PLACEHOLDER, escapeHtml(own));
    text = text.replaceAll(UNSUBSCRIBE_PLACEHOLDER, own);
  }
  return {
    ...rest,
    subject: use!.subject ?? rendered.subject,
    ...(html ? { html } : {}),
    ...(text ? { text } : {}),
    messageClass,
    origin,
  };
}

/**
 * Writes a planned send: the email, its full-text row, contents and attachments, and per recipient a queue
 * row and a `sent` event (or, for a suppressed address, a `blocked` row and event). A query (db/query.ts) for
 * the caller's transaction.
 */
export function* writeSend(app: DbContext, plan: PlannedSend): Query<void> {
  const { clock } = app;
  const { req, workspaceId, now } = plan;
  const { id, threadId } = plan.answer;
  // Checked and counted before anything is written, in the transaction that queues: 429 leaves nothing behind.
  yield* meter(app.config, workspaceId, now, { recipients: plan.recipients.length, attachmentBytes: req.attachments.reduce((n, a) => n + a.content.length, 0) }, plan.readFirst?.limits);
  const labelIds = (yield* resolveForAdding(clock, workspaceId, req.labels, true, 'labels')).map((l) => l.id);
  yield* storeSentEmail(clock, {
    id,
    workspaceId,
    threadId,
    domainId: plan.domainId,
    domain: plan.fromDomain,
    messageId: plan.messageId,
    inReplyTo: plan.inReplyTo,
    refs: plan.refs,
    envelopeFrom: plan.envelopeFrom,
    labelIds,
    content: req,
  });
  yield* fileNewEmail(now, workspaceId, id, undefined, plan.readFirst?.rules);
  // The spam filter: recipients become correspondents, and a reply teaches it the message replied to was ham.
  yield* learnFromSend({ workspaceId, recipients: plan.recipients, inReplyTo: plan.inReplyTo, byOwner: req.sentBy !== undefined, bulk: req.messageClass === 'marketing' || !!req.origin?.test, now });
  if (plan.scheduledAt !== null) yield* holdSend(app, { emailId: id, workspaceId, scheduledAt: plan.scheduledAt, recipients: plan.recipients });
  else yield* enqueue(app, { id, workspaceId, messageClass: req.messageClass, counted: countedSend(req) }, plan.recipients, plan.suppressed);
}

/**
 * The writer job `send` (start/writer-jobs.ts): writes planned sends, each with the time it was planned. The forwarded
 * copy of a received message runs it inside the receive's own job, so all three send paths (a front door's,
 * a forwarded copy, a forwarding confirmation) write through it.
 */
export function* writeSends(ctx: DbContext, plans: PlannedSend[]): Query<void> {
  for (const plan of plans) yield* writeSend({ ...ctx, clock: { now: () => plan.now } }, plan);
}

/**
 * On PostgreSQL, what writeSend would otherwise read in the writer's transaction, under the box's write lock, where
 * each read's round trip holds every other writer up: the workspace's plan limits and label rules, read with the
 * send's other reads. A plan or rule changed in the moment between applies from the next send on. On SQLite, where
 * a read costs no round trip, nothing.
 */
function* readsOutsideTheLock(config: PlanConfig, workspaceId: string): Query<PlannedSend['readFirst']> {
  if ((yield* dialect()) !== 'postgres') return undefined;
  const [held, rules] = yield* together(heldPlans(config, workspaceId), rulesOfWorkspace(workspaceId));
  return { limits: limitsOf(held), rules };
}

/**
 * On PostgreSQL, the recipients' suppressions, read with the send's other reads rather than under the write lock
 * (enqueue.ts): a suppression committed before the send was asked for is seen; one committed in the milliseconds
 * between this read and the send's commit applies from the next send on, as if it had come after. On SQLite, nothing.
 */
function* suppressionsOutsideTheLock(workspaceId: string, recipients: string[], messageClass: SendRequest['messageClass']): Query<Map<string, Suppression> | undefined> {
  if ((yield* dialect()) !== 'postgres') return undefined;
  return yield* suppressionsFor(workspaceId, recipients, messageClass);
}

/** The writer step that queues `plans`, and the attachment buffers that move to the writer with it. */
export function sendStep(plans: PlannedSend[]): { step: Step<'send'>; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const moved = plans.map((plan) => (plan.req.attachments.length ? { ...plan, req: { ...plan.req, attachments: movingContents(plan.req.attachments, transfer) } } : plan));
  return { step: { kind: 'send', payload: moved }, transfer };
}

/** The signing threads and the queue for sends to go now, the scheduler for sends held until later. */
function wakeFor(app: App, plans: PlannedSend[]): void {
  const now = plans.filter((p) => p.scheduledAt === null);
  if (now.length) {
    app.presign.accepted(now.map((p) => p.answer.id));
    app.queue.wake();
  }
  if (plans.some((p) => p.scheduledAt !== null)) app.scheduler.wake();
}

/**
 * Writes the sends, and the claim's answer with them, in one writer transaction; resolves after it is on disk,
 * and throws the ApiError of a check that refused them (then nothing was written).
 */
async function commitSends(app: App, plans: PlannedSend[], now: number, answer?: { claim: IdempotencyClaim; status: number; body: unknown }, also: Step[] = []): Promise<void> {
  const { step, transfer } = sendStep(plans);
  const steps = [step, ...also, ...(answer ? [answerStep(answer.claim, answer.status, answer.body)] : [])];
  await app.writer.commit(steps, { now, log: app.log, transfer });
  answer?.claim.stored();
}

/**
 * A send from a front door (API, SMTP submission, a composer draft): checked here, then written by the writer
 * thread with its idempotency record and any `also` steps (a sent draft's deletion) in one transaction;
 * resolves after that commit is on disk.
 */
export async function submit(app: App, workspaceId: string, req: SendRequest, claim?: IdempotencyClaim, also: Step[] = []): Promise<Submitted> {
  refuseWhenDiskLow(app);
  const plan = await app.store.read(planSend(app, workspaceId, await withTemplate(app, workspaceId, req), await boxSecret(app.store)));
  await commitSends(app, [plan], plan.now, claim && { claim, status: 200, body: plan.answer }, also);
  wakeFor(app, [plan]);
  return plan.answer;
}

export type BatchItem = { index: number; ok: true; id: string } | { index: number; ok: false; error: { message: string; code: string } };

/**
 * A batch: items that failed validation arrive as ApiErrors; the rest are checked and committed together in
 * one transaction (with the batch's idempotency record), so a batch is accepted whole or not at all.
 */
/** Below min_free_space_mb nothing new is taken: the same answer as a full disk, before anything is written. */
export function refuseWhenDiskLow(app: Pick<App, 'disk'>): void {
  if (app.disk?.low) throw new ApiError(507, 'insufficient_storage', 'The server is low on disk space; nothing was stored. Try again later.', { headers: { 'retry-after': '60' } });
}

export async function submitBatch(app: App, workspaceId: string, items: Array<SendRequest | ApiError>, claim?: IdempotencyClaim) {
  refuseWhenDiskLow(app);
  // One item after another: a batch holds at most one of the workspace's render threads (render-pool.ts).
  const planned: Array<PlannedSend | ApiError> = [];
  for (const item of items) {
    if (item instanceof ApiError) {
      planned.push(item);
      continue;
    }
    try {
      const ready = await withTemplate(app, workspaceId, item);
      planned.push(await app.store.read(planSend(app, workspaceId, ready, await boxSecret(app.store))));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      planned.push(err);
    }
  }
  const data: BatchItem[] = planned.map((p, index) => (p instanceof ApiError ? { index, ok: false, error: { message: p.message, code: p.code } } : { index, ok: true, id: p.answer.id }));
  const { step, transfer } = sendStep(planned.filter((p): p is PlannedSend => !(p instanceof ApiError)));
  const [answer] = await app.writer.commit([{ kind: 'send.batch', payload: { plans: step.payload, data, record: claim?.record } }], { now: app.clock.now(), log: app.log, transfer });
  claim?.stored();
  if (answer.successful) wakeFor(app, step.payload);
  return answer;
}

export interface BatchJob {
  plans: PlannedSend[];
  /** Every item, as judged before the writer: refused ones are final, accepted ones may still go over the plan. */
  data: BatchItem[];
  record?: IdempotencyRecord;
}

type BatchAnswer = { data: BatchItem[]; count: number; successful: number; failed: number };

/**
 * The writer job `send.batch`: writes each planned item, except one the plan's limits refuse, which fails
 * alone with `quota_exceeded`; the answer, so decided in the transaction, is stored with the Idempotency-Key.
 */
export function* writeBatch(ctx: DbContext, job: BatchJob): Query<BatchAnswer> {
  const data = job.data.map((d) => ({ ...d }));
  for (const plan of job.plans) {
    const index = data.findIndex((d) => d.ok && d.id === plan.answer.id);
    try {
      yield* writeSend({ ...ctx, clock: { now: () => plan.now } }, plan);
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== 'quota_exceeded') throw err;
      data[index] = { index, ok: false, error: { message: err.message, code: err.code } };
    }
  }
  const successful = data.filter((d) => d.ok).length;
  const answer = { data, count: data.length, successful, failed: data.length - successful };
  if (job.record) yield* storeAnswer(ctx.clock.now(), job.record, 200, answer);
  return answer;
}
