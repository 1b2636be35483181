// Events about a domain, an inbox or a key rather than an email (domain.dmarc_failure, domain.created, ...,
// inbox.deleted, key.revoked): kept in domain_events with the payload a webhook and the live stream carry, and
// given a webhook delivery per subscribed endpoint in the caller's transaction, as emails/events.ts does for
// email events. The payload is made here, once: webhooks/deliver.ts sends a stored payload as it is. Each event
// records its place among the email events (after_seq, migration 0042), so the stream replays both in order.
import { iso } from '../clock.ts';
import { newId } from '../db/ids.ts';
import { all, column, run, value, type Query } from '../db/query.ts';

export const DOMAIN_EVENT_TYPES = [
  'domain.dmarc_failure', 'domain.created', 'domain.verified', 'domain.dns_changed', 'domain.deleted',
  'inbox.created', 'inbox.deleted', 'key.created', 'key.revoked',
] as const;
export type DomainEventType = (typeof DOMAIN_EVENT_TYPES)[number];

export interface DomainEventRow {
  seq: number;
  id: string;
  workspace_id: string;
  domain_id: string | null;
  inbox_id: string | null;
  type: DomainEventType;
  payload: string;
  /** The newest email event's seq when this one was written: it comes after that one and before the next. */
  after_seq: number;
  created_at: number;
}

export interface NewDomainEvent {
  workspaceId: string;
  /** The domain it is about (or the inbox's domain); null for a key's event. */
  domainId: string | null;
  inboxId?: string | null;
  type: DomainEventType;
  data: Record<string, unknown>;
}

/**
 * Adds the event and its webhook deliveries. An endpoint limited to a domain takes the events of that domain
 * (and of its inboxes); one limited to an inbox takes only that inbox's events: no dmarc_failure, no key event.
 */
export function* addDomainEvent(now: number, e: NewDomainEvent): Query<string> {
  const id = newId('devt', now);
  const inboxId = e.inboxId ?? null;
  const payload = JSON.stringify({ type: e.type, created_at: iso(now), data: { id, ...e.data } });
  yield* run(
    `INSERT INTO domain_events (id, workspace_id, domain_id, inbox_id, type, payload, after_seq, created_at)
     VALUES (?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) FROM events), ?)`,
    id, e.workspaceId, e.domainId, inboxId, e.type, payload, now,
  );
  const endpoints = yield* column<string>(
    `SELECT w.id FROM webhooks w
       WHERE w.workspace_id = @workspaceId AND w.enabled = 1
         AND (w.inbox_id IS NULL OR w.inbox_id = @inboxId) AND (w.domain_id IS NULL OR w.domain_id = @domainId)
         AND EXISTS (SELECT 1 FROM json_each(w.events_json) j WHERE j.value IN ('*', @type))`,
    { workspaceId: e.workspaceId, domainId: e.domainId, inboxId, type: e.type },
  );
  for (const webhookId of endpoints) {
    yield* run(
      `INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, email_id, type, payload, next_attempt_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)`,
      `whmsg_${id.slice(5)}_${webhookId.slice(3)}`, webhookId, e.workspaceId, id, e.type, payload, now, now, now,
    );
  }
  return id;
}

/** Every workspace's domain events committed after `after` (their seq), at most `limit`: what the live stream polls. */
export const domainEventsAfter = (after: number, limit: number) => all<DomainEventRow>('SELECT * FROM domain_events WHERE seq > ? ORDER BY seq LIMIT ?', after, limit);

/**
 * A workspace's domain events after `after` and up to `upTo` (their seq) that come before the email event
 * `beforeEmailSeq` (after_seq below it), made since `since`: a step of a reconnected client's catch-up.
 */
export const workspaceDomainEvents = (w: { workspaceId: string; after: number; upTo: number; beforeEmailSeq: number; since: number }) =>
  all<DomainEventRow>('SELECT * FROM domain_events WHERE workspace_id = @workspaceId AND seq > @after AND seq <= @upTo AND after_seq < @beforeEmailSeq AND created_at >= @since ORDER BY seq', w);

/** The seq of the last domain event written before the email event `emailSeq` (0 when none). */
export function* domainSeqBefore(emailSeq: number): Query<number> {
  return Number(yield* value('SELECT coalesce(max(seq), 0) FROM domain_events WHERE after_seq < ?', emailSeq));
}

export function* newestDomainEventSeq(): Query<number> {
  return Number(yield* value('SELECT coalesce(max(seq), 0) FROM domain_events'));
}

/** Domain events are kept as long as webhook deliveries are (their payloads live on in webhook_deliveries). */
export const pruneDomainEvents = (before: number) => run('DELETE FROM domain_events WHERE created_at < ?', before);
