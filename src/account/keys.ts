// API keys: `re_` + 192 random bits. The full secret is returned once, at creation; the database keeps its
// SHA-256 and a short non-secret prefix for people to recognise it by. Revocation takes effect at the next
// request: on PostgreSQL, at once on the node that revoked it, and on the others once they hear of it (a
// millisecond or so; db/node-cache.ts).
import type { Clock } from '../clock.ts';
import { all, get, run, type Query } from '../db/query.ts';
import type { NodeCache } from '../db/node-cache.ts';
import { newId } from '../db/ids.ts';
import { randomToken, secretHash } from './secrets.ts';
import { resolveScope, type KeyPermission, type KeyScope, type Permission } from './key-scope.ts';

export interface FoundKey {
  workspaceId: string;
  keyId: string;
  scope: KeyScope;
}

export interface ApiKey extends KeyPermission {
  id: string;
  name: string;
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
}

interface Row {
  id: string;
  name: string;
  prefix: string;
  created_at: number;
  last_used_at: number | null;
  permission: Permission;
  domain_id: string | null;
  inbox_ids: string | null;
}

const FULL: KeyPermission = { permission: 'full_access', domainId: null, inboxIds: null };
const permissionOf = (r: Pick<Row, 'permission' | 'domain_id' | 'inbox_ids'>): KeyPermission => ({
  permission: r.permission,
  domainId: r.domain_id,
  inboxIds: r.inbox_ids === null ? null : (JSON.parse(r.inbox_ids) as string[]),
});

const KEY_RE = /^re_[A-Za-z0-9_-]{32}$/;
const PREFIX_LENGTH = 're_'.length + 8;
// lastUsedAt is kept to the minute: writing it on every request would cost an fsync per call.
const LAST_USED_GRANULARITY_MS = 60_000;

const toKey = (r: Row): ApiKey => ({ id: r.id, name: r.name, prefix: r.prefix, createdAt: r.created_at, lastUsedAt: r.last_used_at, ...permissionOf(r) });

/** `scope`: what the key may do (account/key-scope.ts parseKeyPermission checked it); full access by default. */
export function* createKey(clock: Clock, workspaceId: string, name: string, scope: KeyPermission = FULL): Query<ApiKey & { key: string }> {
  const key = `re_${randomToken(24)}`;
  const row: Row = {
    id: newId('key', clock.now()),
    name,
    prefix: key.slice(0, PREFIX_LENGTH),
    created_at: clock.now(),
    last_used_at: null,
    permission: scope.permission,
    domain_id: scope.domainId,
    inbox_ids: scope.inboxIds === null ? null : JSON.stringify(scope.inboxIds),
  };
  yield* run(
    'INSERT INTO api_keys (id, workspace_id, name, prefix, secret_hash, created_at, permission, domain_id, inbox_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    row.id,
    workspaceId,
    row.name,
    row.prefix,
    secretHash(key),
    row.created_at,
    row.permission,
    row.domain_id,
    row.inbox_ids,
  );
  return { ...toKey(row), key };
}

/** `onlyId`: a scoped key sees itself alone. */
export function* listKeys(workspaceId: string, page: { limit: number; offset: number }, onlyId?: string): Query<ApiKey[]> {
  const rows = yield* all<Row>(
    `SELECT id, name, prefix, created_at, last_used_at, permission, domain_id, inbox_ids FROM api_keys
     WHERE workspace_id = ? AND revoked_at IS NULL AND (CAST(? AS TEXT) IS NULL OR id = ?) ORDER BY id DESC LIMIT ? OFFSET ?`,
    workspaceId, onlyId ?? null, onlyId ?? null, page.limit + 1, page.offset,
  );
  return rows.map(toKey);
}

/** Revokes a live key; returns it (for the audit log and the key.revoked event), or null if there was none. */
export function* revokeKey(clock: Clock, workspaceId: string, id: string): Query<ApiKey | null> {
  const row = yield* get<Row>('SELECT id, name, prefix, created_at, last_used_at, permission, domain_id, inbox_ids FROM api_keys WHERE workspace_id = ? AND id = ? AND revoked_at IS NULL', workspaceId, id);
  if (!row) return null;
  yield* run('UPDATE api_keys SET revoked_at = ? WHERE id = ?', clock.now(), id);
  return toKey(row);
}

/**
 * The workspace, key and scope a secret belongs to, or null if it is malformed, unknown or revoked. A read that
 * also writes lastUsedAt when it is due (once a minute per key): each request runs it on its own, as a read. On
 * PostgreSQL a key found is kept by the node (db/node-cache.ts) until a key, workspace, domain or inbox changes,
 * and read again when its lastUsedAt is due; an unknown secret is looked up every time.
 */
export function* findKeyBySecret(clock: Clock, secret: string, cache?: NodeCache | null): Query<FoundKey | null> {
  if (!KEY_RE.test(secret)) return null;
  const hash = secretHash(secret);
  const cacheKey = `key ${hash.toString('base64')}`;
  const now = clock.now();
  const kept = cache?.get(cacheKey)?.value as { found: FoundKey; usedAt: number } | undefined;
  if (kept && now - kept.usedAt < LAST_USED_GRANULARITY_MS) return kept.found;
  const ticket = cache?.ticket();
  const row = yield* get<Pick<Row, 'id' | 'last_used_at' | 'permission' | 'domain_id' | 'inbox_ids'> & { workspace_id: string }>(
    `SELECT k.id, k.workspace_id, k.last_used_at, k.permission, k.domain_id, k.inbox_ids FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
     WHERE k.secret_hash = ? AND k.revoked_at IS NULL`,
    hash,
  );
  if (!row) return null;
  let usedAt = row.last_used_at ?? -Infinity;
  if (now - usedAt >= LAST_USED_GRANULARITY_MS) {
    yield* run('UPDATE api_keys SET last_used_at = ? WHERE id = ?', now, row.id);
    usedAt = now;
  }
  const found = { workspaceId: row.workspace_id, keyId: row.id, scope: yield* resolveScope(row.workspace_id, row.id, permissionOf(row)) };
  if (cache) cache.set(cacheKey, { found, usedAt }, ticket!);
  return found;
}
