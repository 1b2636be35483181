// GET /emails: the workspace's sent and received mail, newest first, filtered and searched; its SQL and its
// summary records. Newest first is emails.search_rowid descending (the order emails were written, also the
// email's FTS rowid), so every plan walks an index backwards and stops after one page; none sorts its matches:
//   * search, or `from`/`to`: walk email_search's rowids down (MATCH ... ORDER BY rowid DESC), join each to
//     its email and check the other filters on it. `from` and `to` (substrings) become the role tokens of the
//     addresses they can mean (found in the correspondents table) ANDed into the MATCH, and are then checked
//     exactly on the email. A prefix is walked by its first 3 letters in email_prefixes (email_search has no
//     prefix index), and when that does not settle it (a longer prefix, a phrase ending in one) checked on
//     each email's words (checkedWalk);
//   * `after` and `before` bound the walk by the rowids search_clock gives those times (timeBounds);
//   * otherwise: walk an index of emails (0007_mailbox_indexes.sql) down and check the filters on each row.
// Mail in the Trash is left out of every list unless the list asks for it (trashTerm).
// On PostgreSQL the full-text part is one tsquery on email_search's GIN index (its prefixes too, so no walk by
// their first letters), joined to the emails, newest first, as the planner sees fit (postgresSearch).
// Read-only queries (db/query.ts); it must not call a flow or a front door.
import type { Category, EmailRow } from './rows.ts';
import { all, change, column, dialect, plannedForValues, value, type Query } from '../db/query.ts';
import { iso, isoOrNull } from '../clock.ts';
import { ftsPhrase, tsPhrase, WEIGHTS, type SearchQuery } from './search-query.ts';
import { findLabels, labelsOfEach, type Label } from '../labels/labels.ts';
import { roleToken } from './search-index.ts';
import { containing, holds, like, operatorConditions, RECIPIENTS } from './list-operators.ts';
import type { QueryOperators } from './search-operators.ts';
import { extractedTexts, fallbackSnippets, searchSnippets } from './snippets.ts';
import { withWords } from './list-words.ts';
import type { DeliverySummary } from './delivery.ts';
import { summariesOf } from './delivery.ts';
import type { KeyScope } from '../account/key-scope.ts';
import { emailScopeTerm } from './scope.ts';

export const CATEGORIES: readonly Category[] = ['primary', 'updates', 'spam'];
export const STATUSES = ['scheduled', 'canceled', 'sent', 'delivered', 'delivery_delayed', 'bounced', 'blocked', 'failed', 'received'] as const;
export type Status = (typeof STATUSES)[number];

/**
 * What a list shows of the Trash (DESIGN.md "trash"): `exclude` (the default) leaves trashed mail out, `only`
 * is the Trash itself (`trashed=true`), `include` both (the search operator `in:anywhere`).
 */
export type TrashScope = 'exclude' | 'only' | 'include';

/** The list's condition on the Trash, or null for none. Written as the Inbox view's and the Trash's indexes say (0031_trash.sql). */
export function trashTerm(scope: TrashScope = 'exclude'): string | null {
  return scope === 'include' ? null : scope === 'only' ? 'e.trashed_at IS NOT NULL' : 'e.trashed_at IS NULL';
}

/** The validated parameters of GET /emails (search-routes.ts parses them). */
export interface ListParams {
  direction?: 'in' | 'out';
  status?: Status;
  /** Domain names (ASCII, lower case) and dom_ ids: an email matches either. */
  domainNames?: string[];
  domainIds?: string[];
  inboxId?: string;
  /** Label names (matched without regard to ASCII case) and lbl_ ids: an email matches any. */
  labelNames?: string[];
  labelIds?: string[];
  archived?: boolean;
  categories?: Category[];
  important?: boolean;
  includeSpam?: boolean;
  /** Parts of a sender's (recipient's) address or name: the email must match each (the parameter and from:/to:). */
  from?: string[];
  to?: string[];
  unread?: boolean;
  /** Creation time bounds, ms: after inclusive, before exclusive. */
  after?: number;
  before?: number;
  search?: SearchQuery;
  /** The query's other operators (search-operators.ts); their dates are in after and before. */
  operators?: QueryOperators;
  /** Absent: `exclude`. */
  trash?: TrashScope;
  /** A scoped key's reach (emails/scope.ts); absent, the whole workspace. */
  scope?: KeyScope;
  limit: number;
  offset: number;
}

export interface ListPlan {
  /** `search`: walks email_search by rowid; `index`: walks an index of emails. */
  kind: 'search' | 'index';
  sql: string;
  args: unknown[];
  /**
   * PostgreSQL: planned with the server's own cost of starting parallel workers (the box's connections ask ten
   * times it). Only a Gather Merge sorts a rare word's few matches, then looks their emails up newest first and
   * stops at a page; without, every email is walked newest first against them (25-50 ms, not 5-9, at 1,000,000).
   */
  parallel?: true;
}

// Past this many addresses a `from` or `to` value is too vague to narrow the walk by: the rows are checked one
// by one instead (a vague value matches often, so the walk meets a page of matches soon).
const MAX_CANDIDATE_ADDRESSES = 50;
// `before` bounds the walk where the newest creation time so far passed before + this: an email's created_at is
// below that newest only when the clock stepped back, and then by far less than this.
const BEFORE_SLACK_MS = 60_000;
// checkedWalk looks at up to this many emails, this many at a time.
const CHECK_BUDGET = 250;
const CHECK_CHUNK = 50;

const COLUMNS = `e.id, e.direction, e.status, e.from_address, e.from_name, e.to_json, e.subject, e.preview, e.created_at, e.inbox_id,
  e.thread_id, e.domain, e.category, e.important, e.read_at, e.archived_at, e.trashed_at, e.labels_json, e.scheduled_at,
  (SELECT count(*) FROM email_attachments a WHERE a.email_id = e.id) AS attachment_count`;

type SummaryRow = Pick<
  EmailRow,
  | 'id' | 'direction' | 'status' | 'from_address' | 'from_name' | 'to_json' | 'subject' | 'preview' | 'created_at' | 'inbox_id' | 'thread_id'
  | 'domain' | 'category' | 'important' | 'read_at' | 'archived_at' | 'trashed_at' | 'labels_json' | 'scheduled_at'
> & { attachment_count: number };

/** One page of the list: `{data, count, hasMore}` (DESIGN.md lists). */
export function* listEmails(workspaceId: string, p: ListParams) {
  const rows = (p.search?.walk?.check.length && p.offset + p.limit < CHECK_BUDGET ? yield* checkedWalk(workspaceId, p) : null) ?? (yield* fetchRows(yield* planList(workspaceId, p)));
  const page = rows.slice(0, p.limit);
  const snippets = yield* (p.search?.match ? searchSnippets(page, p.search.tokens) : fallbackSnippets(page));
  // Where the page's sent mail stands: one grouped query for the page (delivery.ts).
  const delivery = yield* summariesOf(page.filter((r) => r.direction === 'out').map((r) => r.id));
  const extracted = yield* extractedTexts(page.filter((r) => r.direction === 'in').map((r) => r.id));
  const labels = yield* labelsOfEach(workspaceId, page.map((r) => r.labels_json));
  const data = page.map((row, i) => ({
    ...presentSummary(row, snippets.get(row.id) ?? row.preview ?? '', labels[i]!, delivery.get(row.id) ?? null),
    extractedText: extracted.get(row.id) ?? null,
  }));
  return { data, count: data.length, hasMore: rows.length > p.limit };
}

function* fetchRows(plan: ListPlan | null): Query<SummaryRow[]> {
  if (!plan) return [];
  const rows = all<SummaryRow>(plan.sql, ...plan.args);
  if (plan.kind !== 'search') return yield* rows;
  // For this statement alone (the page's next would start workers for a few ids), LOCAL to the route's transaction.
  if (plan.parallel) yield* change('SET LOCAL parallel_setup_cost = 1000');
  const found = yield* plannedForValues(rows);
  if (plan.parallel) yield* change('RESET parallel_setup_cost');
  return found;
}

/**
 * A search with a prefix that its first 3 letters do not settle (a longer prefix, or a phrase that ends in
 * one), which FTS5 would answer by reading and merging the list of every word the prefix starts: walk the
 * emails that have the other words and the first 3 letters lazily, newest first, and check the whole term on
 * each email's words (subject, participants, attachment names, then body), a chunk at a time. When the emails
 * checked so far say the page would take more than CHECK_BUDGET of them, null: FTS5 then answers exactly (a
 * prefix that few of its 3-letter cousins share has short lists to merge).
 */
function* checkedWalk(workspaceId: string, p: ListParams): Query<SummaryRow[] | null> {
  // PostgreSQL's tsquery answers a prefix exactly, from its GIN index.
  if ((yield* dialect()) === 'postgres') return null;
  const plan = yield* planList(workspaceId, p, { broad: true, rows: CHECK_BUDGET + 1 });
  if (!plan) return [];
  const checks = p.search!.walk!.check;
  const want = p.offset + p.limit + 1;
  const found: SummaryRow[] = [];
  let seen = 0;
  let chunk: SummaryRow[] = [];
  // The walk's rows (CHECK_BUDGET + 1 at most) read at once: a query's statement answers with all its rows.
  for (const row of yield* all<SummaryRow>(plan.sql, ...plan.args)) {
    seen++;
    chunk.push(row);
    if (chunk.length < CHECK_CHUNK) continue;
    found.push(...(yield* withWords(chunk, checks)));
    chunk = [];
    if (found.length >= want) return found.slice(p.offset);
    // At the rate so far, would the page take more emails than the budget?
    if ((want - found.length) * (seen / Math.max(found.length, 0.5)) > CHECK_BUDGET - seen) return null;
  }
  found.push(...(yield* withWords(chunk, checks)));
  if (found.length < want && seen > CHECK_BUDGET) return null;
  return found.slice(p.offset);
}

/**
 * The statement that fetches one page (limit + 1 rows, to know whether more exist), or null when nothing can
 * match (a query without a searchable word, a `from` or `to` that names no correspondent of the workspace).
 * `broad`: the search walked by its prefixes' first 3 letters even when that needs checking, `rows` of them
 * from the first (checkedWalk). Otherwise a search whose prefixes need checking is FTS5's exact answer.
 */
export function* planList(workspaceId: string, p: ListParams, opts: { broad?: boolean; rows?: number } = {}): Query<ListPlan | null> {
  const postgres = (yield* dialect()) === 'postgres';
  const where: string[] = ['e.workspace_id = ?'];
  const args: unknown[] = [workspaceId];
  const match: string[] = [];
  /** The same as `match`, as tsqueries for PostgreSQL. */
  const tsMatch: string[] = [];
  let prefixes: string[] = [];
  const add = (sql: string, ...values: unknown[]) => {
    where.push(sql);
    args.push(...values);
  };

  if (p.search) {
    if (!p.search.match && !p.search.exclude) return null;
    const walk = p.search.walk;
    if (walk && (opts.broad || walk.check.length === 0)) {
      if (walk.match) match.push(walk.match);
      prefixes = walk.prefixes;
    } else if (p.search.match) {
      match.push(p.search.match);
    }
    if (p.search.tsquery.match) tsMatch.push(p.search.tsquery.match);
  }
  // Constants from closed sets are written into the SQL: a partial index applies only to literal terms.
  if (p.direction) add(`e.direction = '${p.direction}'`);
  if (p.status) add('e.status = ?', p.status);
  if (p.domainNames?.length || p.domainIds?.length) {
    const names = p.domainNames ?? [];
    const ids = p.domainIds ?? [];
    // Lists travel as one JSON parameter, so the SQL text (and the cached statement) does not vary with their length.
    add('(e.domain IN (SELECT value FROM json_each(?)) OR e.domain_id IN (SELECT value FROM json_each(?)))', JSON.stringify(names), JSON.stringify(ids));
  }
  if (p.inboxId) add('e.inbox_id = ?', p.inboxId);
  const scoped = p.scope ? emailScopeTerm(p.scope) : null;
  if (scoped) add(scoped.sql, ...scoped.args);
  if (p.labelNames?.length || p.labelIds?.length) {
    const ids = (yield* findLabels(workspaceId, [...(p.labelNames ?? []), ...(p.labelIds ?? [])])).labels.map((l) => l.id);
    if (!ids.length) return null;
    // Written as the WHERE of emails_labelled, so the walk visits labelled mail only.
    add(`e.labels_json <> '[]'`);
    add('EXISTS (SELECT 1 FROM json_each(e.labels_json) l WHERE l.value IN (SELECT value FROM json_each(?)))', JSON.stringify(ids));
  }
  if (p.archived === true) add('e.archived_at IS NOT NULL');
  if (p.archived === false) {
    // The Inbox view. Written as the WHERE of emails_inbox_view (with the spam and trash terms below).
    add(`e.direction = 'in'`);
    add('e.archived_at IS NULL');
  }
  if (p.categories?.length) add(`e.category IN (${p.categories.map((c) => `'${c}'`).join(', ')})`);
  if (!p.includeSpam && !p.categories?.includes('spam')) add(`e.category IS DISTINCT FROM 'spam'`);
  const trash = trashTerm(p.trash);
  if (trash) add(trash);
  if (p.important !== undefined) add(`e.important = ${p.important ? 1 : 0}`);
  if (p.unread === true) {
    add(`e.direction = 'in'`);
    add('e.read_at IS NULL');
  }
  if (p.unread === false) add(`(e.read_at IS NOT NULL OR e.direction = 'out')`);
  if (p.after !== undefined) add('e.created_at >= ?', p.after);
  if (p.before !== undefined) add('e.created_at < ?', p.before);

  if (p.operators) {
    const conditions = yield* operatorConditions(workspaceId, p.operators);
    if (!conditions) return null;
    for (const c of conditions) add(c.sql, ...c.args);
  }

  for (const [role, value] of [...(p.from ?? []).map((v) => ['from', v] as const), ...(p.to ?? []).map((v) => ['to', v] as const)]) {
    if (role === 'from') add(`(${holds('e.from_address')} OR ${holds('e.from_name')})`, value, value);
    else add(`EXISTS (SELECT 1 FROM ${RECIPIENTS} WHERE ${holds("r.value ->> '$.address'")} OR ${holds("r.value ->> '$.name'")})`, value, value);
    const pattern = containing(value);
    const addresses = yield* candidateAddresses(workspaceId, value, pattern);
    if (addresses.length === 0) return null;
    // Every email carries a role token for its sender and for each recipient (search-index.ts), so an email
    // that matches carries one of these: they narrow the walk, the term above decides.
    if (addresses.length <= MAX_CANDIDATE_ADDRESSES) {
      match.push(`participants : (${addresses.map((a) => ftsPhrase(roleToken(role, a))).join(' OR ')})`);
      tsMatch.push(`(${addresses.map((a) => tsPhrase([roleToken(role, a)], { weight: WEIGHTS.participants })).join(' | ')})`);
    }
  }

  const bounds = yield* timeBounds(p);
  if (!bounds) return null;
  const { low, high } = bounds;
  const page = opts.rows ? [opts.rows, 0] : [p.limit + 1, p.offset];
  if (postgres) {
    if (low !== null) add('e.search_rowid >= ?', low);
    if (high !== null) add('e.search_rowid < ?', high);
    return postgresSearch(where, args, tsMatch, p.search?.tsquery.exclude ?? null, page);
  }
  // Terms with `-`: taken out of the walk's own MATCH when it has one, else looked up for each email.
  const exclude = p.search?.exclude ?? null;
  const excluding = (rowid: string) => `NOT EXISTS (SELECT 1 FROM email_search x WHERE x.email_search MATCH ? AND x.rowid = ${rowid})`;

  if (match.length || prefixes.length) {
    // The walk follows email_search when it has words to match, else email_prefixes; the prefixes are then
    // checked on each email by its rowid in email_prefixes (a seek in each prefix's doclist).
    const fts = match.length ? 'email_search' : 'email_prefixes';
    const all = match.map((m) => `(${m})`).join(' AND ');
    const conditions = [`${fts} MATCH ?`, ...(low !== null ? [`${fts}.rowid >= ?`] : []), ...(high !== null ? [`${fts}.rowid < ?`] : [])];
    const ftsArgs: unknown[] = [match.length ? (exclude ? `(${all}) NOT (${exclude})` : all) : prefixMatch(prefixes), ...(low !== null ? [low] : []), ...(high !== null ? [high] : [])];
    if (match.length && prefixes.length) {
      conditions.push('EXISTS (SELECT 1 FROM email_prefixes p WHERE p.email_prefixes MATCH ? AND p.rowid = email_search.rowid)');
      ftsArgs.push(prefixMatch(prefixes));
    }
    if (!match.length && exclude) {
      conditions.push(excluding('email_prefixes.rowid'));
      ftsArgs.push(exclude);
    }
    return {
      kind: 'search',
      // CROSS JOIN keeps the full-text table the outer loop: its rowid order is the page order.
      sql: `SELECT ${COLUMNS} FROM ${fts} CROSS JOIN emails e ON e.search_rowid = ${fts}.rowid
        WHERE ${conditions.join(' AND ')} AND ${where.join(' AND ')}
        ORDER BY ${fts}.rowid DESC LIMIT ? OFFSET ?`,
      args: [...ftsArgs, ...args, ...page],
    };
  }
  if (low !== null) add('e.search_rowid >= ?', low);
  if (high !== null) add('e.search_rowid < ?', high);
  if (exclude) add(excluding('e.search_rowid'), exclude);
  return {
    kind: 'index',
    sql: `SELECT ${COLUMNS} FROM emails e WHERE ${where.join(' AND ')} ORDER BY e.search_rowid DESC LIMIT ? OFFSET ?`,
    args: [...args, ...page],
  };
}

/**
 * The plan on PostgreSQL: the emails whose tsvector matches every tsquery of `match` and none of `exclude`,
 * newest first. The planner chooses between the GIN index's matches sorted and the workspace's newest emails
 * checked one by one (a common word), as its statistics say. A search_rowid is one email's, so the email's own
 * workspace (in `where`) is the only one checked: email_search's copy is not read.
 */
function postgresSearch(where: string[], args: unknown[], match: string[], exclude: string | null, page: number[]): ListPlan {
  const order = 'ORDER BY e.search_rowid DESC LIMIT ? OFFSET ?';
  if (match.length) {
    const query = [...match.map((m) => `(${m})`), ...(exclude ? [`!(${exclude})`] : [])].join(' & ');
    return {
      kind: 'search',
      sql: `SELECT ${COLUMNS} FROM email_search s JOIN emails e ON e.search_rowid = s.search_rowid
        WHERE s.document @@ CAST(? AS tsquery) AND ${where.join(' AND ')} ${order}`,
      args: [query, ...args, ...page],
      parallel: true,
    };
  }
  const excluding = exclude ? ' AND NOT EXISTS (SELECT 1 FROM email_search x WHERE x.search_rowid = e.search_rowid AND x.document @@ CAST(? AS tsquery))' : '';
  return { kind: 'index', sql: `SELECT ${COLUMNS} FROM emails e WHERE ${where.join(' AND ')}${excluding} ${order}`, args: [...args, ...(exclude ? [exclude] : []), ...page] };
}

/** The 3-letter prefixes as an email_prefixes expression: each a quoted word (they hold only token characters). */
const prefixMatch = (prefixes: string[]) => prefixes.map((x) => `"${x}"`).join(' AND ');

/**
 * The rowids that bound the walk for `after` and `before` (null: unbounded), or null when nothing can match.
 * search_clock holds, for each minute the newest creation time so far reached, the first rowid written then
 * (search-index.ts nextSearchRowid). Every email from `after` on was written once that newest time had reached
 * after's minute, so at or above that minute's first rowid; an email before `before` was written before the
 * newest time passed before + BEFORE_SLACK_MS (the clock steps back by less), so below that minute's.
 */
function* timeBounds(p: ListParams): Query<{ low: number | null; high: number | null } | null> {
  const firstFrom = (ms: number) => value<number>('SELECT first_rowid FROM search_clock WHERE minute >= ? ORDER BY minute LIMIT 1', Math.ceil(ms / 60_000));
  let low: number | null = null;
  if (p.after !== undefined) {
    const at = yield* firstFrom(Math.floor(p.after / 60_000) * 60_000);
    if (at === undefined) return null;
    low = at;
  }
  const high = p.before !== undefined ? ((yield* firstFrom(p.before + BEFORE_SLACK_MS)) ?? null) : null;
  return { low, high };
}

/**
 * The workspace's addresses whose address or a display name contains the value (the LIKE pattern says so
 * exactly; the trigram index finds the candidates when the value has the 3 characters a trigram needs), at
 * most one more than the cap.
 */
function* candidateAddresses(workspaceId: string, value: string, pattern: string): Query<string[]> {
  const matching = `(${like('c.address')} OR ${like('c.name')})`;
  // Under 3 characters there is no trigram to narrow by; PostgreSQL's trigram index (correspondents_trigrams)
  // answers the LIKE itself.
  if ([...value].length < 3 || (yield* dialect()) === 'postgres') {
    // The trigram index applies only to a known pattern.
    return yield* plannedForValues(column<string>(`SELECT DISTINCT c.address FROM correspondents c WHERE c.workspace_id = ? AND ${matching} LIMIT ?`, workspaceId, pattern, pattern, MAX_CANDIDATE_ADDRESSES + 1));
  }
  return yield* column<string>(
    `SELECT DISTINCT c.address FROM correspondents_search s JOIN correspondents c ON c.id = s.rowid WHERE correspondents_search MATCH ? AND c.workspace_id = ? AND ${matching} LIMIT ?`,
    ftsPhrase(value),
    workspaceId,
    pattern,
    pattern,
    MAX_CANDIDATE_ADDRESSES + 1,
  );
}

function presentSummary(row: SummaryRow, snippet: string, labels: Label[], delivery: DeliverySummary | null) {
  return {
    id: row.id,
    threadId: row.thread_id,
    direction: row.direction,
    status: row.status,
    /** When a scheduled send goes (and went); null for mail sent at once and received mail. */
    scheduledAt: isoOrNull(row.scheduled_at),
    from: { name: row.from_name || null, address: row.from_address },
    to: (JSON.parse(row.to_json) as Array<{ name?: string; address: string }>).map((m) => ({ name: m.name || null, address: m.address })),
    subject: row.subject,
    snippet,
    createdAt: iso(row.created_at),
    inboxId: row.inbox_id,
    domain: row.domain,
    category: row.category,
    important: row.important === 1,
    readAt: isoOrNull(row.read_at),
    archivedAt: isoOrNull(row.archived_at),
    trashedAt: isoOrNull(row.trashed_at),
    labels,
    attachmentCount: row.attachment_count,
    /** Sent mail: the state that asks most for attention, and how many recipients are in each. */
    delivery,
  };
}
