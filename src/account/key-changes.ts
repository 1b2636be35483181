// A key created or revoked, as one transaction: the key, its audit row and its key.created / key.revoked event
// (webhooks and the live stream). The API's routes and the CLI's `key create` both go through here.
import { iso, type Clock } from '../clock.ts';
import type { Query } from '../db/query.ts';
import { addDomainEvent } from '../domains/domain-events.ts';
import { createKey, revokeKey, type ApiKey } from './keys.ts';
import type { KeyPermission } from './key-scope.ts';
import { recordAudit, type AuditActor } from './audit.ts';

const shown = (k: ApiKey) => ({ id: k.id, name: k.name, prefix: k.prefix, createdAt: iso(k.createdAt) });

export function* createKeyRecorded(clock: Clock, actor: AuditActor, workspaceId: string, name: string, scope?: KeyPermission): Query<ApiKey & { key: string }> {
  const key = yield* createKey(clock, workspaceId, name, scope);
  const now = clock.now();
  yield* recordAudit(now, actor, { workspaceId, action: 'key.created', target: { type: 'key', id: key.id, name: key.name }, data: { prefix: key.prefix, permission: scope?.permission ?? 'full_access' } });
  yield* addDomainEvent(now, { workspaceId, domainId: null, type: 'key.created', data: { key: shown(key), actor: { type: actor.type, id: actor.id } } });
  return key;
}

/** The key revoked, or null when the workspace has no such live key (nothing is recorded then). */
export function* revokeKeyRecorded(clock: Clock, actor: AuditActor, workspaceId: string, id: string): Query<ApiKey | null> {
  const key = yield* revokeKey(clock, workspaceId, id);
  if (!key) return null;
  const now = clock.now();
  yield* recordAudit(now, actor, { workspaceId, action: 'key.revoked', target: { type: 'key', id: key.id, name: key.name }, data: { prefix: key.prefix } });
  yield* addDomainEvent(now, { workspaceId, domainId: null, type: 'key.revoked', data: { key: { ...shown(key), revokedAt: iso(now) }, actor: { type: actor.type, id: actor.id } } });
  return key;
}
