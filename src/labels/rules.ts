// Filing rules (API-SPEC.md 4.3): a rule files mail into its label when every condition it sets matches —
// direction, inbox, and case-insensitive substrings of the sender, the recipients and the subject. One SQL
// predicate decides a match everywhere (new mail as it is stored, the dry run, applying to retained mail), so
// a dry run counts exactly what applying then files. Substrings compare ASCII case-insensitively (SQLite lower()).
import { all, get, run, value, type Query } from '../db/query.ts';
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

export function* createRule(now: number, workspaceId: string, labelId: string, c: RuleConditions & { skipInbox: boolean }): Query<Rule> {
  const id = newId('lrule', now);
  yield* run(
    'INSERT INTO label_rules (id, workspace_id, label_id, direction, inbox_id, from_contains, to_contains, subject_contains, skip_inbox, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    id, workspaceId, labelId, c.direction, c.inboxId, c.from?.toLowerCase() ?? null, c.to?.toLowerCase() ?? null, c.subject?.toLowerCase() ?? null, c.skipInbox ? 1 : 0, now,
  );
  return (yield* getRule(workspaceId, id))!;
}

export function* getRule(workspaceId: string, id: string): Query<Rule | null> {
  const row = yield* get<RuleRow>('SELECT * FROM label_rules WHERE workspace_id = ? AND id = ?', workspaceId, id);
  return row ? toRule(row) : null;
}

export function* rulesOfWorkspace(workspaceId: string): Query<Rule[]> {
  return (yield* all<RuleRow>('SELECT * FROM label_rules WHERE workspace_id = ? ORDER BY created_at, id', workspaceId)).map(toRule);
}

export function* deleteRule(workspaceId: string, labelId: string, id: string): Query<boolean> {
  return (yield* run('DELETE FROM label_rules WHERE workspace_id = ? AND label_id = ? AND id = ?', workspaceId, labelId, id)) > 0;
}

/** Whether the rule's conditions match the stored email `emailId`. */
export function* ruleMatches(c: RuleConditions, emailId: string): Query<boolean> {
  const { sql, params } = matchClause(c);
  return (yield* get(`SELECT 1 FROM emails e WHERE e.id = ? AND ${sql}`, emailId, ...params)) !== undefined;
}

export interface DryRun {
  count: number;
  newest: Array<{ id: string; direction: string; from_address: string; subject: string; created_at: number }>;
}

/** How many retained emails of the workspace the conditions match, and the newest `limit` of them. */
export function* dryRun(workspaceId: string, c: RuleConditions, limit = 20): Query<DryRun> {
  const { sql, params } = matchClause(c);
  const count = (yield* value<number>(`SELECT count(*) FROM emails e WHERE e.workspace_id = ? AND ${sql}`, workspaceId, ...params))!;
  const newest = yield* all<DryRun['newest'][number]>(
    `SELECT e.id, e.direction, e.from_address, e.subject, e.created_at FROM emails e WHERE e.workspace_id = ? AND ${sql} ORDER BY e.search_rowid DESC LIMIT ?`,
    workspaceId, ...params, limit,
  );
  return { count, newest };
}
