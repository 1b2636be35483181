// The database of a backup made on a box whose store is PostgreSQL (`mailwright backup` with database_url, and
// serve's scheduled backups there): a SQLite database like the one a box on SQLite keeps, made from PostgreSQL's
// rows, so the backup is the same file as on SQLite (backup.ts) and `mailwright restore` puts it into a data
// directory that runs on SQLite: the way a box moves back down (migrate --to moves it up, copy.ts).
// A new database migrated as a box's is, then every table both schemas have copied parents first (copy-plan.ts),
// all read in one REPEATABLE READ snapshot of PostgreSQL (serve's nodes go on writing) and written in one SQLite
// transaction; then each table counted and digested on both sides. What each engine keeps for itself is rebuilt,
// not copied: the full-text index (every email on the search backlog, which the box on SQLite indexes when it
// starts, emails/search-backlog.ts; the correspondents' trigram index rebuilt from their rows) and the nodes.
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isPacked } from '../mail/packing.ts';
import { BackupError, TEMP_SUFFIX } from './backup.ts';
import { columnList, copyPlan, readPages, sqliteDigest, TableDigest, type TablePlan } from './copy-plan.ts';
import { migrate } from './migrate.ts';
import { databasePath, openDatabase, type Db } from './open.ts';
import { openPool, reach, type PgClient, type PgPool } from './postgres.ts';

export interface TableCopied {
  table: string;
  rows: number;
}

/** What createBackup takes as its snapshot on a box on PostgreSQL: a pool of its own for the one transaction. */
export const postgresSnapshot = (url: string) => async (dest: string): Promise<void> => {
  const pool = openPool(url, { max: 1, applicationName: 'mailwright backup' });
  try {
    await snapshotPostgres(pool, dest);
  } finally {
    await pool.end().catch(() => {});
  }
};

/** Writes at `dest` a SQLite database holding the box kept in `pool`, checked table by table; returns each table's rows. */
export async function snapshotPostgres(pool: PgPool, dest: string): Promise<TableCopied[]> {
  // Built in a folder of its own (openDatabase makes the WAL files beside it), then only the file moved out.
  const dir = await mkdtemp(join(dirname(dest), `.${basename(dest)}-`));
  const building = `${dir}${TEMP_SUFFIX}`;
  await rename(dir, building);
  try {
    const db = openDatabase(building);
    let copied: TableCopied[];
    try {
      migrate(db);
      copied = await copyFromPostgres(db, pool);
      // One self-contained file, as a snapshot of a box on SQLite is (restore refuses a database in WAL mode).
      db.pragma('journal_mode = DELETE');
    } finally {
      db.close();
    }
    await rename(databasePath(building), dest);
    return copied;
  } finally {
    await rm(building, { recursive: true, force: true });
  }
}

/**
 * A value as SQLite's column takes it: a BYTEA body that SQLite declares TEXT is text unless packed (SQLite
 * tells a packed body by its type, BLOB; packing.ts), so the box on SQLite packs it later as it would have.
 */
const forSqlite = (v: unknown, sqliteText: boolean) => (sqliteText && Buffer.isBuffer(v) && !isPacked(v) ? v.toString('utf8') : v);

async function copyFromPostgres(db: Db, pool: PgPool): Promise<TableCopied[]> {
  const client = await reach(pool.connect());
  let broken: Error | undefined;
  const read = new Map<string, TableDigest>();
  let tables: TablePlan[];
  try {
    // The first statement takes the snapshot: every table below is read as of that one moment.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await sameSchema(db, client);
    tables = await copyPlan(db, client);
    db.exec('BEGIN');
    try {
      // Parents come first, but a row may name another of its own table: the keys are checked at COMMIT.
      db.pragma('defer_foreign_keys = ON');
      for (const plan of tables) {
        const insert = db.prepare(`INSERT INTO "${plan.table}" (${columnList(plan)}) VALUES (${plan.columns.map(() => '?').join(', ')})`);
        const text = plan.columns.map((c) => plan.sqliteText.has(c));
        const digest = new TableDigest(plan);
        await readPages(client, plan, (rows) => {
          for (const row of rows) {
            digest.add(row);
            insert.run(row.map((v, i) => forSqlite(v, text[i]!)));
          }
        });
        read.set(plan.table, digest);
      }
      db.prepare('INSERT INTO search_backlog (search_rowid, email_id) SELECT search_rowid, id FROM emails WHERE search_rowid IS NOT NULL').run();
      // An external-content FTS5 table: its index is made from the correspondents' rows.
      db.exec("INSERT INTO correspondents_search (correspondents_search) VALUES ('rebuild')");
      db.exec('COMMIT');
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
    await client.query('COMMIT');
  } catch (err) {
    broken = err as Error;
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release(broken);
  }
  const wrong = tables.filter((plan) => !sqliteDigest(db, plan).equals(read.get(plan.table)!)).map((p) => p.table);
  if (wrong.length) throw new BackupError(`the copy of ${wrong.join(', ')} does not match PostgreSQL's rows; no backup was written. Run the backup again, and report it if it fails the same way`);
  return tables.map((plan) => ({ table: plan.table, rows: read.get(plan.table)!.rows }));
}

/** Refuses a PostgreSQL database whose schema is at another version than this release's SQLite one. */
async function sameSchema(db: Db, client: PgClient): Promise<void> {
  const sqlite = Number(db.prepare('SELECT max(version) FROM schema_migrations').pluck().get());
  const postgres = Number((await client.query('SELECT max(version) AS v FROM schema_migrations')).rows[0].v);
  if (sqlite !== postgres) throw new BackupError(`the PostgreSQL database is at schema version ${postgres} and this release's at ${sqlite}: run the backup with the release that serves the box`);
}
