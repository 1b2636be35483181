// What the workspace's model is asked to learn, and when: an owner's move to or from Spam, and a reply to a
// received message (ham), each queued in the transaction of the change that asked for it (spam_filter_pending,
// 0037) and learned later by the trainer (receive/trainer.ts), which tokenizes the stored message off the event
// loop and hands the tokens to the writer job below. Queries for the caller's transaction (db/query.ts).
import { all, get, run, value, type Query } from '../db/query.ts';
import type { DbContext } from '../db/writer.ts';
import { noteWrote } from './history.ts';
import { prune, train, trainedAs, type SpamClass, type TrainOutcome, type TrainSource } from './store.ts';

/** Tries to read and tokenize a message before it is given up (each failure waits twice as long). */
export const MAX_ATTEMPTS = 5;
const RETRY_MS = 30_000;

export interface TrainingWish {
  workspaceId: string;
  emailId: string;
  class: SpamClass;
  source: TrainSource;
  now: number;
}

/**
 * Queues the email to be learned as `class`; the newest wish for an email replaces an older one, except that
 * the box's own wish (`auto`, a reply) never replaces the owner's. Nothing is queued when the model already
 * learned the email so.
 */
export function* queueTraining(w: TrainingWish): Query<void> {
  const known = yield* trainedAs(w.workspaceId, w.emailId);
  if (known && known.class === w.class && (known.source === 'owner' || w.source === 'auto')) {
    yield* run('DELETE FROM spam_filter_pending WHERE email_id = ?', w.emailId);
    return;
  }
  yield* run(
    `INSERT INTO spam_filter_pending (email_id, workspace_id, class, source, queued_at, next_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (email_id) DO UPDATE SET class = excluded.class, source = excluded.source, queued_at = excluded.queued_at, attempts = 0, next_at = excluded.next_at
     WHERE NOT (spam_filter_pending.source = 'owner' AND excluded.source = 'auto')`,
    w.emailId, w.workspaceId, w.class, w.source, w.now, w.now,
  );
}

export interface PendingTraining {
  emailId: string;
  workspaceId: string;
  class: SpamClass;
  source: TrainSource;
  queuedAt: number;
  attempts: number;
}

/** Wishes due now, oldest first. */
export const dueTraining = (now: number, limit: number) =>
  all<PendingTraining>('SELECT email_id AS emailId, workspace_id AS workspaceId, class, source, queued_at AS queuedAt, attempts FROM spam_filter_pending WHERE next_at <= ? ORDER BY next_at, email_id LIMIT ?', now, limit);

/** Wishes of the workspace not learned yet. */
export function* pendingTraining(workspaceId: string): Query<number> {
  return (yield* value<number>('SELECT count(*) FROM spam_filter_pending WHERE workspace_id = ?', workspaceId))!;
}

/**
 * The writer job `spam.train`: teaches the model the wish `p` with the tokens the trainer made, unless the wish
 * changed meanwhile (a newer one is then learned in its turn). Null when nothing was learned.
 */
export function* trainJob(ctx: DbContext, p: { emailId: string; workspaceId: string; queuedAt: number; tokens: string[] }): Query<{ outcome: TrainOutcome; pruneDue: boolean } | null> {
  const wish = yield* get<{ class: SpamClass; source: TrainSource; queued_at: number }>(
    'SELECT class, source, queued_at FROM spam_filter_pending WHERE email_id = ? AND workspace_id = ?',
    p.emailId,
    p.workspaceId,
  );
  if (!wish || wish.queued_at !== p.queuedAt) return null;
  yield* run('DELETE FROM spam_filter_pending WHERE email_id = ?', p.emailId);
  return yield* train({ workspaceId: p.workspaceId, emailId: p.emailId, class: wish.class, tokens: p.tokens, source: wish.source, now: ctx.clock.now() });
}

/**
 * The writer job `spam.retry`: a wish whose message could not be read or tokenized waits and is tried again, up
 * to MAX_ATTEMPTS; `giveUp` (no raw bytes left to learn from) drops it at once. True when it was dropped.
 */
export function* retryJob(ctx: DbContext, p: { emailId: string; queuedAt: number; giveUp: boolean }): Query<boolean> {
  const wish = yield* get<{ attempts: number; queued_at: number }>('SELECT attempts, queued_at FROM spam_filter_pending WHERE email_id = ?', p.emailId);
  if (!wish || wish.queued_at !== p.queuedAt) return false;
  if (p.giveUp || wish.attempts + 1 >= MAX_ATTEMPTS) {
    yield* run('DELETE FROM spam_filter_pending WHERE email_id = ?', p.emailId);
    return true;
  }
  yield* run('UPDATE spam_filter_pending SET attempts = attempts + 1, next_at = ? WHERE email_id = ?', ctx.clock.now() + RETRY_MS * 2 ** wish.attempts, p.emailId);
  return false;
}

/** The writer job `spam.prune`: brings the workspace's model back under its bound (store.ts prune). */
export const pruneJob = (ctx: DbContext, p: { workspaceId: string }) => prune(p.workspaceId, ctx.clock.now());

/**
 * What a send teaches (send/submit.ts writeSend): the owner's own mail (not the box's, not marketing, not a
 * template test) makes its recipients correspondents (history.ts), and a reply to a received message that is
 * not in Spam teaches the model that message was ham.
 */
export function* learnFromSend(s: { workspaceId: string; recipients: readonly string[]; inReplyTo: string | null; byOwner: boolean; bulk: boolean; now: number }): Query<void> {
  if (!s.byOwner || s.bulk) return;
  yield* noteWrote(s.workspaceId, s.recipients, s.now);
  if (!s.inReplyTo) return;
  const parent = yield* value<string>(
    "SELECT id FROM emails WHERE workspace_id = ? AND message_id = ? AND direction = 'in' AND category IS DISTINCT FROM 'spam' ORDER BY id LIMIT 1",
    s.workspaceId,
    s.inReplyTo,
  );
  if (parent) yield* queueTraining({ workspaceId: s.workspaceId, emailId: parent, class: 'ham', source: 'auto', now: s.now });
}
