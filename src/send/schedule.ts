// Scheduled sending (DESIGN.md: scheduled_at): a send for later is stored and metered at once with status
// `scheduled` and held in scheduled_sends; at its time the writer releases it to the queue (`sent` events, its
// delivery rows). Releasing, canceling and rescheduling each act only while the row exists, in one
// transaction, so a cancel racing the due time either cancels or finds it sent, never both. Queries
// (db/query.ts).
import type { App, DbContext } from '../context.ts';
import { all, get, run, value, type Query } from '../db/query.ts';
import { ApiError, validationError } from '../errors.ts';
import { iso } from '../clock.ts';
import { addEvent } from '../emails/events.ts';
import { giveBack } from '../account/plans.ts';
import { enqueue } from './enqueue.ts';
import { FullDiskNotice } from '../db/full-disk.ts';

export const MAX_AHEAD_MS = 30 * 24 * 60 * 60_000;
// Never sleep longer than this: a clock stepped forward (or a missed wake) is noticed within it.
const MAX_SLEEP_MS = 60_000;
const RELEASE_BATCH = 100;

/** When a send asked for `at` is released: null (now) for none or a time past; 400 beyond 30 days. */
export function scheduleTime(at: number | undefined, now: number, path = 'scheduled_at'): number | null {
  if (at === undefined || at <= now) return null;
  if (at > now + MAX_AHEAD_MS) throw validationError(path, `must be at most 30 days ahead (until ${iso(now + MAX_AHEAD_MS)})`);
  return at;
}

/** In the transaction that stores the send: held, with a `scheduled` event per recipient. */
export function* holdSend(ctx: DbContext, s: { emailId: string; workspaceId: string; scheduledAt: number; recipients: string[] }): Query<void> {
  const { clock } = ctx;
  yield* run('INSERT INTO scheduled_sends (email_id, workspace_id, scheduled_at, recipients, created_at) VALUES (?, ?, ?, ?, ?)', s.emailId, s.workspaceId, s.scheduledAt, JSON.stringify(s.recipients), clock.now());
  yield* run("UPDATE emails SET status = 'scheduled', scheduled_at = ? WHERE id = ?", s.scheduledAt, s.emailId);
  for (const recipient of s.recipients) yield* addEvent(clock, { workspaceId: s.workspaceId, emailId: s.emailId, type: 'scheduled', recipient, data: { scheduledAt: iso(s.scheduledAt) } });
}

interface Held {
  email_id: string;
  workspace_id: string;
  recipients: string;
  message_class: 'transactional' | 'marketing';
}

/** The writer job `send.release`: queues up to a batch of due sends; `more` when there may be others due. */
export function* releaseDue(ctx: DbContext): Query<{ released: number; more: boolean }> {
  const { clock } = ctx;
  const due = yield* all<Held>(
    `SELECT s.email_id, s.workspace_id, s.recipients, e.message_class FROM scheduled_sends s JOIN emails e ON e.id = s.email_id
     WHERE s.scheduled_at <= ? ORDER BY s.scheduled_at LIMIT ?`,
    clock.now(), RELEASE_BATCH,
  );
  for (const h of due) {
    yield* run('DELETE FROM scheduled_sends WHERE email_id = ?', h.email_id);
    yield* run("UPDATE emails SET status = 'sent' WHERE id = ?", h.email_id);
    yield* enqueue(ctx, { id: h.email_id, workspaceId: h.workspace_id, messageClass: h.message_class }, JSON.parse(h.recipients) as string[]);
  }
  return { released: due.length, more: due.length === RELEASE_BATCH };
}

const heldRow = (workspaceId: string, emailId: string) => get<{ recipients: string }>('SELECT recipients FROM scheduled_sends WHERE workspace_id = ? AND email_id = ?', workspaceId, emailId);

/** 409 for an email that is no longer (or never was) waiting for its time; false when there is no such email. */
function* assertHeld(workspaceId: string, emailId: string): Query<{ recipients: string } | false> {
  const held = yield* heldRow(workspaceId, emailId);
  if (held) return held;
  const status = yield* value<string>('SELECT status FROM emails WHERE workspace_id = ? AND id = ?', workspaceId, emailId);
  if (status === undefined) return false;
  throw new ApiError(409, 'not_scheduled', status === 'canceled' ? 'The email was canceled already' : `The email is not waiting for its scheduled time (status ${status}): it has started sending`);
}

/** Cancels a held send: status `canceled`, a `canceled` event per recipient, its usage given back. */
export function* cancelScheduled(ctx: DbContext, workspaceId: string, emailId: string): Query<boolean> {
  const { clock } = ctx;
  const held = yield* assertHeld(workspaceId, emailId);
  if (!held) return false;
  const recipients = JSON.parse(held.recipients) as string[];
  yield* run('DELETE FROM scheduled_sends WHERE email_id = ?', emailId);
  yield* run("UPDATE emails SET status = 'canceled' WHERE id = ?", emailId);
  for (const recipient of recipients) yield* addEvent(clock, { workspaceId, emailId, type: 'canceled', recipient, data: {} });
  const email = (yield* get<{ created_at: number; bytes: number }>(
    'SELECT created_at, (SELECT coalesce(sum(size), 0) FROM email_attachments WHERE email_id = ?) AS bytes FROM emails WHERE id = ?',
    emailId, emailId,
  ))!;
  yield* giveBack(workspaceId, email.created_at, { recipients: recipients.length, attachmentBytes: email.bytes });
  return true;
}

/** Moves a held send to `at` (null: release it now). */
export function* reschedule(ctx: Pick<DbContext, 'clock'>, workspaceId: string, emailId: string, at: number | null): Query<boolean> {
  if (!(yield* assertHeld(workspaceId, emailId))) return false;
  const when = at ?? ctx.clock.now();
  yield* run('UPDATE scheduled_sends SET scheduled_at = ? WHERE email_id = ?', when, emailId);
  yield* run('UPDATE emails SET scheduled_at = ? WHERE id = ?', when, emailId);
  return true;
}

/** When the earliest held send is due; null when none is held. */
const nextScheduledAt = () => value<number | null>('SELECT min(scheduled_at) FROM scheduled_sends');

/** Releases held sends at their time: sleeps until the earliest, and is woken when one is added or moved. */
export class Scheduler {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly fullDisk: FullDiskNotice;

  constructor(private readonly app: App) {
    this.fullDisk = new FullDiskNotice(app.log, 'releasing scheduled sends');
  }

  start(): void {
    this.arm(0);
  }

  wake(): void {
    if (!this.stopped) this.arm(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private arm(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      // One run at a time; a wake during a run arms again after it.
      this.running = (this.running ?? Promise.resolve()).then(() => this.run());
    }, Math.max(0, Math.min(ms, MAX_SLEEP_MS)));
    this.timer.unref();
  }

  private async run(): Promise<void> {
    if (this.stopped) return;
    const { store, clock, writer, log, queue } = this.app;
    try {
      let released = 0;
      for (;;) {
        const next = (await store.read(nextScheduledAt())) as number | null;
        if (next === null || next > clock.now()) {
          if (released) queue.wake();
          if (!this.stopped && !this.timer) this.arm(next === null ? MAX_SLEEP_MS : next - clock.now());
          return;
        }
        const [result] = await writer.commit([{ kind: 'send.release' }], { now: clock.now(), log });
        released += result.released;
        if (result.released) queue.wake();
      }
      this.fullDisk.succeeded();
    } catch (err) {
      if (!this.fullDisk.failed(err)) log.error('releasing scheduled sends failed; trying again shortly', { err });
      if (!this.stopped && !this.timer) this.arm(5_000);
    }
  }
}
