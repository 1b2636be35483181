// The Trash's own deletions (DESIGN.md "trash"): emptying it on request (POST /emails/trash/empty) and the
// retention job's purge of mail trashed more than trash_days ago. Both are permanent deletes (mailbox.ts
// deleteEmail), oldest trashed first along emails_trash_age, in small batches so the write lock is never held
// for long while mail keeps flowing. Moving mail in and out of the Trash is mailbox.ts patchEmail.
import type { App } from '../context.ts';
import { column, type Query } from '../db/query.ts';
import { deleteEmail } from './mailbox.ts';

export const TRASH_BATCH = 200;

// deleteEmail refuses (409) an email whose delivery is being attempted this very moment: it waits for the next batch.
export const NOT_BEING_SENT = `NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.email_id = e.id AND d.state = 'sending')`;

/**
 * The ids of up to `limit` emails of the workspace trashed at or before `upTo` (ms), oldest trashed first, that
 * also meet `condition` (SQL on `e`, a constant of the caller's, never a client's text).
 */
export const oldestTrashed = (workspaceId: string, upTo: number, limit: number, condition = NOT_BEING_SENT) =>
  column<string>(`SELECT e.id FROM emails e WHERE e.workspace_id = ? AND e.trashed_at <= ? AND ${condition} ORDER BY e.trashed_at LIMIT ?`, workspaceId, upTo, limit);

/** Deletes one batch of `ids` for good, in the caller's transaction; answers how many went. */
export function* deleteAll(workspaceId: string, ids: string[]): Query<number> {
  let deleted = 0;
  for (const id of ids) if (yield* deleteEmail(workspaceId, id)) deleted++;
  return deleted;
}

/**
 * Empties the workspace's Trash as it was when asked (mail trashed meanwhile stays), a batch per transaction,
 * and answers how many emails were deleted. Deliveries still queued for them are canceled, as DELETE does.
 */
export async function emptyTrash(app: Pick<App, 'store' | 'clock'>, workspaceId: string): Promise<number> {
  const upTo = app.clock.now();
  let total = 0;
  for (;;) {
    const deleted = await app.store.write(function* () {
      return yield* deleteAll(workspaceId, yield* oldestTrashed(workspaceId, upTo, TRASH_BATCH));
    });
    total += deleted;
    if (deleted < TRASH_BATCH) return total;
    // Let mail and API requests in between batches.
    await new Promise((resolve) => setImmediate(resolve));
  }
}
