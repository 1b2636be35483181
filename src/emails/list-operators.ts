// The SQL of a query's operators (search-operators.ts) for list.ts's planList: each in:, is:, has: and
// category: a condition on the email row, written with literal constants so a partial index still applies
// (in:inbox is the Inbox view's WHERE); each label: one of the email's label ids; -from: and -to: the
// substring tests of the `from` and `to` filters, negated. Read-only queries (db/query.ts).
import type { Query } from '../db/query.ts';
import { findLabels, listLabelRows } from '../labels/labels.ts';
import type { Flag, QueryOperators } from './search-operators.ts';

/** Every recipient of the email row `e` (To, Cc, Bcc) as `r.value`. */
export const RECIPIENTS = `(SELECT value FROM json_each(e.to_json) UNION ALL SELECT value FROM json_each(e.cc_json) UNION ALL SELECT value FROM json_each(e.bcc_json)) r`;

/** A LIKE pattern (ESCAPE '\') for a case-insensitive substring. */
export const containing = (value: string) => `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * `expr` LIKE the next parameter (a pattern of `containing`) without regard to case, on either store: SQLite's
 * LIKE ignores the case of ASCII letters, as its lower() folds them; PostgreSQL's LIKE ignores none, and its
 * lower() folds every letter.
 */
export const like = (expr: string) => `lower(${expr}) LIKE lower(?) ESCAPE '\\'`;

/**
 * `expr` holds the next parameter (the text itself, no pattern) without regard to case: the `from` and `to`
 * filters' test. A position rather than a LIKE: PostgreSQL guesses a '%...%' pattern's share of the rows from its
 * length (one in thousands for an address), plans for almost none, and reads every email of a frequent sender
 * to sort them; a position's share it guesses at a third, and walks the newest emails until the page is full.
 */
export const holds = (expr: string) => `instr(lower(${expr}), lower(?)) > 0`;

const FLAGS: Record<Flag, string[]> = {
  inbox: [`e.direction = 'in'`, 'e.archived_at IS NULL'],
  sent: [`e.direction = 'out'`],
  archive: ['e.archived_at IS NOT NULL'],
  spam: [`e.category = 'spam'`],
  trash: ['e.trashed_at IS NOT NULL'],
  scheduled: [`e.status = 'scheduled'`],
  unread: [`e.direction = 'in'`, 'e.read_at IS NULL'],
  important: ['e.important = 1'],
  attachment: ['EXISTS (SELECT 1 FROM email_attachments a WHERE a.email_id = e.id)'],
  primary: [`e.category = 'primary'`],
  updates: [`e.category = 'updates'`],
};

export interface Condition {
  sql: string;
  args: unknown[];
}

/** The conditions the operators put on each email, or null when nothing can match (a label: of no label). */
export function* operatorConditions(workspaceId: string, ops: QueryOperators): Query<Condition[] | null> {
  const out: Condition[] = [];
  const add = (sql: string, ...args: unknown[]) => out.push({ sql, args });
  for (const { flag, not } of ops.flags) {
    // NULL (a sent email's category) counts as false, so a negated test keeps it.
    if (not) add(`(${FLAGS[flag].join(' AND ')}) IS NOT TRUE`);
    else for (const sql of FLAGS[flag]) add(sql);
  }
  if (ops.labels.length) {
    const ids: string[] = [];
    for (const ref of ops.labels) {
      const id = yield* labelId(workspaceId, ref);
      if (!id) return null;
      ids.push(id);
    }
    // Written as the WHERE of emails_labelled, so the walk visits labelled mail only.
    add(`e.labels_json <> '[]'`);
    for (const id of new Set(ids)) add('EXISTS (SELECT 1 FROM json_each(e.labels_json) l WHERE l.value = ?)', id);
  }
  const excluded: string[] = [];
  for (const ref of ops.notLabels) {
    const id = yield* labelId(workspaceId, ref);
    if (id !== null) excluded.push(id);
  }
  if (excluded.length) add('NOT EXISTS (SELECT 1 FROM json_each(e.labels_json) l WHERE l.value IN (SELECT value FROM json_each(?)))', JSON.stringify(excluded));
  for (const value of ops.notFrom) {
    const pattern = containing(value);
    add(`NOT (${like("coalesce(e.from_address, '')")} OR ${like("coalesce(e.from_name, '')")})`, pattern, pattern);
  }
  for (const value of ops.notTo) {
    const pattern = containing(value);
    add(`NOT EXISTS (SELECT 1 FROM ${RECIPIENTS} WHERE ${like("r.value ->> '$.address'")} OR ${like("r.value ->> '$.name'")})`, pattern, pattern);
  }
  return out;
}

/**
 * The label a label: value names: its id, its name without regard to case (`Projects/Alpha`, `"Big clients"`),
 * or Gmail's form of the name, lower case with spaces and slashes as dashes (`big-clients`, `projects-alpha`).
 */
function* labelId(workspaceId: string, ref: string): Query<string | null> {
  const found = (yield* findLabels(workspaceId, [ref])).labels[0];
  if (found) return found.id;
  const gmail = (name: string) => name.toLowerCase().replace(/[\s/]+/g, '-');
  return (yield* listLabelRows(workspaceId)).find((l) => gmail(l.name) === gmail(ref))?.id ?? null;
}
