// The operators of GET /emails' `query`, Gmail's where the box's model has the thing they name: from:, to:,
// label:, has:attachment, in:, is:, category:, after:/before: and newer_than:/older_than:. Pure: the terms
// (search-query.ts) -> the full-text part and QueryOperators, which list-operators.ts turns into SQL. An
// operator with a value it does not know (is:starred, has:drive) is words, as Gmail does; a date it cannot
// read is a 400 naming `query`.
import { validationError } from '../errors.ts';
import { NOTHING, termsOf, textSearch, type SearchQuery, type Term } from './search-query.ts';

/** What in:, is:, has: and category: test on each email; each may be negated. */
export type Flag = 'inbox' | 'sent' | 'archive' | 'spam' | 'trash' | 'scheduled' | 'unread' | 'important' | 'attachment' | 'primary' | 'updates';

export interface QueryOperators {
  /** from: and to: values, each a case-insensitive part of an address or display name, as the parameters. */
  from: string[];
  to: string[];
  notFrom: string[];
  notTo: string[];
  /** label: names (or ids): each must be on the email; notLabels: none may be. */
  labels: string[];
  notLabels: string[];
  flags: Array<{ flag: Flag; not: boolean }>;
  /** in:anywhere: spam and the Trash too. (in:spam and in:trash widen the list to what they name.) */
  anywhere: boolean;
  /** Creation time bounds, ms: after inclusive, before exclusive. */
  after?: number;
  before?: number;
}

export interface ParsedQuery {
  /** The full-text part: null when the query has none; one matching nothing when it has no word nor operator at all. */
  search: SearchQuery | null;
  operators: QueryOperators | null;
}

const IN: Record<string, Flag | 'anywhere'> = { inbox: 'inbox', sent: 'sent', archive: 'archive', spam: 'spam', trash: 'trash', scheduled: 'scheduled', anywhere: 'anywhere' };
const IS: Record<string, { flag: Flag; not: boolean }> = { unread: { flag: 'unread', not: false }, read: { flag: 'unread', not: true }, important: { flag: 'important', not: false } };
const HAS: Record<string, Flag> = { attachment: 'attachment' };
const CATEGORY: Record<string, Flag> = { primary: 'primary', updates: 'updates', spam: 'spam' };
const DAY_MS = 86_400_000;

/** A query as typed -> its full-text part and its operators; `now` is what newer_than: counts back from. */
export function parseQuery(input: string, now: number): ParsedQuery {
  const terms = termsOf(input);
  // No word and no operator (only punctuation, say): as before operators, it matches nothing.
  if (terms.length === 0) return { search: NOTHING, operators: null };
  const ops: QueryOperators = { from: [], to: [], notFrom: [], notTo: [], labels: [], notLabels: [], flags: [], anywhere: false };
  let used = false;
  const words: Term[] = [];
  for (const term of terms) {
    if (term.op === null || term.op === 'subject' || term.op === 'filename') {
      words.push(term);
      continue;
    }
    if (operator(term, ops, now)) used = true;
    // Gmail's way with an operator it does not know: the words as typed.
    else words.push({ ...term, op: null, text: `${term.op}:${term.text}` });
  }
  return { search: textSearch(words), operators: used ? ops : null };
}

/** Adds one operator term to `ops`; false when its value is not one the operator knows. */
function operator(t: Term, ops: QueryOperators, now: number): boolean {
  const value = t.text.trim();
  const key = value.toLowerCase();
  const flag = (f: Flag | undefined, not = t.not) => (f ? (ops.flags.push({ flag: f, not }), true) : false);
  switch (t.op) {
    case 'from':
    case 'to': {
      const list = t.op === 'from' ? (t.not ? ops.notFrom : ops.from) : t.not ? ops.notTo : ops.to;
      list.push(value);
      return true;
    }
    case 'label':
      (t.not ? ops.notLabels : ops.labels).push(value);
      return true;
    case 'in': {
      const where = Object.hasOwn(IN, key) ? IN[key] : undefined;
      if (where !== 'anywhere') return flag(where);
      // -in:anywhere leaves out nothing the defaults do not.
      if (!t.not) ops.anywhere = true;
      return true;
    }
    case 'is':
      return Object.hasOwn(IS, key) ? flag(IS[key].flag, IS[key].not !== t.not) : false;
    case 'has':
      return flag(Object.hasOwn(HAS, key) ? HAS[key] : undefined);
    case 'category':
      return flag(Object.hasOwn(CATEGORY, key) ? CATEGORY[key] : undefined);
    case 'after':
    case 'newer':
    case 'before':
    case 'older':
      bound(ops, t.op === 'after' || t.op === 'newer' ? !t.not : t.not, dateOf(t.op, value));
      return true;
    case 'newer_than':
    case 'older_than':
      bound(ops, t.op === 'newer_than' ? !t.not : t.not, ago(t.op, value, now));
      return true;
    default:
      return false;
  }
}

/** Narrows the bounds: `after` (inclusive) or else `before` (exclusive). `-after:` is `before:`, and so on. */
function bound(ops: QueryOperators, after: boolean, ms: number) {
  if (after) ops.after = Math.max(ops.after ?? -Infinity, ms);
  else ops.before = Math.min(ops.before ?? Infinity, ms);
}

/** YYYY-MM-DD or YYYY/MM/DD (Gmail's; month and day may be one digit): that day's midnight, UTC. */
function dateOf(op: string, value: string): number {
  const m = /^(\d{4})[-/](\d{1,2})[-/](\d{1,2})$/.exec(value);
  // setUTCFullYear, not Date.UTC: that reads the years 0-99 as 1900-1999.
  const d = new Date(0);
  if (m) d.setUTCFullYear(+m[1], +m[2] - 1, +m[3]);
  if (!m || d.getUTCFullYear() !== +m[1] || d.getUTCMonth() !== +m[2] - 1 || d.getUTCDate() !== +m[3]) {
    throw validationError('query', `${op}: must be a date such as 2026-11-01 or 2026/11/01; got "${value.slice(0, 40)}"`);
  }
  return d.getTime();
}

/** Gmail's relative ages: N days (d), months (m) or years (y) before now. */
function ago(op: string, value: string, now: number): number {
  const m = /^(\d{1,4})([dmy])$/i.exec(value);
  if (!m) throw validationError('query', `${op}: must be a number of days, months or years, such as 7d, 2m or 1y; got "${value.slice(0, 40)}"`);
  const n = +m[1];
  const unit = m[2].toLowerCase();
  if (unit === 'd') return now - n * DAY_MS;
  const d = new Date(now);
  if (unit === 'm') d.setUTCMonth(d.getUTCMonth() - n);
  else d.setUTCFullYear(d.getUTCFullYear() - n);
  return d.getTime();
}
