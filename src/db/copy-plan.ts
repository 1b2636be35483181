// What moving a box between SQLite and PostgreSQL copies, in either direction (`mailwright migrate --to` up,
// copy.ts; `mailwright backup` of a box on PostgreSQL down, backup-postgres.ts): the tables both schemas have,
// parents before children, each with its columns; and how a table's rows are counted and digested on either
// side, so that a copy is checked the same way whichever way it went.
import { createHash } from 'node:crypto';
import type { Db } from './open.ts';
import type { PgClient, PgPool } from './postgres.ts';

/** Tables not copied: the schema's bookkeeping, engine-only tables, and what is rebuilt. */
export const NOT_COPIED = new Set(['schema_migrations', 'nodes', 'rate_buckets', 'email_search', 'search_backlog']);
/** Rows per INSERT or FETCH, and the bytes after which a batch goes early (mail bodies). */
export const BATCH_ROWS = 500;
export const BATCH_BYTES = 8 * 1024 * 1024;
/** Rows per FETCH of a table with BYTEA columns: an attachment or a message may be tens of MB. */
const BYTES_PAGE_ROWS = 32;

export interface TablePlan {
  table: string;
  /** The columns, in PostgreSQL's order. */
  columns: string[];
  /** The columns PostgreSQL keeps as BYTEA. */
  bytea: Set<string>;
  /** The BYTEA columns SQLite declares TEXT (a mail body: text as written, a Buffer once packed). */
  sqliteText: Set<string>;
}

/** The tables to copy, parents before children, and each one's columns; throws when the two schemas differ. */
export async function copyPlan(db: Db, pg: PgPool | PgClient): Promise<TablePlan[]> {
  const sqliteTables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[]);
  const columns = (await pg.query("SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position")).rows as Array<{ table_name: string; column_name: string; data_type: string }>;
  const targets = new Map<string, TablePlan>();
  for (const c of columns) {
    if (!sqliteTables.has(c.table_name) || NOT_COPIED.has(c.table_name)) continue;
    const t = targets.get(c.table_name) ?? { table: c.table_name, columns: [], bytea: new Set(), sqliteText: new Set() };
    t.columns.push(c.column_name);
    if (c.data_type === 'bytea') t.bytea.add(c.column_name);
    targets.set(c.table_name, t);
  }
  for (const [table, t] of targets) {
    const declared = db.prepare('SELECT name, type FROM pragma_table_info(?)').all(table) as Array<{ name: string; type: string }>;
    const missing = declared.filter((c) => !t.columns.includes(c.name)).map((c) => `PostgreSQL's ${table} has no column ${c.name}`);
    const extra = t.columns.filter((c) => !declared.some((d) => d.name === c)).map((c) => `SQLite's ${table} has no column ${c}`);
    // Either way a column would be lost or a statement fail half-way: nothing is copied.
    if (missing.length || extra.length) throw new Error(`${[...missing, ...extra].join('; ')}: this release's two schemas differ; nothing can be copied safely`);
    for (const c of declared) if (t.bytea.has(c.name) && c.type.toUpperCase() === 'TEXT') t.sqliteText.add(c.name);
  }
  const parents = (await pg.query("SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace")).rows as Array<{ child: string; parent: string }>;
  const ordered: string[] = [];
  const visit = (table: string, path: string[]) => {
    if (ordered.includes(table) || path.includes(table)) return;
    for (const p of parents) if (p.child === table && p.parent !== table && targets.has(p.parent)) visit(p.parent, [...path, table]);
    ordered.push(table);
  };
  for (const table of [...targets.keys()].sort()) visit(table, []);
  return ordered.map((table) => targets.get(table)!);
}

/** The quoted column list of a plan, for a SELECT or an INSERT. */
export const columnList = (plan: Pick<TablePlan, 'columns'>) => plan.columns.map((c) => `"${c}"`).join(', ');

/** A value as PostgreSQL takes it: text kept in a BYTEA column (a mail body) as its UTF-8 bytes. */
export const forPostgres = (v: unknown, bytea: boolean) => (bytea && typeof v === 'string' ? Buffer.from(v, 'utf8') : v);

/** A row's digest input: its values in order, bytes as hex (text in a BYTEA column as its UTF-8 bytes). */
function rowDigest(row: unknown[], bytea: boolean[]): Buffer {
  const text = JSON.stringify(row.map((v, i) => {
    const value = forPostgres(v, bytea[i]!);
    return Buffer.isBuffer(value) ? `x${value.toString('hex')}` : typeof value === 'bigint' ? Number(value) : value;
  }));
  return createHash('sha256').update(text).digest();
}

/** An order-free digest of a table: the XOR of its rows' digests (rows are unique). */
export class TableDigest {
  readonly sum = Buffer.alloc(32);
  rows = 0;
  private readonly bytea: boolean[];
  constructor(plan: Pick<TablePlan, 'columns' | 'bytea'>) {
    this.bytea = plan.columns.map((c) => plan.bytea.has(c));
  }
  add(row: unknown[]): void {
    const d = rowDigest(row, this.bytea);
    for (let i = 0; i < 32; i++) this.sum[i]! ^= d[i]!;
    this.rows++;
  }
  equals(other: TableDigest): boolean {
    return this.rows === other.rows && this.sum.equals(other.sum);
  }
}

/** A table's digest as SQLite holds it. */
export function sqliteDigest(db: Db, plan: TablePlan): TableDigest {
  const digest = new TableDigest(plan);
  for (const row of db.prepare(`SELECT ${columnList(plan)} FROM "${plan.table}"`).raw(true).iterate() as Iterable<unknown[]>) digest.add(row);
  return digest;
}

/**
 * Reads a PostgreSQL table a page at a time through a cursor, whatever its key, in the transaction `client` is
 * in (a cursor lives only inside one); `page` hears each page's rows as arrays, in the plan's column order.
 */
export async function readPages(client: PgClient, plan: TablePlan, page: (rows: unknown[][]) => void | Promise<void>): Promise<void> {
  const rows = plan.bytea.size ? BYTES_PAGE_ROWS : BATCH_ROWS;
  await client.query(`DECLARE copy_rows NO SCROLL CURSOR FOR SELECT ${columnList(plan)} FROM "${plan.table}"`);
  for (;;) {
    const fetched = await client.query({ text: `FETCH ${rows} FROM copy_rows`, rowMode: 'array' });
    if (fetched.rows.length) await page(fetched.rows as unknown[][]);
    if (fetched.rows.length < rows) break;
  }
  await client.query('CLOSE copy_rows');
}
