// Files one analysed message in the caller's transaction: for every inbox it was addressed to it is judged
// for spam (spam.ts), classified, threaded, stored with its index rows and forwarded if asked; a bounce report is kept and acted
// on; a mailto unsubscribe takes effect. A query (db/query.ts) that decides nothing about the SMTP reply: it is
// the writer job `file` (db/writer.ts), run in a group commit, and the 250 waits for that commit (fileInWriter).
import type { DbContext, Writer } from '../db/writer.ts';
import { get, together, type Query } from '../db/query.ts';
import { readBoxSecret } from '../db/box-secret.ts';
import type { Log } from '../log.ts';
import { transferable } from '../threads/worker-pool.ts';
import { applyReport } from '../feedback/bounces.ts';
import { unsubscribe } from '../feedback/unsubscribe.ts';
import { classify, type Category } from './classify.ts';
import { forwardInTransaction } from './forward.ts';
import type { Target } from './route.ts';
import { deserializeAnalysis, type AnalysisParts } from './analysed.ts';
import { judgeSpam } from './spam.ts';
import type { Judgement } from '../filter/combine.ts';
import { packMessage, unpackMessage, type PackedMail } from '../mail/packing.ts';
import { storeReceivedEmail } from '../emails/store.ts';
import { fileNewEmail } from '../labels/filing.ts';
import { rulesOfWorkspace, type Rule } from '../labels/rules.ts';
import { storeReport } from '../feedback/bounces.ts';
import { findThread } from './threads.ts';
import { storeAggregateReport } from '../feedback/aggregate-reports.ts';

/** The envelope's part, and the analysis: parsed fields, verdicts, the message as stored (our trace fields, then
 * the bytes as received, packed by the analyze workers), the content filter's tokens and the door's evidence. */
export interface Analysed extends AnalysisParts {
  mailFrom: string;
  targets: Target[];
}

/** What the event loop hands the writer: the envelope's part, and the analysis as the analyze worker serialized it. */
export interface ToFile {
  mailFrom: string;
  targets: Target[];
  /** serializeAnalysis() of parsed, verdicts and stored (analysed.ts). */
  analysis: Uint8Array;
  /** What judgeBeforeFiling read for each workspace, by its id; absent, the job reads it in its transaction. */
  judged?: Record<string, Judged>;
}

/** What a workspace knows of the message before it is filed: the spam filter's judgement, the sender's rule, its label rules. */
export interface Judged {
  filter: Judgement | null;
  learned: Learned;
  rules?: Rule[];
}

export interface Filed {
  /** The em_ and rpt_ ids it was stored as. */
  ids: string[];
  /** A forwarded copy was queued: the queue should look for work after the commit. */
  forwarded: boolean;
}

/**
 * Hands `m` to the writer as the job `file`; resolves after its commit is on disk. The analysis's bytes move to
 * the writer: `m.analysis` is empty afterwards.
 */
export async function fileInWriter(writer: Pick<Writer, 'commit'>, m: ToFile, now: number, log: Log): Promise<Filed> {
  const analysis = transferable(m.analysis);
  const [filed] = await writer.commit([{ kind: 'file', payload: { ...m, analysis } }], { now, log, transfer: [analysis.buffer] });
  return filed;
}

/** The writer job `file`. */
export function* fileMessage(ctx: DbContext, job: ToFile): Query<Filed> {
  // Read here, in the writer thread: a batch run again after a rollback reads it again, which is harmless.
  const m: Analysed = { mailFrom: job.mailFrom, targets: job.targets, ...deserializeAnalysis(job.analysis) };
  const filed: Filed = { ids: [], forwarded: false };
  const inboxes = new Set<string>();
  for (const target of m.targets) {
    if (target.kind === 'report') {
      const reportId = yield* storeReport(ctx.clock, { workspaceId: target.workspaceId, emailId: target.emailId, mailFrom: m.mailFrom, raw: alone(m.stored) });
      // Acted on in the transaction that keeps it: the 250 says both are on disk, and our own fault is a 451.
      yield* applyReport(ctx, { reportId, workspaceId: target.workspaceId, emailId: target.emailId, report: m.parsed.report });
      filed.ids.push(reportId);
      continue;
    }
    if (target.kind === 'aggregate') {
      // A DMARC or TLS report read on the analyze workers: kept, or kept aside with the reason it was not.
      const reading = m.readings?.find((r) => r.format === target.format);
      const headerFrom = m.parsed.fromAll[0]?.address ?? '';
      if (reading) filed.ids.push(yield* storeAggregateReport(ctx, target, reading, { mailFrom: m.mailFrom, headerFrom, authenticated: m.verdicts.dmarc.result === 'pass' }));
      continue;
    }
    if (target.kind === 'unsubscribe') {
      // RFC 2369 mailto: the signed address is the whole request; the message itself is not kept.
      yield* unsubscribe(yield* readBoxSecret(), ctx.clock, target.token, 'mailto');
      continue;
    }
    const { inbox } = target;
    if (inboxes.has(inbox.id)) continue;
    inboxes.add(inbox.id);
    filed.ids.push(yield* fileForInbox(ctx, inbox, m, filed, job.judged?.[inbox.workspace_id]));
  }
  return filed;
}

/** A report's bytes packed without bodies, which the analyze workers pack when a recipient is a VERP address. */
const alone = (s: PackedMail) => s.alone ?? packMessage(unpackMessage(s.raw, s), null);

type InboxTarget = Extract<Target, { kind: 'inbox' }>['inbox'];

/**
 * The writer's reads before its transaction on PostgreSQL (db/postgres-writer.ts): the spam filter's judgement,
 * the sender's rule and the label rules for each workspace the message reaches, read outside the box's write
 * lock, where each read's round trip would hold every other writer up. Read a moment before the message is
 * filed: a list entry or rule changed in between applies from the next message on.
 */
export function* judgeBeforeFiling(ctx: DbContext, job: ToFile): Query<ToFile> {
  const m: Analysed = { mailFrom: job.mailFrom, targets: job.targets, ...deserializeAnalysis(job.analysis) };
  const judged: Record<string, Judged> = {};
  for (const target of m.targets) {
    if (target.kind !== 'inbox' || judged[target.inbox.workspace_id]) continue;
    const workspaceId = target.inbox.workspace_id;
    const from = singleFrom(m);
    // Side by side: one round trip for what the three read first (the spam judgement's reads go together too).
    const [filter, learned, rules] = yield* together(judgeSpam(ctx, workspaceId, { ...m, from }, false), learnedAbout(workspaceId, from?.address), rulesOfWorkspace(workspaceId));
    judged[workspaceId] = { filter, learned, rules };
  }
  return { ...job, judged };
}

type Learned = { category: Category | null; important: boolean | null } | null;

const singleFrom = (m: Analysed) => (m.parsed.fromAll.length === 1 ? m.parsed.fromAll[0] : null);

/** In the writer's transaction (SQLite, or a message PostgreSQL's reads before the lock did not judge). */
function* judgeFor(ctx: DbContext, workspaceId: string, m: Analysed): Query<Judged> {
  const from = singleFrom(m);
  return { filter: yield* judgeSpam(ctx, workspaceId, { ...m, from }, true), learned: yield* learnedAbout(workspaceId, from?.address) };
}

/** One inbox's copy: classified by what the workspace knows, threaded, stored and perhaps forwarded. */
function* fileForInbox(ctx: DbContext, inbox: InboxTarget, m: Analysed, filed: Filed, judged: Judged | undefined): Query<string> {
  const { clock } = ctx;
  const { parsed } = m;
  const workspaceId = inbox.workspace_id;
  const from = singleFrom(m);
  const thread = yield* findThread(workspaceId, parsed.inReplyTo, parsed.references);
  const { filter, learned } = judged ?? (yield* judgeFor(ctx, workspaceId, m));
  const verdict = classify({ from, headers: parsed.headers, auth: m.verdicts, learned, replyToSent: thread.replyToSent, filter });
  const { id } = yield* storeReceivedEmail(clock, {
    workspaceId,
    inboxId: inbox.id,
    inboxAddress: inbox.address,
    domainId: inbox.domain_id,
    domain: inbox.domain_name,
    parsed,
    extractedText: m.extractedText ?? null,
    stored: m.stored,
    envelopeFrom: m.mailFrom,
    authentication: m.verdicts,
    verdict,
    spam: verdict.spam,
    threadId: thread.threadId,
  });
  // Filed by the workspace's rules and the conversation's bucket labels before anyone can see it unfiled.
  yield* fileNewEmail(clock.now(), workspaceId, id, thread.threadId ? { threadId: thread.threadId } : undefined, judged?.rules);
  if (verdict.category !== 'spam' && inbox.forward_status === 'active') {
    const copy = yield* forwardInTransaction(ctx, {
      emailId: id,
      workspaceId,
      inbox,
      from,
      subject: parsed.subject,
      text: parsed.text,
      html: parsed.html,
      attachments: parsed.attachments,
      headers: parsed.headers,
    });
    if (copy) filed.forwarded = true;
  }
  return id;
}

function* learnedAbout(workspaceId: string, address: string | undefined): Query<Learned> {
  if (!address) return null;
  const row = yield* get<{ category: Category | null; important: number | null }>('SELECT category, important FROM sender_rules WHERE workspace_id = ? AND address = ?', workspaceId, address.toLowerCase());
  return row ? { category: row.category, important: row.important === null ? null : row.important === 1 } : null;
}
