// Browser sessions behind the `service_session_v2` cookie: a fresh random token at every login, stored
// only as its hash, with an absolute expiry, revocable at once (logout, a new login from that browser, or
// a passphrase change, which ends every other session of the user).
import type { Clock } from '../clock.ts';
import { all, get, run, type Query } from '../db/query.ts';
import { newId } from '../db/ids.ts';
import { randomToken, secretHash } from './secrets.ts';

export interface Session {
  id: string;
  workspaceId: string;
  userId: string;
  expiresAt: number;
}

const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

export function* createSession(clock: Clock, input: { workspaceId: string; userId: string; ttlMs: number }): Query<Session & { token: string }> {
  const token = randomToken(32);
  const now = clock.now();
  const session = { id: newId('ses', now), workspaceId: input.workspaceId, userId: input.userId, expiresAt: now + input.ttlMs };
  yield* run(
    'INSERT INTO sessions (id, token_hash, workspace_id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
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
export function* findSession(clock: Clock, token: string): Query<Session | null> {
  if (!TOKEN_RE.test(token)) return null;
  const row = yield* get<{ id: string; workspace_id: string; user_id: string; expires_at: number }>(
    `SELECT s.id, s.workspace_id, s.user_id, s.expires_at FROM sessions s JOIN users u ON u.id = s.user_id
     WHERE s.token_hash = ? AND s.revoked_at IS NULL AND s.expires_at > ?`,
    secretHash(token),
    clock.now(),
  );
  return row ? { id: row.id, workspaceId: row.workspace_id, userId: row.user_id, expiresAt: row.expires_at } : null;
}

export function* revokeSession(clock: Clock, token: string): Query<boolean> {
  if (!TOKEN_RE.test(token)) return false;
  return (yield* run('UPDATE sessions SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL', clock.now(), secretHash(token))) > 0;
}

/** Forgets sessions that ended more than a day ago; run periodically. */
export function purgeSessions(clock: Clock): Query<number> {
  const cutoff = clock.now() - 24 * 60 * 60 * 1000;
  return run('DELETE FROM sessions WHERE expires_at < ? OR revoked_at < ?', cutoff, cutoff);
}

/** A user's live sessions, newest first. */
export function* listSessions(clock: Clock, userId: string): Query<Array<{ id: string; createdAt: number; expiresAt: number }>> {
  const rows = yield* all<{ id: string; created_at: number; expires_at: number }>(
    'SELECT id, created_at, expires_at FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at DESC',
    userId,
    clock.now(),
  );
  return rows.map((r) => ({ id: r.id, createdAt: r.created_at, expiresAt: r.expires_at }));
}

/** Ends every live session of the user but `except` (a passphrase change); returns how many it ended. */
export function revokeUserSessions(clock: Clock, userId: string, except?: string): Query<number> {
  return run('UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? AND id IS DISTINCT FROM ?', clock.now(), userId, clock.now(), except ?? null);
}

/** Ends one of the user's sessions (signing out another browser). */
export function* revokeSessionById(clock: Clock, userId: string, id: string): Query<boolean> {
  return (yield* run('UPDATE sessions SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL', clock.now(), id, userId)) > 0;
}
