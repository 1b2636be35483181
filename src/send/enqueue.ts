// A sent email's recipients put on the queue: one delivery row and one `sent` event each, or, for an address
// suppressed for this class of mail, a `blocked` row and event and no delivery. A query (db/query.ts) for the
// transaction that stores the send (or releases a scheduled one), so a suppression made a moment before is
// always seen; or, given by the caller, as it read them just before (an API send on PostgreSQL: send/submit.ts).
import type { DbContext } from '../context.ts';
import { change, type Query } from '../db/query.ts';
import { domainOf } from '../mail/addresses.ts';
import { addEvent, refreshEmailStatus } from '../emails/events.ts';
import { suppressionsFor, type Suppression } from '../feedback/suppressions.ts';

/** Queue rows and their `sent` (or `blocked`) events, in the caller's transaction. */
export function* enqueue(ctx: DbContext, email: { id: string; workspaceId: string; messageClass: 'transactional' | 'marketing'; counted?: boolean }, recipients: string[], suppressions?: Map<string, Suppression>): Query<void> {
  const { clock } = ctx;
  const now = clock.now();
  const { id, workspaceId, counted } = email;
  const delivery = 'INSERT INTO deliveries (email_id, workspace_id, recipient, domain, state, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
  let blocked = 0;
  const suppressed = suppressions ?? (yield* suppressionsFor(workspaceId, recipients, email.messageClass));
  for (const recipient of recipients) {
    const suppression = suppressed.get(recipient.toLowerCase());
    if (suppression) {
      blocked++;
      yield* change(delivery, id, workspaceId, recipient, domainOf(recipient), 'blocked', null, now, now);
      yield* addEvent(clock, { workspaceId, emailId: id, type: 'blocked', recipient, data: { reason: suppression.reason, scope: suppression.scope, suppressedAt: suppression.createdAt }, counted });
    } else {
      yield* change(delivery, id, workspaceId, recipient, domainOf(recipient), 'queued', now, now, now);
      yield* addEvent(clock, { workspaceId, emailId: id, type: 'sent', recipient, data: {}, counted });
    }
  }
  if (blocked) yield* refreshEmailStatus(id);
}
