// The per-workspace suppression list (DESIGN.md "suppressed recipient"): hard bounces, complaints and
// unsubscribes put an address on it, the owner can add and remove entries, and every send checks it, so a
// suppressed recipient gets a `blocked` event instead of a delivery. Queries (db/query.ts): callers run them
// inside their own transaction next to the change that caused it.
import type { Clock } from '../clock.ts';
import { iso } from '../clock.ts';
import { all, get, run, type Query } from '../db/query.ts';

export type SuppressionScope = 'all' | 'marketing';
export type SuppressionReason = 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';
export type SuppressionOrigin = 'recipient' | 'api';

export interface NewSuppression {
  workspaceId: string;
  email: string;
  scope: SuppressionScope;
  reason: SuppressionReason;
  origin: SuppressionOrigin;
  emailId?: string | null;
  /** What the evidence said: a DSN's status and diagnostic, a complaint's feedback type. */
  detail?: string | null;
}

interface SuppressionRow {
  email: string;
  scope: SuppressionScope;
  reason: SuppressionReason;
  origin: SuppressionOrigin;
  email_id: string | null;
  detail: string | null;
  created_at: number;
}

export interface Suppression {
  email: string;
  scope: SuppressionScope;
  reason: SuppressionReason;
  origin: SuppressionOrigin;
  emailId: string | null;
  detail: string | null;
  createdAt: string;
}

const view = (r: SuppressionRow): Suppression => ({
  email: r.email,
  scope: r.scope,
  reason: r.reason,
  origin: r.origin,
  emailId: r.email_id,
  detail: r.detail,
  createdAt: iso(r.created_at),
});

/**
 * Adds an address, or widens its entry: a marketing-only entry becomes 'all' when a bounce or complaint
 * arrives, but an existing 'all' entry keeps its first reason (the one that stopped the mail).
 */
export function* suppress(clock: Clock, s: NewSuppression): Query<void> {
  yield* run(
    `INSERT INTO suppressions (workspace_id, email, scope, reason, origin, email_id, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (workspace_id, email) DO UPDATE SET scope = excluded.scope, reason = excluded.reason, origin = excluded.origin,
       email_id = excluded.email_id, detail = excluded.detail, created_at = excluded.created_at
     WHERE suppressions.scope = 'marketing' AND excluded.scope = 'all'`,
    s.workspaceId, s.email.toLowerCase(), s.scope, s.reason, s.origin, s.emailId ?? null, s.detail ?? null, clock.now(),
  );
}

/** Removes the entry of an address; false when there was none. */
export function* unsuppress(workspaceId: string, email: string): Query<boolean> {
  return (yield* run('DELETE FROM suppressions WHERE workspace_id = ? AND email = ?', workspaceId, email.toLowerCase())) > 0;
}

/** The entry that stops mail of this class to `email`, if any. */
export function* suppressionFor(workspaceId: string, email: string, messageClass: 'transactional' | 'marketing'): Query<Suppression | null> {
  return (yield* suppressionsFor(workspaceId, [email], messageClass)).get(email.toLowerCase()) ?? null;
}

/**
 * suppressionFor each of `emails`, in one read (a send's recipients: on PostgreSQL each read under the write lock
 * is a round trip), keyed by the lower-cased address; an address mail of this class may go to has no entry.
 */
export function* suppressionsFor(workspaceId: string, emails: string[], messageClass: 'transactional' | 'marketing'): Query<Map<string, Suppression>> {
  const wanted = [...new Set(emails.map((e) => e.toLowerCase()))];
  if (!wanted.length) return new Map();
  // One address, the common send, by its key alone; several through json_each.
  const rows = yield* (wanted.length === 1
    ? all<SuppressionRow>('SELECT * FROM suppressions WHERE workspace_id = ? AND email = ?', workspaceId, wanted[0])
    : all<SuppressionRow>('SELECT * FROM suppressions WHERE workspace_id = ? AND email IN (SELECT value FROM json_each(?))', workspaceId, JSON.stringify(wanted)));
  return new Map(rows.filter((r) => r.scope !== 'marketing' || messageClass === 'marketing').map((r) => [r.email, view(r)]));
}

export function* getSuppression(workspaceId: string, email: string): Query<Suppression | null> {
  const row = yield* get<SuppressionRow>('SELECT * FROM suppressions WHERE workspace_id = ? AND email = ?', workspaceId, email.toLowerCase());
  return row ? view(row) : null;
}

/** Newest first, one page (DESIGN.md lists: the caller fetches limit + 1 and pages with pageOf). */
export function* listSuppressions(workspaceId: string, page: { limit: number; offset: number }, reason?: SuppressionReason): Query<Suppression[]> {
  const rows = yield* all<SuppressionRow>(
    `SELECT * FROM suppressions WHERE workspace_id = ? ${reason ? 'AND reason = ?' : ''} ORDER BY created_at DESC, email LIMIT ? OFFSET ?`,
    ...(reason ? [workspaceId, reason] : [workspaceId]), page.limit + 1, page.offset,
  );
  return rows.map(view);
}
