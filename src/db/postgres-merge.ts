// One-row INSERTs of a group commit merged into multi-row statements, on PostgreSQL. Each statement costs the
// server and node-postgres a fixed ~60-100 µs of CPU whatever it carries (a one-row INSERT of a delivery: ~120 µs
// of the machine; the same row as one of eight in one INSERT: ~20 µs), and a group commit repeats the same
// INSERTs for every write it carries (an email, its contents, its search row, its deliveries, its events).
// So a plain `INSERT INTO t (...) VALUES (...)` whose answer nobody waits for (a `change`) is held back and
// written later, with the others of its text, as one statement. Moving a row later is safe while nothing in
// between could see it: a statement is written only after the held rows of every table it names, or related to
// one it names by a foreign key (a delete's cascade, a child's check of its parent), and at the latest before
// COMMIT. The schema's tables and keys are read from the catalog once (migrations run before the first commit), so
// a new table is covered without a list here. Tables with row triggers are never merged, and a statement naming one
// writes every held row first (a trigger may read what the rule above does not see); nor is anything held inside a
// savepoint. Counter upserts (`ON CONFLICT (k) DO UPDATE SET n = t.n + excluded.n`, or `= excluded.x`) are merged
// too, a key's rows folded into one first, since PostgreSQL changes a row only once a statement.
import type pg from 'pg';

/** A merged statement's `of` when its rows came from several queries: which failed is not known. */
export const MERGED = -2;

/** Values, and bytes of them, held back at most before they are written (PostgreSQL takes 65,535 a statement). */
const MAX_HELD_VALUES = 4_096;
const MAX_HELD_BYTES = 4 * 1024 * 1024;

/** A statement to write: its numbered text, its values, and the query it belongs to (MERGED: several). */
export interface ToWrite {
  sql: string;
  values: unknown[];
  of: number;
}

interface Group {
  shape: OneRowInsert;
  sql: string;
  rows: unknown[][];
  ofs: number[];
  /** An upsert's rows by key. */
  keys: Map<string, number>;
}

/** The one-row INSERTs a transaction holds back, by statement text, in the order each text was first held. */
export class HeldInserts {
  private groups = new Map<string, Group>();
  private values = 0;
  private bytes = 0;
  /** Savepoints open in the transaction. */
  private savepoints = 0;
  /** The tables held rows could be seen through (their tables' related ones). */
  private watched = new Set<string>();

  constructor(private readonly schema: SchemaMap) {}

  /** Holds the statement `sql` (numbered) with `values` if it is a one-row INSERT that may be merged; else false. */
  hold(sql: string, values: unknown[], of: number): boolean {
    const shape = this.savepoints ? null : oneRowInsert(sql, this.schema);
    if (!shape) return false;
    let g = this.groups.get(sql);
    if (!g) {
      this.groups.set(sql, (g = { shape, sql, rows: [], ofs: [], keys: new Map() }));
      for (const t of this.schema.related.get(shape.table)!) this.watched.add(t);
    }
    const combine = shape.combine;
    const key = combine && JSON.stringify(combine.key.map((i) => values[i]));
    const same = key === undefined ? undefined : g.keys.get(key);
    if (same !== undefined) {
      // PostgreSQL updates a row once a statement: the later upsert of a key is folded into the earlier.
      const row = g.rows[same]!;
      for (const i of combine!.last) row[i] = values[i];
      for (const i of combine!.add) row[i] = Number(row[i]) + Number(values[i]);
      if (g.ofs[same] !== of) g.ofs[same] = MERGED;
      return true;
    }
    if (key !== undefined) g.keys.set(key, g.rows.length);
    g.rows.push(key === undefined ? values : [...values]); // a copy, to fold into
    g.ofs.push(of);
    this.values += values.length;
    for (const v of values) this.bytes += typeof v === 'string' || Buffer.isBuffer(v) ? v.length : 8;
    return true;
  }

  /** Whether as much is held as one statement should carry. */
  full(): boolean {
    return this.values >= MAX_HELD_VALUES || this.bytes >= MAX_HELD_BYTES;
  }

  /**
   * Takes out what must be written before statements with these texts (`all`: everything): the groups whose rows
   * they could see, with the held groups of those rows' parents; as statements, parents' tables first. Inside a
   * savepoint nothing is held: a statement that fails there is rolled back to it, and a row held across that
   * line would be written after the failure or undone with what came after the savepoint.
   */
  takeSeenBy(texts: string[], all = false): ToWrite[] {
    let everything = all;
    const named: string[] = [];
    for (const text of texts) {
      const r = reachOf(text, this.schema);
      this.savepoints = Math.max(0, this.savepoints + r.savepoints);
      everything ||= r.all;
      named.push(...r.named);
    }
    // Every statement passes here: most see nothing held.
    if (!this.groups.size || (!everything && !named.some((t) => this.watched.has(t)))) return [];
    let taken = [...this.groups.values()];
    if (!everything) {
      const seen = taken.filter((g) => named.some((t) => this.schema.related.get(g.shape.table)!.has(t)));
      const needed = new Set(seen.flatMap((g) => [g.shape.table, ...this.schema.ancestors.get(g.shape.table)!]));
      taken = taken.filter((g) => needed.has(g.shape.table));
    }
    for (const g of taken) this.groups.delete(g.sql);
    this.watched = new Set([...this.groups.values()].flatMap((g) => [...this.schema.related.get(g.shape.table)!]));
    if (!this.groups.size) this.values = this.bytes = 0;
    return taken
      .sort((a, b) => this.schema.depth.get(a.shape.table)! - this.schema.depth.get(b.shape.table)!)
      .map((g) =>
        g.rows.length === 1
          ? { sql: g.sql, values: g.rows[0]!, of: g.ofs[0]! }
          : { sql: mergedText(g.shape, g.rows.length, g.rows[0]!.length), values: g.rows.flat(), of: g.ofs.every((o) => o === g.ofs[0]) ? g.ofs[0]! : MERGED },
      );
  }
}

export interface SchemaMap {
  /** Every table (and view) of the box's schema. */
  tables: Set<string>;
  /** Per table, the tables a held row of it could be seen through: itself, its ancestors and descendants by key. */
  related: Map<string, Set<string>>;
  /** Per table, the tables its rows reference, and theirs, and so on. */
  ancestors: Map<string, Set<string>>;
  /** Per table, how many foreign-key steps below a table without parents: parents' rows are written first. */
  depth: Map<string, number>;
  /** Tables whose INSERTs may be merged: those without row triggers. */
  mergeable: Set<string>;
  /** Tables with row triggers, which may touch any table: a statement on one writes every held row first. */
  triggered: Set<string>;
}

const inSchema = 'relnamespace = current_schema()::regnamespace';

/** The box's schema as the merge needs it, read from PostgreSQL's catalog. */
export async function readSchemaMap(client: pg.ClientBase): Promise<SchemaMap> {
  const [tables, keys, triggered] = await Promise.all([
    client.query<{ name: string }>(`SELECT relname AS name FROM pg_class WHERE ${inSchema} AND relkind IN ('r', 'p', 'v', 'm', 'f')`),
    client.query<{ child: string; parent: string }>(
      `SELECT c.relname AS child, p.relname AS parent FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
       WHERE k.contype = 'f' AND c.${inSchema}`,
    ),
    client.query<{ name: string }>(`SELECT DISTINCT c.relname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal AND (t.tgtype & 1) = 1 AND c.${inSchema}`),
  ]);
  return schemaMap(
    tables.rows.map((r) => r.name),
    keys.rows,
    triggered.rows.map((r) => r.name),
  );
}

/** The map for tables, their foreign keys (child -> parent) and the tables with row triggers. */
export function schemaMap(tables: string[], keys: Array<{ child: string; parent: string }>, triggered: string[]): SchemaMap {
  const parents = new Map<string, Set<string>>();
  const children = new Map<string, Set<string>>();
  const add = (m: Map<string, Set<string>>, k: string, v: string) => (m.get(k) ?? m.set(k, new Set()).get(k)!).add(v);
  for (const { child, parent } of keys) if (child !== parent) add(parents, child, parent), add(children, parent, child);
  const reach = (from: string, edges: Map<string, Set<string>>, into: Set<string>) => {
    for (const next of edges.get(from) ?? []) if (!into.has(next)) into.add(next), reach(next, edges, into);
  };
  const related = new Map<string, Set<string>>();
  const ancestors = new Map<string, Set<string>>();
  const depth = new Map<string, number>();
  const depthOf = (t: string, seen = new Set<string>()): number => {
    if (depth.has(t)) return depth.get(t)!;
    seen.add(t);
    const d = Math.max(-1, ...[...(parents.get(t) ?? [])].filter((p) => !seen.has(p)).map((p) => depthOf(p, seen))) + 1;
    depth.set(t, d);
    return d;
  };
  for (const t of tables) {
    const up = new Set<string>();
    reach(t, parents, up);
    ancestors.set(t, up);
    const r = new Set([t, ...up]);
    reach(t, children, r);
    related.set(t, r);
    depthOf(t);
  }
  const mergeable = new Set(tables.filter((t) => !triggered.includes(t)));
  return { tables: new Set(tables), related, ancestors, depth, mergeable, triggered: new Set(triggered) };
}

/**
 * A one-row INSERT: its table, the text up to its VALUES, its row's group of values (numbered $1..), and what
 * follows the row: nothing, ON CONFLICT DO NOTHING, or an upsert whose rows for one key can be combined first
 * (`combine`: the values of the key, those the later row replaces, those it adds to; each a plain placeholder).
 */
export interface OneRowInsert {
  table: string;
  head: string;
  group: string;
  tail: string;
  combine?: { key: number[]; last: number[]; add: number[] };
}

const shapes = new Map<string, OneRowInsert | null>();

/** `sql` (numbered) as a one-row INSERT that may be merged, or null: anything else, or a row that reads a table. */
export function oneRowInsert(sql: string, schema: SchemaMap): OneRowInsert | null {
  let shape = shapes.get(sql);
  if (shape === undefined) {
    shape = parseInsert(sql);
    shapes.set(sql, shape);
  }
  return shape && schema.mergeable.has(shape.table) ? shape : null;
}

function parseInsert(sql: string): OneRowInsert | null {
  const m = /^\s*INSERT\s+INTO\s+([a-z_][a-z0-9_]*)\s*\(([^()]*)\)\s*VALUES\s*\(/i.exec(sql);
  if (!m) return null;
  const open = m[0].length - 1;
  const close = closingParen(sql, open);
  if (close < 0) return null;
  const group = sql.slice(open, close + 1);
  // The row reads no table and uses no dollar quote; each placeholder appears once.
  const placeholders = group.match(/\$\d+/g) ?? [];
  if (/\bselect\b|\$\$|\$[a-z_]/i.test(group) || new Set(placeholders).size !== placeholders.length) return null;
  const shape: OneRowInsert = { table: m[1]!.toLowerCase(), head: sql.slice(0, open), group, tail: sql.slice(close + 1) };
  const tail = shape.tail.trim();
  if (!tail || /^ON\s+CONFLICT\s*(\([^()]*\))?\s*DO\s+NOTHING$/i.test(tail)) return shape;
  const upsert = /^ON\s+CONFLICT\s*\(([^()]*)\)\s*DO\s+UPDATE\s+SET\s+([\s\S]+)$/i.exec(tail);
  if (!upsert) return null;
  // Which placeholder fills each column.
  const columns = m[2]!.split(',').map((c) => c.trim().toLowerCase());
  const items = splitTopLevel(group.slice(1, -1));
  if (items.length !== columns.length) return null;
  const param = (column: string) => {
    const item = items[columns.indexOf(column)];
    return item && /^\$\d+$/.test(item) ? Number(item.slice(1)) - 1 : -1;
  };
  const combine = { key: upsert[1]!.split(',').map((c) => param(c.trim().toLowerCase())), last: [] as number[], add: [] as number[] };
  for (const set of splitTopLevel(upsert[2]!)) {
    const [, column, expr] = /^([a-z_][a-z0-9_]*)\s*=\s*(.+)$/is.exec(set) ?? [];
    if (!column) return null;
    const c = column.toLowerCase();
    const e = expr!.replace(/\s+/g, ' ').toLowerCase();
    if (e === `excluded.${c}`) combine.last.push(param(c));
    else if (e === `${shape.table}.${c} + excluded.${c}`) combine.add.push(param(c));
    else return null;
  }
  if ([...combine.key, ...combine.last, ...combine.add].some((i) => i < 0)) return null;
  return { ...shape, combine };
}

/** Where the parenthesis opening at `open` closes (quoted strings skipped), or -1. */
function closingParen(sql: string, open: number): number {
  let level = 0;
  for (let i = open; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      if (end < 0) return -1;
      i = end; // a doubled quote reopens at once: the scan goes on inside the literal, as it should
    } else if (c === '(') level++;
    else if (c === ')' && --level === 0) return i;
  }
  return -1;
}

/** `text` split at its commas outside parentheses and quotes, each part trimmed. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') i = closingParen(text, i);
    else if (c === "'" || c === '"') i = text.indexOf(c, i + 1);
    else if (c === ',') parts.push(text.slice(start, i).trim()), (start = i + 1);
    if (i < 0) return [];
  }
  parts.push(text.slice(start).trim());
  return parts;
}

const mergedTexts = new Map<string, string>();

/** The statement inserting `rows` rows of `shape`, each with `width` values. */
export function mergedText(shape: OneRowInsert, rows: number, width: number): string {
  const key = `${rows}:${width}:${shape.head}${shape.group}${shape.tail}`;
  let text = mergedTexts.get(key);
  if (!text) {
    const groups = Array.from({ length: rows }, (_, r) => shape.group.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + r * width}`));
    text = `${shape.head}${groups.join(', ')}${shape.tail}`;
    mergedTexts.set(key, text);
  }
  return text;
}

/** What a statement's text means to held rows: savepoints it opens (less those it releases), whether every held row goes before it, the tables it names. */
interface Reach {
  savepoints: number;
  all: boolean;
  named: string[];
}

const reaches = new WeakMap<SchemaMap, Map<string, Reach>>();

function reachOf(text: string, schema: SchemaMap): Reach {
  let known = reaches.get(schema);
  if (!known) reaches.set(schema, (known = new Map()));
  let r = known.get(text);
  if (!r) {
    // Any word that is a table's name: a false match only writes held rows sooner.
    const named = [...new Set(text.toLowerCase().match(/[a-z_][a-z0-9_]*/g) ?? [])].filter((w) => schema.tables.has(w));
    const opened = (text.match(/(^|;)\s*SAVEPOINT\b/gi)?.length ?? 0) - (text.match(/(^|;)\s*RELEASE\b/gi)?.length ?? 0);
    // A savepoint's line, or a table with a row trigger (which may touch any table): everything held goes first.
    const all = /^\s*(SAVEPOINT|RELEASE|ROLLBACK)\b/i.test(text) || named.some((t) => schema.triggered.has(t));
    known.set(text, (r = { savepoints: opened, all, named }));
  }
  return r;
}
