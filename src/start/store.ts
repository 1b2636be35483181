// Opening the box's store: the data directory's database with every migration applied (serve, try and the CLI
// alike), and for serve the rest of the first phase of startApp: the marker that serve runs here, the store's
// health and the integrity check that runs while the rest is built; or, with database_url, the PostgreSQL
// database several nodes share, migrated. Refusals are StartupErrors (exit 78).
import type { Config } from '../config/config.ts';
import { systemClock, type Clock } from '../clock.ts';
import { StartupError } from '../errors.ts';
import type { Log } from '../log.ts';
import { DataDirRefused, databasePath, openDatabase, secureDataDir, type Db } from '../db/open.ts';
import { damagedAdvice, errorCode, storageFault, StoreHealth } from '../db/health.ts';
import { checkAtStart, START_CHECK_WAIT_MS } from '../db/integrity.ts';
import { migrate } from '../db/migrate.ts';
import { isTryDir } from '../db/try-marker.ts';
import { markServing } from '../db/serving.ts';
import { readBoxSecret } from '../db/box-secret.ts';
import { ensureDefaultWorkspace } from '../account/workspaces.ts';
import { runOn } from '../db/sqlite-query.ts';
import { openPool, type PgPool } from '../db/postgres.ts';
import { migratePostgres } from '../db/postgres-migrate.ts';
import { postgresStore } from '../db/store.ts';
import type { Query } from '../db/query.ts';
import { NodeCache, SETTINGS_CHANNEL } from '../db/node-cache.ts';
import { listenForCommits, type CommitNotices } from '../cluster/commit-notices.ts';

/**
 * The data directory's database with every migration applied, for `serve` and the CLI alike; a data directory
 * others can write and a damaged database are StartupErrors (exit 78). Each migration is announced first, to `log`
 * or else to stderr (the CLI): one that rebuilds the search index of a large mailbox runs for minutes.
 */
export function openStore(config: Config, clock: Clock = systemClock, log?: Log) {
  let db: Db;
  try {
    secureDataDir(config.dataDir);
    db = openDatabase(config.dataDir);
  } catch (err) {
    throw refusal(err, config.dataDir);
  }
  try {
    const started = Date.now();
    // A new data directory gets every migration in a moment: only an upgrade is worth announcing.
    const upgrade = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").get() !== undefined;
    const applied = migrate(db, clock.now(), undefined, (m) => {
      if (!upgrade) return;
      if (log) log.info('applying schema migration', { version: m.version, name: m.name });
      else process.stderr.write(`applying schema migration ${String(m.version).padStart(4, '0')} (${m.name})\n`);
    });
    if (upgrade && applied.length && log) log.info('schema migrated', { versions: applied, ms: Date.now() - started });
    db.transaction(() => runOn(db, firstRows(clock))).immediate();
  } catch (err) {
    db.close();
    throw refusal(err, config.dataDir);
  }
  return db;
}

/** The default workspace, and the box's secret: made at the first start, not by whichever request first needs them. */
function* firstRows(clock: Clock): Query<void> {
  yield* ensureDefaultWorkspace(clock);
  yield* readBoxSecret();
}

function refusal(err: unknown, dataDir: string): unknown {
  if (err instanceof DataDirRefused) return new StartupError(err.message);
  const file = databasePath(dataDir);
  // Only a new database or a pending migration writes here, and neither can wait for room: exit 1 (systemd tries again).
  if (storageFault(err) === 'full') return new Error(`cannot set up the database ${file}: the disk under ${dataDir} is full (${errorCode(err)}: ${(err as Error).message}). Free some space there, then start again.`);
  if (storageFault(err) !== 'damaged') return err;
  return new StartupError(`the database ${file} is damaged (${errorCode(err)}: ${(err as Error).message}). ${damagedAdvice(file)}`);
}

export interface ServedStore {
  /** SQLite's connection; null when the store is PostgreSQL. */
  db: Db | null;
  /** The PostgreSQL pool (database_url); null on SQLite. */
  pool: PgPool | null;
  health: StoreHealth;
  /** The integrity check at start, running while the rest is built (db/integrity.ts). */
  checking: ReturnType<typeof checkAtStart>;
  /** Takes back the marker that serve runs on this data directory. */
  unmarkServing: () => void;
  /** On PostgreSQL, what the node keeps of keys, domains, plans and rules, and the connection that hears their changes. */
  settings: { cache: NodeCache; notices: CommitNotices } | null;
}

/** startApp's first phase: the store a box serves, refused if it is try's and serve was asked for. */
export async function openServedStore(config: Config, clock: Clock, log: Log, opts: { tryMode: boolean; checkWaitMs?: number }): Promise<ServedStore> {
  // serve never has try's behaviour, nor runs on its data (try/try.ts: a directory of its own).
  if (!opts.tryMode && isTryDir(config.dataDir)) {
    throw new StartupError(`${config.dataDir} was made by 'mailwright try' and keeps its mail in a local outbox; serve a data directory of its own (MAILWRIGHT_DATA_DIR), or run 'mailwright try --dir ${config.dataDir}'`);
  }
  if (config.databaseUrl) {
    const cache = new NodeCache();
    const pool = await openPostgres(config.databaseUrl, clock, log, cache);
    log.info('store: PostgreSQL', { database: describeDatabase(config.databaseUrl) });
    const health = new StoreHealth(describeDatabase(config.databaseUrl), log);
    const notices = listenForCommits(config.databaseUrl, (scope) => cache.forget(scope), log, SETTINGS_CHANNEL);
    cache.follow(notices.listening);
    return { db: null, pool, health, checking: Promise.resolve({ damaged: null, stop: () => {} }), unmarkServing: () => {}, settings: { cache, notices } };
  }
  const db = openStore(config, clock, log);
  const unmarkServing = markServing(config.dataDir, log); // how `restore` knows serve runs here (serving.ts says why a marker)
  const health = new StoreHealth(databasePath(config.dataDir), log);
  // Runs while the rest is built; nothing listens before it answered (or its wait ran out).
  const checking = checkAtStart(databasePath(config.dataDir), { waitMs: opts.checkWaitMs ?? START_CHECK_WAIT_MS, health, log });
  return { db, pool: null, health, checking, unmarkServing, settings: null };
}

/**
 * A pool on the PostgreSQL database at `url`, migrated (nodes starting together apply each migration once), with
 * its first rows; each migration announced to `log`, or else to stderr (the CLI). Given the node's `cache`, every
 * connection of the pool tells it of changes to what it keeps (db/node-cache.ts). The database's own checks and
 * backups are PostgreSQL's: nothing runs here for them.
 */
export async function openPostgres(url: string, clock: Clock = systemClock, log?: Log, cache?: NodeCache): Promise<PgPool> {
  const where = describeDatabase(url);
  const pool = openPool(url, cache ? { notices: { channel: SETTINGS_CHANNEL, heard: (scope) => cache.forget(scope) } } : {});
  try {
    const started = Date.now();
    const applied = await migratePostgres(pool, clock.now(), (m) => {
      if (log) log.info('applying schema migration', { version: m.version, name: m.name });
      else process.stderr.write(`applying schema migration ${String(m.version).padStart(4, '0')} (${m.name})\n`);
    });
    if (applied.length) log?.info('schema migrated', { versions: applied, ms: Date.now() - started, database: where });
    await postgresStore(pool).write(() => firstRows(clock));
  } catch (err) {
    await pool.end().catch(() => {});
    throw postgresRefusal(err, where);
  }
  return pool;
}

/** Whether a box has run on the PostgreSQL database at `url` (its tables are there); opens nothing else. */
export async function postgresHasBox(url: string): Promise<boolean> {
  const pool = openPool(url, { max: 1 });
  try {
    return (await pool.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS made")).rows[0].made === 1;
  } catch (err) {
    throw postgresRefusal(err, describeDatabase(url));
  } finally {
    await pool.end().catch(() => {});
  }
}

/** The URL without its password, for messages and logs. */
export function describeDatabase(url: string): string {
  const u = new URL(url);
  u.password = '';
  return `${u.protocol}//${u.username ? `${u.username}@` : ''}${u.host}${u.pathname}`;
}

// A wrong password or a database that does not exist is the configuration's (exit 78); an unreachable server
// may come back (exit 1: systemd starts the box again).
function postgresRefusal(err: unknown, where: string): unknown {
  const code = (err as { code?: string }).code;
  const detail = `${code ?? ''}${code ? ': ' : ''}${(err as Error).message}`;
  if (code === '28P01' || code === '28000' || code === '3D000' || code === '42501') return new StartupError(`cannot use the database ${where} (${detail}). Check database_url (MAILWRIGHT_DATABASE_URL) and the role's rights.`);
  return new Error(`cannot set up the database ${where} (${detail}).`);
}
