// `mailwright migrate --to postgres://...`: moves a box from its data directory's SQLite database into an empty
// PostgreSQL database (db/copy.ts), checks the copy table by table, indexes the mail for search, and says what
// to change. The SQLite database is left as it was: until the box starts on PostgreSQL, it is the way back.
import { parseArgs } from 'node:util';
import { ConfigError, type Config } from '../config/config.ts';
import { systemClock } from '../clock.ts';
import { compareCopy, copyToPostgres } from '../db/copy.ts';
import { servingProcesses } from '../db/serving.ts';
import { openPool } from '../db/postgres.ts';
import { migratePostgres } from '../db/postgres-migrate.ts';
import { postgresStore } from '../db/store.ts';
import { indexBacklog } from '../emails/search-backlog.ts';
import { cliActor, recordAudit } from '../account/audit.ts';
import { describeDatabase, openStore } from '../start/store.ts';
import { UsageError } from './help.ts';

/** Emails indexed per transaction while the command indexes the copied mail. */
const INDEX_BATCH = 500;

export async function migrateCommand(config: Config, args: string[], say: (line: string) => void = console.log): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { to: { type: 'string' } }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length || !values.to) throw new UsageError('use "migrate --to postgres://USER:PASSWORD@HOST:PORT/DATABASE"');
  const url = values.to;
  if (!/^postgres(ql)?:\/\//.test(url)) throw new UsageError('--to takes a postgres:// URL');
  if (config.databaseUrl) throw new ConfigError(`this box already keeps its state in PostgreSQL (database_url, MAILWRIGHT_DATABASE_URL ${describeDatabase(config.databaseUrl)}): there is no SQLite box to move. Nothing was changed.`);
  const running = servingProcesses(config.dataDir);
  if (running.length) throw new ConfigError(`mailwright serve is running on ${config.dataDir} (pid ${running.join(', ')}): stop it first (systemctl stop mailwright), so that nothing changes during the copy. Nothing was changed.`);
  const where = describeDatabase(url);
  const pool = openPool(url, { max: 2, applicationName: 'mailwright migrate' });
  const db = openStore(config);
  try {
    const tables = Number(
      (
        await pool.query("SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = current_schema()").catch((err: Error) => {
          throw new ConfigError(`cannot reach the database ${where} (${err.message}): check the URL given to --to and that PostgreSQL accepts this role. Nothing was changed.`);
        })
      ).rows[0].n,
    );
    if (tables > 0) throw new ConfigError(`the database ${where} is not empty (${tables} tables): migrate copies into an empty database only (createdb -O mailwright mailwright). Nothing was changed.`);
    await migratePostgres(pool, systemClock.now());
    say(`copying ${config.dataDir} into ${where}`);
    const started = Date.now();
    const copied = await copyToPostgres(db, pool, ({ table, rows }) => rows && say(`  ${table}: ${rows} rows`));
    const store = postgresStore(pool);
    let indexed = 0;
    while (await store.write(() => indexBacklog(INDEX_BATCH))) say(`  search index: ${(indexed += INDEX_BATCH)} emails`);
    // The planner's statistics, which autovacuum would gather only later: without them its first searches check
    // every email one by one (0048_search_inline.sql).
    say('  statistics (ANALYZE)');
    await pool.query('ANALYZE');
    const checks = await compareCopy(db, pool);
    const wrong = checks.filter((c) => !c.same);
    if (wrong.length) {
      for (const c of wrong) say(`  ${c.table}: ${c.sqliteRows} rows in SQLite, ${c.postgresRows} in PostgreSQL, or rows that differ`);
      say(`the copy does not match the SQLite database: drop ${where} and run migrate again. The SQLite box is unchanged.`);
      return 1;
    }
    await store.write(() => recordAudit(systemClock.now(), cliActor(), { workspaceId: null, action: 'box.migrated', target: { type: 'database', id: null, name: where }, data: { tables: copied.length } }));
    const rows = copied.reduce((n, t) => n + t.rows, 0);
    say(`copied ${rows} rows of ${copied.length} tables in ${((Date.now() - started) / 1000).toFixed(1)} s; every table's count and checksum match.`);
    say('');
    say('Next:');
    say(`  1. Put database_url = "${url.replace(/:[^:@/]*@/, ':********@')}" in the configuration (or MAILWRIGHT_DATABASE_URL in the unit's environment).`);
    say('  2. Start the box: sudo systemctl start mailwright. It keeps its data directory for the TLS certificate and keys.');
    say(`  3. Keep ${config.dataDir}/mailwright.db until you are sure: starting on it again (without database_url) is the way back, without what happened since.`);
    return 0;
  } finally {
    db.close();
    await pool.end().catch(() => {});
  }
}
