// Filing rules (API-SPEC.md 4.3): a rule files mail into its label when every condition it sets matches —
// direction, inbox, and case-insensitive substrings of the sender, the recipients and the subject. One SQL
// predicate decides a match everywhere (new mail as it is stored, the dry run, applying to retained mail), so
// a dry run counts exactly what applying then files. Substrings compare ASCII case-insensitively (SQLite lower()).
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';

export interface RuleConditions {
  direction: 'in' | 'out' | null;
  inboxId: string | null;
  from: string | null;
  to: string | null;
  subject: string | null;
}

export interface Rule extends RuleConditions {
  id: string;
  labelId: string;
  skipInbox: boolean;
}

interface RuleRow {
  id: string;
  label_id: string;
  direction: 'in' | 'out' | null;
  inbox_id: string | null;
  from_contains: string | null;
  to_contains: string | null;
  subject_contains: string | null;
  skip_inbox: number;
}

const toRule = (r: RuleRow): Rule => ({
  id: r.id,
  labelId: r.label_id,
  direction: r.direction,
  inboxId: r.inbox_id,
  from: r.from_contains,
  to: r.to_contains,
  subject: r.subject_contains,
  skipInbox: r.skip_inbox === 1,
});

export const presentRule = (r: Rule) => ({ id: r.id, labelId: r.labelId, direction: r.direction, inboxId: r.inboxId, from: r.from, to: r.to, subject: r.subject, skipInbox: r.skipInbox });

/** The WHERE condition (on `emails e`) that a rule's conditions make, with its parameters. */
export function matchClause(c: RuleConditions): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  const when = (value: string | null, sql: string, param = value) => {
    if (value === null) return;
    parts.push(sql);
    params.push(param);
  };
  when(c.direction, 'e.direction = ?');
  when(c.inboxId, 'e.inbox_id = ?');
  when(c.from, "instr(lower(e.from_address || ' ' || coalesce(e.from_name, '')), ?) > 0", c.from?.toLowerCase());
  when(c.to, 'instr(lower(e.to_json || e.cc_json || e.bcc_json), ?) > 0', c.to?.toLowerCase());
  when(c.subject, 'instr(lower(e.subject), ?) > 0', c.subject?.toLowerCase());
  return { sql: parts.length ? parts.join(' AND ') : '1', params };
}

export function createRule(db: Db, now: number, workspaceId: string, labelId: string, c: RuleConditions & { skipInbox: boolean }): Rule {
  const id = newId('lrule', now);
  db.prepare(
    'INSERT INTO label_rules (id, workspace_id, label_id, direction, inbox_id, from_contains, to_contains, subject_contains, skip_inbox, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(id, workspaceId, labelId, c.direction, c.inboxId, c.from?.toLowerCase() ?? null, c.to?.toLowerCase() ?? null, c.subject?.toLowerCase() ?? null, c.skipInbox ? 1 : 0, now);
  return getRule(db, workspaceId, id)!;
}

export const getRule = (db: Db, workspaceId: string, id: string) => {
  const row = db.prepare('SELECT * FROM label_rules WHERE workspace_id = ? AND id = ?').get(workspaceId, id) as RuleRow | undefined;
  return row ? toRule(row) : null;
};

export const rulesOfWorkspace = (db: Db, workspaceId: string) =>
  (db.prepare('SELECT * FROM label_rules WHERE workspace_id = ? ORDER BY created_at, id').all(workspaceId) as RuleRow[]).map(toRule);

export const deleteRule = (db: Db, workspaceId: string, labelId: string, id: string) =>
  db.prepare('DELETE FROM label_rules WHERE workspace_id = ? AND label_id = ? AND id = ?').run(workspaceId, labelId, id).changes > 0;

/** Whether the rule's conditions match the stored email `emailId`. */
export function ruleMatches(db: Db, c: RuleConditions, emailId: string): boolean {
  const { sql, params } = matchClause(c);
  return db.prepare(`SELECT 1 FROM emails e WHERE e.id = ? AND ${sql}`).get(emailId, ...params) !== undefined;
}

/** How many retained emails of the workspace the conditions match, and the newest `limit` of them. */
export function dryRun(db: Db, workspaceId: string, c: RuleConditions, limit = 20) {
  const { sql, params } = matchClause(c);
  const count = db.prepare(`SELECT count(*) FROM emails e WHERE e.workspace_id = ? AND ${sql}`).pluck().get(workspaceId, ...params) as number;
  const newest = db
    .prepare(`SELECT e.id, e.direction, e.from_address, e.subject, e.created_at FROM emails e WHERE e.workspace_id = ? AND ${sql} ORDER BY e.search_rowid DESC LIMIT ?`)
    .all(workspaceId, ...params, limit) as Array<{ id: string; direction: string; from_address: string; subject: string; created_at: number }>;
  return { count, newest };
}
