// Opening the box's store: the data directory's database with every migration applied (serve, try and the CLI
// alike), and for serve the rest of the first phase of startApp: the marker that serve runs here, the store's
// health and the integrity check that runs while the rest is built. Refusals are StartupErrors (exit 78).
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
import { boxSecret } from '../db/box-secret.ts';
import { ensureDefaultWorkspace } from '../account/workspaces.ts';
import { runOn } from '../db/sqlite-query.ts';

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
    db.transaction(() => runOn(db, ensureDefaultWorkspace(clock))).immediate(); // Bridge: openStore opens SQLite itself, before any app.store exists
    boxSecret(db); // made at the first start, not by whichever request first needs it
  } catch (err) {
    db.close();
    throw refusal(err, config.dataDir);
  }
  return db;
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
  db: Db;
  health: StoreHealth;
  /** The integrity check at start, running while the rest is built (db/integrity.ts). */
  checking: ReturnType<typeof checkAtStart>;
  /** Takes back the marker that serve runs on this data directory. */
  unmarkServing: () => void;
}

/** startApp's first phase: the store a box serves, refused if it is try's and serve was asked for. */
export function openServedStore(config: Config, clock: Clock, log: Log, opts: { tryMode: boolean; checkWaitMs?: number }): ServedStore {
  // serve never has try's behaviour, nor runs on its data (try/try.ts: a directory of its own).
  if (!opts.tryMode && isTryDir(config.dataDir)) {
    throw new StartupError(`${config.dataDir} was made by 'mailwright try' and keeps its mail in a local outbox; serve a data directory of its own (MAILWRIGHT_DATA_DIR), or run 'mailwright try --dir ${config.dataDir}'`);
  }
  const db = openStore(config, clock, log);
  const unmarkServing = markServing(config.dataDir, log); // how `restore` knows serve runs here (serving.ts says why a marker)
  const health = new StoreHealth(databasePath(config.dataDir), log);
  // Runs while the rest is built; nothing listens before it answered (or its wait ran out).
  const checking = checkAtStart(databasePath(config.dataDir), { waitMs: opts.checkWaitMs ?? START_CHECK_WAIT_MS, health, log });
  return { db, health, checking, unmarkServing };
}
