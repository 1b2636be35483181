// A key created or revoked, as one transaction: the key, its audit row and its key.created / key.revoked event
// (webhooks and the live stream). The API's routes and the CLI's `key create` both go through here.
import { iso, type Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { runOn } from '../db/sqlite-query.ts';
import { addDomainEvent } from '../domains/domain-events.ts';
import { createKey, revokeKey, type ApiKey } from './keys.ts';
import type { KeyPermission } from './key-scope.ts';
import { recordAudit, type AuditActor } from './audit.ts';

const shown = (k: ApiKey) => ({ id: k.id, name: k.name, prefix: k.prefix, createdAt: iso(k.createdAt) });

// Bridge: addDomainEvent (domains/domain-events.ts) still takes SQLite's connection, so both functions run the
// key's and the audit row's queries on it, in its transaction; they become queries once it is one.

export function createKeyRecorded(db: Db, clock: Clock, actor: AuditActor, workspaceId: string, name: string, scope?: KeyPermission): ApiKey & { key: string } {
  return db.transaction(() => {
    const key = runOn(db, createKey(clock, workspaceId, name, scope));
    const now = clock.now();
    runOn(db, recordAudit(now, actor, { workspaceId, action: 'key.created', target: { type: 'key', id: key.id, name: key.name }, data: { prefix: key.prefix, permission: scope?.permission ?? 'full_access' } }));
    addDomainEvent(db, now, { workspaceId, domainId: null, type: 'key.created', data: { key: shown(key), actor: { type: actor.type, id: actor.id } } });
    return key;
  })();
}

/** The key revoked, or null when the workspace has no such live key (nothing is recorded then). */
export function revokeKeyRecorded(db: Db, clock: Clock, actor: AuditActor, workspaceId: string, id: string): ApiKey | null {
  return db.transaction(() => {
    const key = runOn(db, revokeKey(clock, workspaceId, id));
    if (!key) return null;
    const now = clock.now();
    runOn(db, recordAudit(now, actor, { workspaceId, action: 'key.revoked', target: { type: 'key', id: key.id, name: key.name }, data: { prefix: key.prefix } }));
    addDomainEvent(db, now, { workspaceId, domainId: null, type: 'key.revoked', data: { key: { ...shown(key), revokedAt: iso(now) }, actor: { type: actor.type, id: actor.id } } });
    return key;
  })();
}
