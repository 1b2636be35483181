// Threading of received mail: In-Reply-To and References name earlier messages by Message-ID; the first one
// this workspace has (sent or received) gives the thread, whose id is the em_ id of its first message. It
// also tells whether the message answers mail the workspace sent, which makes it important.
import type { Db } from '../db/open.ts';
import { runOn } from '../db/sqlite-query.ts';
import { emailByMessageId } from '../emails/lookup.ts';

export interface ThreadLink {
  /** The thread to join, or null to start a new one. */
  threadId: string | null;
  replyToSent: boolean;
}

export function findThread(db: Db, workspaceId: string, inReplyTo: string | null, references: string[]): ThreadLink {
  // The direct parent first, then the references from the newest back.
  const ids = [...new Set([inReplyTo, ...[...references].reverse()].filter((id): id is string => !!id))];
  let threadId: string | null = null;
  let replyToSent = false;
  for (const id of ids) {
    // Bridge: findThread takes the connection (not a query yet).
    const row = runOn(db, emailByMessageId(workspaceId, id));
    if (!row) continue;
    threadId ??= row.thread_id;
    if (row.direction === 'out') replyToSent = true;
    if (replyToSent) break;
  }
  return { threadId, replyToSent };
}
