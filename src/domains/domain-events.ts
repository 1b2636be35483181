// Events about a domain rather than an email (domain.dmarc_failure): kept in domain_events with the payload a
// webhook and the live stream carry, and given a webhook delivery per subscribed endpoint in the caller's
// transaction, as emails/events.ts does for email events. The payload is made here, once: webhooks/deliver.ts
// sends a stored payload as it is.
import { iso } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';

export const DOMAIN_EVENT_TYPES = ['domain.dmarc_failure'] as const;
export type DomainEventType = (typeof DOMAIN_EVENT_TYPES)[number];

export interface DomainEventRow {
  seq: number;
  id: string;
  workspace_id: string;
  domain_id: string;
  type: DomainEventType;
  payload: string;
  created_at: number;
}

/** Adds the event and its webhook deliveries; endpoints limited to an inbox take no domain events. */
export function addDomainEvent(db: Db, now: number, e: { workspaceId: string; domainId: string; type: DomainEventType; data: Record<string, unknown> }): string {
  const id = newId('devt', now);
  const payload = JSON.stringify({ type: e.type, created_at: iso(now), data: { id, ...e.data } });
  db.prepare('INSERT INTO domain_events (id, workspace_id, domain_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(id, e.workspaceId, e.domainId, e.type, payload, now);
  const endpoints = db
    .prepare(
      `SELECT w.id FROM webhooks w
       WHERE w.workspace_id = @workspaceId AND w.enabled = 1 AND w.inbox_id IS NULL AND (w.domain_id IS NULL OR w.domain_id = @domainId)
         AND EXISTS (SELECT 1 FROM json_each(w.events_json) j WHERE j.value IN ('*', @type))`,
    )
    .pluck()
    .all({ workspaceId: e.workspaceId, domainId: e.domainId, type: e.type }) as string[];
  const insert = db.prepare(
    `INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, email_id, type, payload, next_attempt_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)`,
  );
  for (const webhookId of endpoints) insert.run(`whmsg_${id.slice(5)}_${webhookId.slice(3)}`, webhookId, e.workspaceId, id, e.type, payload, now, now, now);
  return id;
}

/** Every workspace's domain events committed after `after` (their seq), at most `limit`: what the live stream polls. */
export const domainEventsAfter = (db: Db, after: number, limit: number) =>
  db.prepare('SELECT * FROM domain_events WHERE seq > ? ORDER BY seq LIMIT ?').all(after, limit) as DomainEventRow[];

export const newestDomainEventSeq = (db: Db) => Number(db.prepare('SELECT coalesce(max(seq), 0) FROM domain_events').pluck().get());

/** Domain events are kept as long as webhook deliveries are (their payloads live on in webhook_deliveries). */
export const pruneDomainEvents = (db: Db, before: number) => db.prepare('DELETE FROM domain_events WHERE created_at < ?').run(before).changes;
