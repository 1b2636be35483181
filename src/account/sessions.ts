// Browser sessions behind the `service_session_v2` cookie: a fresh random token at every login, stored
// only as its hash, with an absolute expiry, revocable at once (logout, a new login from that browser, or
// a passphrase change, which ends every other session of the user).
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';
import { randomToken, secretHash } from './secrets.ts';

export interface Session {
  id: string;
  workspaceId: string;
  userId: string;
  expiresAt: number;
}

const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

export function createSession(db: Db, clock: Clock, input: { workspaceId: string; userId: string; ttlMs: number }): Session & { token: string } {
  const token = randomToken(32);
  const now = clock.now();
  const session = { id: newId('ses', now), workspaceId: input.workspaceId, userId: input.userId, expiresAt: now + input.ttlMs };
  db.prepare('INSERT INTO sessions (id, token_hash, workspace_id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)').run(
    session.id,
    secretHash(token),
    session.workspaceId,
    session.userId,
    now,
    session.expiresAt,
  );
  return { ...session, token };
}

/** The live session a cookie names, or null if it is unknown, revoked or expired. */
export function findSession(db: Db, clock: Clock, token: string): Session | null {
  if (!TOKEN_RE.test(token)) return null;
  const row = db
    .prepare(
      `SELECT s.id, s.workspace_id, s.user_id, s.expires_at FROM sessions s JOIN users u ON u.id = s.user_id
       WHERE s.token_hash = ? AND s.revoked_at IS NULL AND s.expires_at > ?`,
    )
    .get(secretHash(token), clock.now()) as { id: string; workspace_id: string; user_id: string; expires_at: number } | undefined;
  return row ? { id: row.id, workspaceId: row.workspace_id, userId: row.user_id, expiresAt: row.expires_at } : null;
}

export function revokeSession(db: Db, clock: Clock, token: string): boolean {
  if (!TOKEN_RE.test(token)) return false;
  return db.prepare('UPDATE sessions SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL').run(clock.now(), secretHash(token)).changes > 0;
}

/** Forgets sessions that ended more than a day ago; run periodically. */
export function purgeSessions(db: Db, clock: Clock): number {
  const cutoff = clock.now() - 24 * 60 * 60 * 1000;
  return db.prepare('DELETE FROM sessions WHERE expires_at < ? OR revoked_at < ?').run(cutoff, cutoff).changes;
}

/** A user's live sessions, newest first. */
export function listSessions(db: Db, clock: Clock, userId: string): Array<{ id: string; createdAt: number; expiresAt: number }> {
  return (
    db.prepare('SELECT id, created_at, expires_at FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at DESC').all(userId, clock.now()) as Array<{
      id: string;
      created_at: number;
      expires_at: number;
    }>
  ).map((r) => ({ id: r.id, createdAt: r.created_at, expiresAt: r.expires_at }));
}

/** Ends every live session of the user but `except` (a passphrase change); returns how many it ended. */
export function revokeUserSessions(db: Db, clock: Clock, userId: string, except?: string): number {
  return db.prepare('UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? AND id IS NOT ?').run(clock.now(), userId, clock.now(), except ?? null).changes;
}

/** Ends one of the user's sessions (signing out another browser). */
export function revokeSessionById(db: Db, clock: Clock, userId: string, id: string): boolean {
  return db.prepare('UPDATE sessions SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL').run(clock.now(), id, userId).changes > 0;
}
