// Retention: how long mail at rest is kept, applied by a nightly job in small batches so the write
// lock is never held for long while mail keeps flowing. Whole emails (bodies, files, search rows, events,
// queue rows) after `mailDays`; raw bytes (as received, or as signed and sent) after `rawDays`, once no
// delivery still needs them; delivery events after `eventsDays` (the daily counts analytics reads stay); mail
// in the Trash `trashDays` after it was moved there (trash.ts). 0 keeps forever. One batch per call, for the
// caller's transaction; its own statements are queries (db/query.ts).
import type { App } from '../context.ts';
import { column, run, type Query } from '../db/query.ts';
import { recordDatabaseSize } from '../db/size.ts';
import { deleteEmail } from './mailbox.ts';
import { deleteAll, oldestTrashed } from './trash.ts';

export interface RetentionPolicy {
  mailDays: number;
  rawDays: number;
  eventsDays: number;
  /** Days mail stays in the Trash (config trash_days, default 30); absent or 0: until emptied. */
  trashDays?: number;
}

export interface RetentionDone {
  emails: number;
  raw: number;
  events: number;
  /** Emails deleted from the Trash. */
  trash: number;
}

export const RETENTION_BATCH = 200;
const DAY = 24 * 60 * 60_000;

// Mail the queue is still working on (or waiting to send) is never touched, whatever its age.
const FINISHED = `e.status <> 'scheduled' AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.email_id = e.id AND d.state IN ('queued', 'sending', 'deferred'))`;

const workspaces = () => column<string>('SELECT id FROM workspaces');

/** Finished emails created before `before`, oldest first along the newest-first index, so a batch reads little beyond what it deletes. */
const oldMail = (workspaceId: string, before: number, limit: number) =>
  column<string>(`SELECT e.id FROM emails e WHERE e.workspace_id = ? AND e.created_at < ? AND ${FINISHED} ORDER BY e.search_rowid LIMIT ?`, workspaceId, before, limit);

/** Removes the raw bytes of up to `limit` finished emails created before `before`, and their signed copies; answers how many. */
function* clearRaw(workspaceId: string, before: number, limit: number): Query<number> {
  const ids = yield* column<string>(
    `SELECT e.id FROM emails e JOIN email_contents c ON c.email_id = e.id
     WHERE e.workspace_id = ? AND e.created_at < ? AND c.raw IS NOT NULL AND ${FINISHED} ORDER BY e.search_rowid LIMIT ?`,
    workspaceId,
    before,
    limit,
  );
  for (const id of ids) {
    yield* run('UPDATE email_contents SET raw = NULL WHERE email_id = ?', id);
    yield* run('DELETE FROM delivery_contents WHERE delivery_id IN (SELECT id FROM deliveries WHERE email_id = ?)', id);
  }
  return ids.length;
}

const deleteEvents = (workspaceId: string, before: number, limit: number) =>
  run('DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE workspace_id = ? AND created_at < ? LIMIT ?)', workspaceId, before, limit);

/** One batch of each kind of deletion; the counts say whether another batch may be due. */
export function* retentionStep(now: number, policy: RetentionPolicy): Query<RetentionDone> {
  const done = { emails: 0, raw: 0, events: 0, trash: 0 };
  for (const workspaceId of yield* workspaces()) {
    if (policy.trashDays && done.trash < RETENTION_BATCH) {
      done.trash += yield* deleteAll(workspaceId, yield* oldestTrashed(workspaceId, now - policy.trashDays * DAY, RETENTION_BATCH - done.trash, FINISHED));
    }
    if (policy.mailDays > 0 && done.emails < RETENTION_BATCH) {
      for (const id of yield* oldMail(workspaceId, now - policy.mailDays * DAY, RETENTION_BATCH - done.emails)) if (yield* deleteEmail(workspaceId, id)) done.emails++;
    }
    if (policy.rawDays > 0 && done.raw < RETENTION_BATCH) done.raw += yield* clearRaw(workspaceId, now - policy.rawDays * DAY, RETENTION_BATCH - done.raw);
    if (policy.eventsDays > 0 && done.events < RETENTION_BATCH * 5) {
      done.events += yield* deleteEvents(workspaceId, now - policy.eventsDays * DAY, RETENTION_BATCH * 5 - done.events);
    }
  }
  return done;
}

/**
 * The nightly job: batches until nothing is left to delete, each its own short transaction, then a WAL
 * checkpoint so the log file shrinks back instead of growing with what was deleted. Then, policy or none, it
 * records the database's size for the day (db/size.ts), from which doctor tells the growth.
 */
export async function runRetention(app: Pick<App, 'store' | 'db' | 'clock' | 'log'>, policy: RetentionPolicy): Promise<RetentionDone> {
  const total = { emails: 0, raw: 0, events: 0, trash: 0 };
  if (!policy.mailDays && !policy.rawDays && !policy.eventsDays && !policy.trashDays) return recordSize(app, total);
  for (;;) {
    const step = await app.store.write(() => retentionStep(app.clock.now(), policy));
    total.emails += step.emails;
    total.raw += step.raw;
    total.events += step.events;
    total.trash += step.trash;
    if (!step.emails && !step.raw && !step.events && !step.trash) break;
    // Let mail and API requests in between batches.
    await new Promise((resolve) => setImmediate(resolve));
  }
  app.db?.pragma('wal_checkpoint(TRUNCATE)');
  if (total.emails || total.raw || total.events || total.trash) app.log.info('retention: old mail removed', total);
  return recordSize(app, total);
}

/** Whatever the policy, the database's size once a day after retention had its turn: doctor's growth figure. */
async function recordSize<T>(app: Pick<App, 'db' | 'store' | 'clock'>, total: T): Promise<T> {
  await app.store.write(() => recordDatabaseSize(app.db?.name, app.clock.now()));
  return total;
}
