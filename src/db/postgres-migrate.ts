// The schema of a box kept in PostgreSQL (db/postgres/NNNN_name.sql): a new database gets the whole schema as
// of 0043 in one file, then every later migration, each in a transaction with its bookkeeping row. Nodes that
// start together take turns on an advisory lock, so one applies and the others find it done.
import { fileURLToPath } from 'node:url';
import { listMigrations } from './migrate.ts';
import type { PgPool } from './postgres.ts';

export const POSTGRES_MIGRATIONS = fileURLToPath(new URL('./postgres/', import.meta.url));
/** pg_advisory_lock's key for migrating: any number no other lock of the box uses. */
const MIGRATION_LOCK = 7_004_300;

/** Applies every pending migration; returns the versions it applied. `onApply` hears each one before it runs. */
export async function migratePostgres(pool: PgPool, now = Date.now(), onApply?: (m: { version: number; name: string }) => void): Promise<number[]> {
  const migrations = listMigrations(POSTGRES_MIGRATIONS);
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    const current = Number((await client.query('SELECT coalesce(max(version), 0) AS v FROM schema_migrations')).rows[0].v);
    const newest = migrations.at(-1)?.version ?? 0;
    if (current > newest) throw new Error(`the database is at schema version ${current}, newer than this release knows (${newest}); run the newer release`);
    const applied: number[] = [];
    for (const m of migrations.filter((m) => m.version > current)) {
      onApply?.(m);
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, now]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
      applied.push(m.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
}
