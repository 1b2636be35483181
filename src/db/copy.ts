// Copying a box from its data directory's SQLite database into an empty PostgreSQL database (`mailwright
// migrate --to`): every table both schemas have, parents before children, in batches, all read in one SQLite
// transaction so the copy is one moment of the box; then each table's rows counted and digested on both sides.
// What each engine keeps for itself is rebuilt, not copied: the full-text index (every email goes on the search
// backlog, indexed by emails/search-backlog.ts) and the nodes on record (cluster/nodes.ts).
import { createHash } from 'node:crypto';
import type { Db } from './open.ts';
import type { PgPool } from './postgres.ts';

/** Tables not copied: the schema's bookkeeping, engine-only tables, and what is rebuilt. */
const NOT_COPIED = new Set(['schema_migrations', 'nodes', 'rate_buckets', 'email_search', 'search_backlog']);
/** Rows per INSERT, and the bytes after which a batch goes early (mail bodies). */
const BATCH_ROWS = 500;
const BATCH_BYTES = 8 * 1024 * 1024;

export interface TableCopy {
  table: string;
  rows: number;
}

interface Target {
  columns: string[];
  bytea: Set<string>;
}

/** The tables to copy, parents before children, and each one's columns as PostgreSQL has them. */
async function plan(db: Db, pool: PgPool): Promise<Array<{ table: string } & Target>> {
  const sqliteTables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[]);
  const columns = (await pool.query("SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position")).rows as Array<{ table_name: string; column_name: string; data_type: string }>;
  const targets = new Map<string, Target>();
  for (const c of columns) {
    if (!sqliteTables.has(c.table_name) || NOT_COPIED.has(c.table_name)) continue;
    const t = targets.get(c.table_name) ?? { columns: [], bytea: new Set() };
    t.columns.push(c.column_name);
    if (c.data_type === 'bytea') t.bytea.add(c.column_name);
    targets.set(c.table_name, t);
  }
  for (const [table, t] of targets) {
    const missing = (db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[]).filter((c) => !t.columns.includes(c));
    if (missing.length) throw new Error(`PostgreSQL's ${table} has no column ${missing.join(', ')}: this release's two schemas differ; nothing can be copied safely`);
  }
  const parents = (await pool.query("SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace")).rows as Array<{ child: string; parent: string }>;
  const ordered: string[] = [];
  const visit = (table: string, path: string[]) => {
    if (ordered.includes(table) || path.includes(table)) return;
    for (const p of parents) if (p.child === table && p.parent !== table && targets.has(p.parent)) visit(p.parent, [...path, table]);
    ordered.push(table);
  };
  for (const table of [...targets.keys()].sort()) visit(table, []);
  return ordered.map((table) => ({ table, ...targets.get(table)! }));
}

/** A value as PostgreSQL takes it: text kept in a BYTEA column (a mail body) as its UTF-8 bytes. */
const forTarget = (v: unknown, bytea: boolean) => (bytea && typeof v === 'string' ? Buffer.from(v, 'utf8') : v);

/** A row's digest input: its values in order, bytes as hex (text in a BYTEA column as its UTF-8 bytes). */
function rowDigest(row: unknown[], bytea: boolean[]): Buffer {
  const text = JSON.stringify(row.map((v, i) => {
    const value = forTarget(v, bytea[i]!);
    return Buffer.isBuffer(value) ? `x${value.toString('hex')}` : typeof value === 'bigint' ? Number(value) : value;
  }));
  return createHash('sha256').update(text).digest();
}

/** An order-free digest of a table: the XOR of its rows' digests (rows are unique). */
class TableDigest {
  readonly sum = Buffer.alloc(32);
  rows = 0;
  add(row: unknown[], bytea: boolean[]): void {
    const d = rowDigest(row, bytea);
    for (let i = 0; i < 32; i++) this.sum[i]! ^= d[i]!;
    this.rows++;
  }
}

/**
 * Copies every table of `db` into the migrated, empty database `pool`, then sets its identity sequences past
 * the copied ids. `progress` hears each table as it is done. Throws when a table cannot be copied.
 */
export async function copyToPostgres(db: Db, pool: PgPool, progress: (t: TableCopy) => void = () => {}): Promise<TableCopy[]> {
  const tables = await plan(db, pool);
  const done: TableCopy[] = [];
  const client = await pool.connect();
  // One moment of the box: every table read in one SQLite read transaction.
  db.prepare('BEGIN').run();
  try {
    await client.query('BEGIN');
    for (const { table, columns, bytea } of tables) {
      const isBytea = columns.map((c) => bytea.has(c));
      const read = db.prepare(`SELECT ${columns.map((c) => `"${c}"`).join(', ')} FROM "${table}"`).raw(true);
      let batch: unknown[][] = [];
      let bytes = 0;
      let rows = 0;
      const flush = async () => {
        if (!batch.length) return;
        const values = batch.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`).join(', ');
        await client.query(`INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES ${values}`, batch.flatMap((row) => row.map((v, i) => forTarget(v, isBytea[i]!))));
        rows += batch.length;
        batch = [];
        bytes = 0;
      };
      for (const row of read.iterate() as Iterable<unknown[]>) {
        batch.push(row);
        for (const v of row) bytes += Buffer.isBuffer(v) ? v.length : typeof v === 'string' ? v.length : 8;
        if (batch.length >= BATCH_ROWS || bytes >= BATCH_BYTES) await flush();
      }
      await flush();
      done.push({ table, rows });
      progress({ table, rows });
    }
    // Identity columns handed out ids the copy now holds: their sequences continue after the largest.
    const identities = (await client.query("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'")).rows as Array<{ table_name: string; column_name: string }>;
    for (const { table_name: t, column_name: c } of identities) {
      await client.query(`SELECT setval(pg_get_serial_sequence($1, $2), max_id) FROM (SELECT max("${c}") AS max_id FROM "${t}") m WHERE max_id IS NOT NULL`, [t, c]);
    }
    // Every email to the full-text index: the box indexes the backlog (the command does it before it ends).
    await client.query('INSERT INTO search_backlog (search_rowid, email_id) SELECT search_rowid, id FROM emails WHERE search_rowid IS NOT NULL');
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    db.prepare('COMMIT').run();
    client.release();
  }
  return done;
}

export interface TableCheck {
  table: string;
  sqliteRows: number;
  postgresRows: number;
  same: boolean;
}

/** Each copied table's rows counted and digested on both sides (PostgreSQL's read in pages of its primary key). */
export async function compareCopy(db: Db, pool: PgPool): Promise<TableCheck[]> {
  const checks: TableCheck[] = [];
  for (const { table, columns, bytea } of await plan(db, pool)) {
    const isBytea = columns.map((c) => bytea.has(c));
    const list = columns.map((c) => `"${c}"`).join(', ');
    const here = new TableDigest();
    for (const row of db.prepare(`SELECT ${list} FROM "${table}"`).raw(true).iterate() as Iterable<unknown[]>) here.add(row, isBytea);
    const there = new TableDigest();
    const client = await pool.connect();
    try {
      // A cursor reads the table a page at a time, whatever its key, in one snapshot.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await client.query(`DECLARE rows NO SCROLL CURSOR FOR SELECT ${list} FROM "${table}"`);
      for (;;) {
        const page = await client.query({ text: `FETCH ${BATCH_ROWS} FROM rows`, rowMode: 'array' });
        for (const row of page.rows as unknown[][]) there.add(row, isBytea);
        if (page.rows.length < BATCH_ROWS) break;
      }
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    checks.push({ table, sqliteRows: here.rows, postgresRows: there.rows, same: here.rows === there.rows && here.sum.equals(there.sum) });
  }
  return checks;
}
