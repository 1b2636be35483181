// API keys: `re_` + 192 random bits. The full secret is returned once, at creation; the database keeps its
// SHA-256 and a short non-secret prefix for people to recognise it by. Revocation takes effect at the next
// request (nothing caches keys).
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';
import { randomToken, secretHash } from './secrets.ts';

export interface ApiKey {
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
}

const KEY_RE = /^re_[A-Za-z0-9_-]{32}$/;
const PREFIX_LENGTH = 're_'.length + 8;
// lastUsedAt is kept to the minute: writing it on every request would cost an fsync per call.
const LAST_USED_GRANULARITY_MS = 60_000;

const toKey = (r: Row): ApiKey => ({ id: r.id, name: r.name, prefix: r.prefix, createdAt: r.created_at, lastUsedAt: r.last_used_at });

export function createKey(db: Db, clock: Clock, workspaceId: string, name: string): ApiKey & { key: string } {
  const key = `re_${randomToken(24)}`;
  const row: Row = { id: newId('key', clock.now()), name, prefix: key.slice(0, PREFIX_LENGTH), created_at: clock.now(), last_used_at: null };
  db.prepare('INSERT INTO api_keys (id, workspace_id, name, prefix, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
    row.id,
    workspaceId,
    row.name,
    row.prefix,
    secretHash(key),
    row.created_at,
  );
  return { ...toKey(row), key };
}

export function listKeys(db: Db, workspaceId: string, page: { limit: number; offset: number }): ApiKey[] {
  const rows = db
    .prepare(
      `SELECT id, name, prefix, created_at, last_used_at FROM api_keys
       WHERE workspace_id = ? AND revoked_at IS NULL ORDER BY id DESC LIMIT ? OFFSET ?`,
    )
    .all(workspaceId, page.limit + 1, page.offset) as Row[];
  return rows.map(toKey);
}

/** Revokes a live key; returns it (for the audit log and the key.revoked event), or null if there was none. */
export function revokeKey(db: Db, clock: Clock, workspaceId: string, id: string): ApiKey | null {
  const row = db.prepare('SELECT id, name, prefix, created_at, last_used_at FROM api_keys WHERE workspace_id = ? AND id = ? AND revoked_at IS NULL').get(workspaceId, id) as Row | undefined;
  if (!row) return null;
  db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run(clock.now(), id);
  return toKey(row);
}

/** The workspace and key a secret belongs to, or null if it is malformed, unknown or revoked. */
export function findKeyBySecret(db: Db, clock: Clock, secret: string): { workspaceId: string; keyId: string } | null {
  if (!KEY_RE.test(secret)) return null;
  const row = db
    .prepare(
      `SELECT k.id, k.workspace_id, k.last_used_at FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
       WHERE k.secret_hash = ? AND k.revoked_at IS NULL`,
    )
    .get(secretHash(secret)) as { id: string; workspace_id: string; last_used_at: number | null } | undefined;
  if (!row) return null;
  const now = clock.now();
  if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_GRANULARITY_MS) {
    db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(now, row.id);
  }
  return { workspaceId: row.workspace_id, keyId: row.id };
}
