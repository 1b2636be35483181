// Copying a box from its data directory's SQLite database into an empty PostgreSQL database (`mailwright
// migrate --to`): every table both schemas have, parents before children, in batches, all read in one SQLite
// transaction so the copy is one moment of the box; then each table's rows counted and digested on both sides.
// What each engine keeps for itself is rebuilt, not copied: the full-text index (every email goes on the search
// backlog, indexed by emails/search-backlog.ts) and the nodes on record (cluster/nodes.ts).
import { BATCH_BYTES, BATCH_ROWS, columnList, copyPlan, forPostgres, readPages, sqliteDigest, TableDigest } from './copy-plan.ts';
import type { Db } from './open.ts';
import type { PgPool } from './postgres.ts';

export interface TableCopy {
  table: string;
  rows: number;
}

/**
 * Copies every table of `db` into the migrated, empty database `pool`, then sets its identity sequences past
 * the copied ids. `progress` hears each table as it is done. Throws when a table cannot be copied.
 */
export async function copyToPostgres(db: Db, pool: PgPool, progress: (t: TableCopy) => void = () => {}): Promise<TableCopy[]> {
  const tables = await copyPlan(db, pool);
  const done: TableCopy[] = [];
  const client = await pool.connect();
  // One moment of the box: every table read in one SQLite read transaction.
  db.prepare('BEGIN').run();
  try {
    await client.query('BEGIN');
    for (const plan of tables) {
      const { table, columns } = plan;
      const isBytea = columns.map((c) => plan.bytea.has(c));
      const read = db.prepare(`SELECT ${columnList(plan)} FROM "${table}"`).raw(true);
      let batch: unknown[][] = [];
      let bytes = 0;
      let rows = 0;
      const flush = async () => {
        if (!batch.length) return;
        const values = batch.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`).join(', ');
        await client.query(`INSERT INTO "${table}" (${columnList(plan)}) VALUES ${values}`, batch.flatMap((row) => row.map((v, i) => forPostgres(v, isBytea[i]!))));
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

/** Each copied table's rows counted and digested on both sides (PostgreSQL's read through a cursor, in one snapshot a table). */
export async function compareCopy(db: Db, pool: PgPool): Promise<TableCheck[]> {
  const checks: TableCheck[] = [];
  for (const plan of await copyPlan(db, pool)) {
    const here = sqliteDigest(db, plan);
    const there = new TableDigest(plan);
    const client = await pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await readPages(client, plan, (rows) => rows.forEach((row) => there.add(row)));
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    checks.push({ table: plan.table, sqliteRows: here.rows, postgresRows: there.rows, same: here.equals(there) });
  }
  return checks;
}
