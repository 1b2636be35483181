// Stand-in: account/audit.ts's recordAudit as a query (db/query.ts), the same statement, for the queries of
// domains/, inboxes/ and webhooks/ that write an audit row in their transaction. The account area moves
// recordAudit itself onto queries in its own branch; once both are merged this file goes, and its importers
// import recordAudit from account/audit.ts.
import type { AuditActor, AuditEntry } from '../account/audit.ts';
import { newId } from '../db/ids.ts';
import { run, type Query } from '../db/query.ts';

/** Adds a row; yield it inside the transaction of the action it records. */
export function* recordAudit(now: number, actor: AuditActor, e: AuditEntry): Query<string> {
  const id = newId('aud', now);
  yield* run(
    `INSERT INTO audit_log (id, workspace_id, actor_type, actor_id, session_id, ip, action, target_type, target_id, target_name, data, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id, e.workspaceId, actor.type, actor.id, actor.sessionId ?? null, actor.ip ?? null, e.action, e.target?.type ?? null, e.target?.id ?? null, e.target?.name ?? null, JSON.stringify(e.data ?? {}), now,
  );
  return id;
}
