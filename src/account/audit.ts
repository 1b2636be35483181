// The audit log (migration 0042): who did what to the box, written by the caller in the transaction of the action
// it records, read by GET /audit, pruned after retention_audit_days. A row keeps its target's name as text, so it
// reads the same after the target is deleted; its details are small and never hold a secret (a key's prefix,
// never the key; a webhook's URL, never its secret).
import { userInfo } from 'node:os';
import { iso } from '../clock.ts';
import { all, run, type Query } from '../db/query.ts';
import { newId } from '../db/ids.ts';

/** The actions recorded; the vocabulary GET /audit's `action` filter takes. */
export const AUDIT_ACTIONS = [
  'key.created', 'key.revoked',
  'user.created', 'user.password_changed', 'user.login_unlocked', 'session.revoked',
  'workspace.created', 'sending.resumed',
  'domain.created', 'domain.updated', 'domain.verified', 'domain.deleted', 'domain.dkim_rotated', 'domain.inbound_setup',
  'inbox.created', 'inbox.updated', 'inbox.deleted', 'inbox.forwarding_changed',
  'webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.secret_rotated',
  'billing.checkout_started', 'billing.plan_activated', 'billing.plan_canceled',
  'box.backup_created', 'box.restored', 'box.migrated',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const ACTOR_TYPES = ['user', 'key', 'cli', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** Who acts: a user through a session, a key, the CLI (id: the system account that ran it), or the box itself. */
export interface AuditActor {
  type: ActorType;
  id: string | null;
  sessionId?: string | null;
  /** The client's address as the HTTP front door saw it (behind trusted_proxies: the one they forwarded). */
  ip?: string | null;
}

export interface AuditEntry {
  /** null for what concerns the whole box (a backup, a restore, a new workspace). */
  workspaceId: string | null;
  action: AuditAction;
  target?: { type: string; id: string | null; name?: string | null };
  data?: Record<string, unknown>;
}

/** The caller of an API request: the shape of http/auth.ts's Principal, and the client address. */
export function actorOf(p: { kind: 'key'; keyId: string } | { kind: 'session'; userId: string; sessionId: string }, ip: string): AuditActor {
  return p.kind === 'key' ? { type: 'key', id: p.keyId, ip } : { type: 'user', id: p.userId, sessionId: p.sessionId, ip };
}

/** The CLI, named by the system account that ran it. */
export function cliActor(): AuditActor {
  let name: string | null = null;
  try {
    name = userInfo().username || null;
  } catch {
    // A uid without a passwd entry (some containers): the row still says it was the CLI.
  }
  return { type: 'cli', id: name };
}

/** The box itself: the periodic DNS re-check, a payment provider's notice. */
export const systemActor = (id: string): AuditActor => ({ type: 'system', id });

/** Adds a row; yield* it from the query of the action it records, so it is written in the same transaction. */
export function* recordAudit(now: number, actor: AuditActor, e: AuditEntry): Query<string> {
  const id = newId('aud', now);
  yield* run(
    `INSERT INTO audit_log (id, workspace_id, actor_type, actor_id, session_id, ip, action, target_type, target_id, target_name, data, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id, e.workspaceId, actor.type, actor.id, actor.sessionId ?? null, actor.ip ?? null, e.action, e.target?.type ?? null, e.target?.id ?? null, e.target?.name ?? null, JSON.stringify(e.data ?? {}), now,
  );
  return id;
}

interface AuditRow {
  id: string;
  actor_type: ActorType;
  actor_id: string | null;
  session_id: string | null;
  ip: string | null;
  action: AuditAction;
  target_type: string | null;
  target_id: string | null;
  target_name: string | null;
  data: string;
  created_at: number;
}

export interface AuditQuery {
  workspaceId: string;
  actions?: string[];
  /** An actor's id (usr_..., key_..., ses_..., a CLI account's name), or a type: user, key, cli, system. */
  actor?: string;
  targetId?: string;
  after?: number;
  before?: number;
  limit: number;
  offset: number;
}

/** A workspace's rows and the box-wide ones, newest first; limit + 1 rows, for pageOf. */
export function* listAudit(q: AuditQuery): Query<ReturnType<typeof presentAudit>[]> {
  const where = ['(workspace_id = @workspaceId OR workspace_id IS NULL)'];
  const params: Record<string, unknown> = { workspaceId: q.workspaceId, limit: q.limit + 1, offset: q.offset };
  if (q.actions?.length) {
    where.push('action IN (SELECT value FROM json_each(@actions))');
    params.actions = JSON.stringify(q.actions);
  }
  if (q.actor) {
    where.push((ACTOR_TYPES as readonly string[]).includes(q.actor) ? 'actor_type = @actor' : '(actor_id = @actor OR session_id = @actor)');
    params.actor = q.actor;
  }
  if (q.targetId) {
    where.push('target_id = @targetId');
    params.targetId = q.targetId;
  }
  if (q.after !== undefined) {
    where.push('created_at > @after');
    params.after = q.after;
  }
  if (q.before !== undefined) {
    where.push('created_at < @before');
    params.before = q.before;
  }
  const rows = yield* all<AuditRow>(`SELECT * FROM audit_log WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT @limit OFFSET @offset`, params);
  return rows.map(presentAudit);
}

const presentAudit = (r: AuditRow) => ({
  id: r.id,
  action: r.action,
  actor: { type: r.actor_type, id: r.actor_id, ...(r.actor_type === 'user' ? { sessionId: r.session_id } : {}) },
  ip: r.ip,
  target: r.target_type === null ? null : { type: r.target_type, id: r.target_id, name: r.target_name },
  createdAt: iso(r.created_at),
  data: JSON.parse(r.data) as Record<string, unknown>,
});

/** retention_audit_days: rows older than `before` go, a batch at a time (the hourly housekeeping calls it). */
export const pruneAudit = (before: number) => run('DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE created_at < ? LIMIT 5000)', before);
