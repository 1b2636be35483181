// The writer's job table (db/writer.ts), assembled here, above the flows, so that db/ knows no flow: each kind a
// flow or resource posts to the writer thread, and the function that runs it there. Each job's payload and result
// are its function's parameter and return types: registered with db/writer.ts below, they check every step.
import type { BackgroundJob, JobTable, ReadsFirst } from '../db/writer.ts';
import { writeAnswer } from '../db/idempotency.ts';
import { markPending } from '../inboxes/forwarding.ts';
import { deleteLabel } from '../labels/labels.ts';
import { draftSent } from '../drafts/drafts.ts';
import { resortStep } from '../labels/resort.ts';
import { fileMessage, judgeBeforeFiling } from '../receive/file.ts';
import { writeBatch, writeSends } from '../send/submit.ts';
import { releaseDue } from '../send/schedule.ts';
import { indexAll, indexBacklog } from '../emails/search-backlog.ts';
import { pruneJob, retryJob, trainJob } from '../filter/learning.ts';

export const jobs = {
  /** Received mail, filed for every inbox it reached (receive/). */
  file: fileMessage,
  /** Planned sends queued (send/submit: API, batch, SMTP submission, forwarded copies, confirmations). */
  send: writeSends,
  /** A batch: its items queued, each over the plan failing alone, with the batch's Idempotency-Key answer. */
  'send.batch': writeBatch,
  /** Scheduled sends whose time has come, put on the queue. */
  'send.release': releaseDue,
  /** A sent draft deleted in the send's transaction (the send fails if the draft is gone). */
  'drafts.sent': (_ctx, p: { workspaceId: string; draftId: string }) => draftSent(p),
  /** An Idempotency-Key's answer, with the request's effect. */
  'idempotency.answer': writeAnswer,
  /** An inbox pending its forwarding confirmation, with the confirmation mail. */
  'forwarding.pending': markPending,
  /** A label deleted: every email carrying it loses it (one statement over the labelled mail). */
  'labels.delete': (_ctx, p: { workspaceId: string; labelId: string }) => deleteLabel(p.workspaceId, p.labelId),
  /** One bounded batch of applying a label to stored mail. */
  'labels.resort': resortStep,
  /**
   * The full-text index's backlog (emails/search-backlog.ts): all of it (GET /emails is about to search), or
   * with `{ all: false }` one batch, and the writer's background goes on with the rest between other calls.
   */
  'search.index': function* (_ctx, p: { all?: boolean } | null) {
    if (p?.all === false) yield* indexBacklog();
    else yield* indexAll();
  },
  /** The spam filter learns one message an owner moved to or from Spam, or replied to (receive/trainer.ts). */
  'spam.train': trainJob,
  /** A message the trainer could not read or tokenize: tried again later, or given up. */
  'spam.retry': retryJob,
  /** A workspace's model over its bound, brought back under it (filter/store.ts prune). */
  'spam.prune': pruneJob,
} satisfies JobTable;

/**
 * Reads made before the transaction on PostgreSQL: received mail's spam judgement, sender and label rules
 * (receive/file.ts). A send's plan limits and label rules come read with its plan (send/submit.ts).
 */
export const readsFirst = { file: judgeBeforeFiling } satisfies ReadsFirst;

/** What the writer does in its own time, after its commits: the next batch of the full-text index's backlog. */
export const background: BackgroundJob = () => indexBacklog();

// The table's type, for db/writer.ts's Step and Result: what a caller hands each kind, and what it gets back.
declare module '../db/writer.ts' {
  interface Register {
    jobs: typeof jobs;
  }
}
