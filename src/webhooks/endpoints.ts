// Webhook endpoints at rest (0019_webhooks.sql): where a workspace's events go, which ones, and the secrets
// that sign them. Synchronous SQL for the caller's transaction; secrets leave this file sealed or, for
// signing, in clear only to the delivery code.
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';
import { iso } from '../clock.ts';
import { newSigningSecret, seal, unseal } from './secrets.ts';

/** An old secret keeps signing alongside the new one this long after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60_000;

export interface WebhookRow {
  id: string;
  workspace_id: string;
  url: string;
  events_json: string;
  inbox_id: string | null;
  domain_id: string | null;
  description: string;
  enabled: number;
  disabled_reason: string | null;
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_until: number | null;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookSettings {
  url: string;
  events: string[];
  inboxId: string | null;
  domainId: string | null;
  description: string;
}

export function present(w: WebhookRow) {
  return {
    id: w.id,
    url: w.url,
    events: JSON.parse(w.events_json) as string[],
    inboxId: w.inbox_id,
    domainId: w.domain_id,
    description: w.description,
    enabled: w.enabled === 1,
    disabledReason: w.disabled_reason,
    failingSince: w.failing_since === null ? null : iso(w.failing_since),
    createdAt: iso(w.created_at),
    updatedAt: iso(w.updated_at),
  };
}

/** A new endpoint and its secret, in clear this once. */
export function createWebhook(db: Db, now: number, workspaceId: string, s: WebhookSettings): { webhook: WebhookRow; secret: string } {
  const id = newId('wh', now);
  const secret = newSigningSecret();
  db.prepare(
    `INSERT INTO webhooks (id, workspace_id, url, events_json, inbox_id, domain_id, description, secret, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(id, workspaceId, s.url, JSON.stringify(s.events), s.inboxId, s.domainId, s.description, seal(db, secret), now, now);
  return { webhook: webhookById(db, workspaceId, id)!, secret };
}

export const webhookById = (db: Db, workspaceId: string, id: string) =>
  db.prepare('SELECT * FROM webhooks WHERE workspace_id = ? AND id = ?').get(workspaceId, id) as WebhookRow | undefined;

/** `inboxIds`: an inbox key's inboxes, whose webhooks alone it sees. */
export const listWebhooks = (db: Db, workspaceId: string, limit: number, offset: number, inboxIds?: string[]) => {
  const only = inboxIds === undefined ? null : JSON.stringify(inboxIds);
  return db
    .prepare('SELECT * FROM webhooks WHERE workspace_id = ? AND (? IS NULL OR inbox_id IN (SELECT value FROM json_each(?))) ORDER BY id DESC LIMIT ? OFFSET ?')
    .all(workspaceId, only, only, limit, offset) as WebhookRow[];
};

export function updateWebhook(db: Db, now: number, w: WebhookRow, change: Partial<WebhookSettings> & { enabled?: boolean }): void {
  const enabled = change.enabled ?? w.enabled === 1;
  db.prepare(
    `UPDATE webhooks SET url = ?, events_json = ?, inbox_id = ?, domain_id = ?, description = ?, enabled = ?,
       disabled_reason = ?, failing_since = ?, updated_at = ? WHERE id = ?`,
  ).run(
    change.url ?? w.url,
    JSON.stringify(change.events ?? JSON.parse(w.events_json)),
    change.inboxId === undefined ? w.inbox_id : change.inboxId,
    change.domainId === undefined ? w.domain_id : change.domainId,
    change.description ?? w.description,
    Number(enabled),
    // Turned on again by its owner: a fresh start, with the old reason and failure streak forgotten.
    enabled ? null : (w.disabled_reason ?? 'disabled by the owner'),
    enabled && change.enabled ? null : w.failing_since,
    now,
    w.id,
  );
}

export const deleteWebhook = (db: Db, workspaceId: string, id: string) => db.prepare('DELETE FROM webhooks WHERE workspace_id = ? AND id = ?').run(workspaceId, id).changes === 1;

/** A new secret; the old one keeps signing alongside for ROTATION_OVERLAP_MS. */
export function rotateSecret(db: Db, now: number, w: WebhookRow): string {
  const secret = newSigningSecret();
  db.prepare('UPDATE webhooks SET secret = ?, previous_secret = ?, previous_until = ?, updated_at = ? WHERE id = ?').run(seal(db, secret), w.secret, now + ROTATION_OVERLAP_MS, now, w.id);
  return secret;
}

/** The secrets that sign now: the current one, and the previous one during its overlap. */
export function signingSecrets(db: Db, w: WebhookRow, now: number): string[] {
  const current = unseal(db, w.secret);
  return w.previous_secret && w.previous_until !== null && now < w.previous_until ? [current, unseal(db, w.previous_secret)] : [current];
}
