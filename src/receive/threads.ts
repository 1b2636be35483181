// Threading of received mail: In-Reply-To and References name earlier messages by Message-ID; the first one
// this workspace has (sent or received) gives the thread, whose id is the em_ id of its first message. It
// also tells whether the message answers mail the workspace sent, which makes it important.
import type { Query } from '../db/query.ts';
import { emailByMessageId } from '../emails/lookup.ts';

export interface ThreadLink {
  /** The thread to join, or null to start a new one. */
  threadId: string | null;
  replyToSent: boolean;
}

export function* findThread(workspaceId: string, inReplyTo: string | null, references: string[]): Query<ThreadLink> {
  // The direct parent first, then the references from the newest back.
  const ids = [...new Set([inReplyTo, ...[...references].reverse()].filter((id): id is string => !!id))];
  let threadId: string | null = null;
  let replyToSent = false;
  for (const id of ids) {
    const row = yield* emailByMessageId(workspaceId, id);
    if (!row) continue;
    threadId ??= row.thread_id;
    if (row.direction === 'out') replyToSent = true;
    if (replyToSent) break;
  }
  return { threadId, replyToSent };
}
