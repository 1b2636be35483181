// Webhook endpoints at rest (0019_webhooks.sql): where a workspace's events go, which ones, and the secrets
// that sign them. Queries for the caller's transaction (db/query.ts); secrets leave this file sealed or, for
// signing, in clear only to the delivery code. `box` is the box secret (db/box-secret.ts) they are sealed under.
import { newId } from '../db/ids.ts';
import { all, get, run, type Query } from '../db/query.ts';
import { iso } from '../clock.ts';
import { webhooksChanged } from '../emails/events.ts';
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
export function* createWebhook(now: number, workspaceId: string, s: WebhookSettings, box: Buffer): Query<{ webhook: WebhookRow; secret: string }> {
  const id = newId('wh', now);
  const secret = newSigningSecret();
  yield* run(
    `INSERT INTO webhooks (id, workspace_id, url, events_json, inbox_id, domain_id, description, secret, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id, workspaceId, s.url, JSON.stringify(s.events), s.inboxId, s.domainId, s.description, seal(box, secret), now, now,
  );
  yield* webhooksChanged(workspaceId);
  return { webhook: (yield* webhookById(workspaceId, id))!, secret };
}

export const webhookById = (workspaceId: string, id: string) => get<WebhookRow>('SELECT * FROM webhooks WHERE workspace_id = ? AND id = ?', workspaceId, id);

/** The endpoint a delivery is for, whatever its workspace (the dispatcher's read before each attempt). */
export const endpointOf = (id: string) => get<WebhookRow>('SELECT * FROM webhooks WHERE id = ?', id);

/** `inboxIds`: an inbox key's inboxes, whose webhooks alone it sees. */
export const listWebhooks = (workspaceId: string, limit: number, offset: number, inboxIds?: string[]) => {
  const only = inboxIds === undefined ? null : JSON.stringify(inboxIds);
  return all<WebhookRow>('SELECT * FROM webhooks WHERE workspace_id = ? AND (CAST(? AS TEXT) IS NULL OR inbox_id IN (SELECT value FROM json_each(?))) ORDER BY id DESC LIMIT ? OFFSET ?', workspaceId, only, only, limit, offset);
};

export function* updateWebhook(now: number, w: WebhookRow, change: Partial<WebhookSettings> & { enabled?: boolean }): Query<void> {
  const enabled = change.enabled ?? w.enabled === 1;
  yield* run(
    `UPDATE webhooks SET url = ?, events_json = ?, inbox_id = ?, domain_id = ?, description = ?, enabled = ?,
       disabled_reason = ?, failing_since = ?, updated_at = ? WHERE id = ?`,
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
  yield* webhooksChanged(w.workspace_id);
}

export function* deleteWebhook(workspaceId: string, id: string): Query<boolean> {
  return (yield* run('DELETE FROM webhooks WHERE workspace_id = ? AND id = ?', workspaceId, id)) === 1;
}

/** A new secret; the old one keeps signing alongside for ROTATION_OVERLAP_MS. */
export function* rotateSecret(now: number, w: WebhookRow, box: Buffer): Query<string> {
  const secret = newSigningSecret();
  yield* run('UPDATE webhooks SET secret = ?, previous_secret = ?, previous_until = ?, updated_at = ? WHERE id = ?', seal(box, secret), w.secret, now + ROTATION_OVERLAP_MS, now, w.id);
  return secret;
}

/** The secrets that sign now: the current one, and the previous one during its overlap. */
export function signingSecrets(box: Buffer, w: WebhookRow, now: number): string[] {
  const current = unseal(box, w.secret);
  return w.previous_secret && w.previous_until !== null && now < w.previous_until ? [current, unseal(box, w.previous_secret)] : [current];
}
