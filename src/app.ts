// Composition root: startApp builds the App value (config, db, log, clock, dns, dial, group commit, writer) and
// the box around it, and reads as its start order: open the store, assemble the App, build the background work
// and the front doors (start/), pass the integrity check, start the work, listen, schedule, say ready. Stop
// undoes each step in reverse.
import type { AddressInfo } from 'node:net';
import type { Config } from './config/config.ts';
import { applyLiveKeys, memorySettings, type MemorySettings } from './config/live.ts';
import type { App, Dial } from './context.ts';
import { systemClock, type Clock } from './clock.ts';
import { StartupError } from './errors.ts';
import { createLog, type Log } from './log.ts';
import { databasePath } from './db/open.ts';
import { GroupCommit } from './db/group-commit.ts';
import { postgresStore, sqliteStore, type Store } from './db/store.ts';
import { PostgresCommit } from './db/postgres-commit.ts';
import type { Db } from './db/open.ts';
import { Idempotency } from './db/idempotency.ts';
import { FreeSpace } from './db/free-space.ts';
import { freePageBytes, startReclaiming } from './db/free-pages.ts';
import { Writer } from './db/writer.ts';
import { createResolver } from './dns/resolver.ts';
import { hostnameProblem } from './dns/box-name.ts';
import { searchBacklog } from './emails/search-backlog.ts';
import { hasUsers, SETUP_LINK_COMMAND } from './account/setup.ts';
import { createRenderPool } from './templates/render-pool.ts';
import { createCheckoutProvider } from './billing/providers.ts';
import type { AcmeCertificates } from './acme/certificates.ts';
import { dialTcp } from './send/connect.ts';
import { queueDepth } from './send/queue-stats.ts';
import { Metrics } from './metrics/metrics.ts';
import { openServedStore, type ServedStore } from './start/store.ts';
import { closeThreads, createBackground, startBackground, type Background, type Close } from './start/background.ts';
import { createFrontDoors, openFrontDoors, type FrontDoors, type Listening } from './start/front-doors.ts';
import { startSchedules } from './start/schedules.ts';
import { Node } from './cluster/nodes.ts';

export interface RunningApp {
  app: App;
  http: AddressInfo;
  smtp: AddressInfo;
  /** The SMTP submission listener; null when MAILWRIGHT_SUBMISSION_PORT is 0 (off). */
  submission: AddressInfo | null;
  /** The HTTPS listener (https_port), and the ACME challenge listener (acme_http_port); null when off. */
  https: AddressInfo | null;
  acmeHttp: AddressInfo | null;
  /** The box's ACME certificates (acme = true), whose renewDue a test calls with a later clock; else null. */
  acme: AcmeCertificates | null;
  /** Stops accepting, lets work in flight finish, commits, closes the database. */
  stop(): Promise<void>;
  /**
   * SIGHUP: reads the TLS certificate and key again (a renewed certificate) for the SMTP listeners, and takes
   * the keys config/live.ts lists in LIVE_KEYS; returns which changed keys it took and which wait for a restart.
   */
  reload(config: Config): Promise<{ applied: string[]; atRestart: string[] }>;
}

const MiB = 1024 * 1024;

/** `mailwright try` (try/try.ts): the local domains, whose mail the box delivers to itself; the rest is kept, never sent. */
export interface TryMode {
  localDomains: string[];
}

export interface StartOptions {
  log?: Log;
  clock?: Clock;
  dial?: Dial;
  fetchCa?: string;
  checkWaitMs?: number;
  resortBatch?: number;
  measureFreeSpace?: (dir: string) => number;
  tryMode?: TryMode;
}

export async function startApp(config: Config, opts: StartOptions = {}): Promise<RunningApp> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLog({ level: config.logLevel });
  const store = await openServedStore(config, clock, log, { tryMode: opts.tryMode !== undefined, checkWaitMs: opts.checkWaitMs });
  const memory = memorySettings(config.memoryProfile);
  const { app, sqlite } = assembleApp(config, store, memory, { ...opts, clock, log });
  const work = createBackground(app, memory, { localDomains: opts.tryMode?.localDomains, resortBatch: opts.resortBatch });
  let healthy = false;
  const doors = await createFrontDoors(app, work, { tryMode: opts.tryMode !== undefined, healthy: () => healthy });

  // Undone in reverse: jobs, HTTP, SMTP, the queue (each letting its work in flight finish), the signer's,
  // analyzer's and writer's workers and pooled connections, the last group commit, the db.
  const opened: Close[] = [async () => store.unmarkServing()];
  if (store.pool) opened.push(() => store.pool!.end());
  if (store.settings) opened.push(() => store.settings!.notices.stop());
  if (sqlite) {
    const { db, commit, disk } = sqlite;
    opened.push(async () => void db.close(), async () => commit.flush(), async () => disk.stop(), startReclaiming(db, commit, log));
  }
  opened.push(() => closeThreads(app, work));
  const closeAll = async () => {
    for (const close of opened.reverse()) await close().catch((err) => log.error('shutdown step failed', { err }));
  };
  let listening: Listening;
  try {
    await passIntegrityCheck(store, opened);
    await joinNodes(app.node, opened);
    startBackground(app, work, opened);
    listening = await openFrontDoors(config, doors, opened);
  } catch (err) {
    await closeAll();
    throw err;
  }
  // A try box looks nothing up about itself: its name is a .localhost one.
  opened.push(startSchedules(app, { boxDns: !opts.tryMode }));

  healthy = true;
  await announceReady(app, listening);

  let stopping: Promise<void> | null = null;
  return {
    app,
    http: listening.http,
    smtp: listening.smtp,
    submission: listening.submission,
    https: listening.https,
    acmeHttp: listening.acmeHttp,
    acme: doors.served.acme,
    stop: () => {
      healthy = false;
      stopping ??= closeAll().then(() => log.info('stopped'));
      return stopping;
    },
    reload: (next) => reload(app, { doors, work, disk: sqlite?.disk }, next),
  };
}

interface SqliteParts {
  db: Db;
  commit: GroupCommit;
  /** The free-space watch under the data directory, where the store is (started here). */
  disk: FreeSpace;
}

/** The App value every front door and flow is handed; on SQLite, the parts only SQLite has. */
function assembleApp(config: Config, served: ServedStore, memory: MemorySettings, opts: StartOptions & { clock: Clock; log: Log }): { app: App; sqlite: SqliteParts | null } {
  const { db, pool, health } = served;
  const { clock, log } = opts;
  const dns = createResolver(config.dnsServers);
  // One registry per app: two apps in one process (tests) keep their own counts.
  const metrics = new Metrics({
    queueDepth: () => app.store.read(queueDepth(clock.now())),
    searchBacklog: () => app.store.read(searchBacklog()),
    sqlite: db ? { file: databasePath(config.dataDir), freeBytes: () => freePageBytes(db) } : undefined,
  });
  let sqlite: SqliteParts | null = null;
  let store: Store;
  // On either store, the writes of mail run on the writer thread (db/writer-worker.ts), on its own connection.
  const cache = served.settings?.cache ?? null;
  const writer = new Writer(config, new URL('./start/writer-thread.ts', import.meta.url), health, (calls) => metrics.writerBatch('writer', calls), (scope) => cache?.forget(scope));
  if (db) {
    const disk = new FreeSpace(config.dataDir, config.minFreeSpaceMb * 1024 * 1024, opts.measureFreeSpace);
    disk.start(log);
    const commit = new GroupCommit(db, { observe: (err) => health.observe(err), onCommit: (jobs) => metrics.writerBatch('main', jobs) });
    sqlite = { db, commit, disk };
    store = sqliteStore(db, commit);
  } else {
    store = postgresStore(pool!, new PostgresCommit(pool!, (writes) => metrics.writerBatch('main', writes)));
  }
  const app: App = {
    config,
    store,
    cache,
    db: db ?? undefined,
    log,
    clock,
    dns,
    dial: opts.dial ?? dialTcp,
    health,
    writer,
    node: new Node(store, clock, log),
    idempotency: new Idempotency(store, clock),
    queue: { wake: () => {} },
    presign: { accepted: () => {} },
    scheduler: { wake: () => {} },
    disk: sqlite?.disk,
    billing: createCheckoutProvider(config, { resolver: dns, fetchCa: opts.fetchCa }),
    fetchCa: opts.fetchCa,
    metrics,
    templateRenders: createRenderPool(config, memory.renderWorkers),
  };
  return { app, sqlite };
}

/** Registers this process among the box's nodes before it claims anything; it leaves once its work stopped. */
async function joinNodes(node: Node, opened: Close[]): Promise<void> {
  await node.start();
  opened.push(() => node.stop());
}

/** Waits for the integrity check started with the store: a damaged database starts nothing (exit 78). */
async function passIntegrityCheck(store: ServedStore, opened: Close[]): Promise<void> {
  const check = await store.checking;
  opened.push(async () => check.stop());
  if (check.damaged) throw new StartupError(check.damaged);
}

/** Once everything listens: what the owner must still do, then the `ready` line. */
async function announceReady(app: App, at: Listening): Promise<void> {
  const { store, config, log } = app;
  // The one-time setup link is a credential: never logged (journald and log shippers keep logs); the CLI prints it.
  if (!(await store.read(hasUsers()))) log.warn(`this box has no owner yet: run '${SETUP_LINK_COMMAND}' on this machine for the one-time link that creates one`);
  const badName = hostnameProblem(config.hostname);
  if (badName) log.warn(`hostname: ${badName.message} Fix: ${badName.fix}.`, { hostname: config.hostname });
  log.info('ready', { http: `${at.http.address}:${at.http.port}`, https: at.https && `${at.https.address}:${at.https.port}`, smtp: `${at.smtp.address}:${at.smtp.port}`, submission: at.submission && `${at.submission.address}:${at.submission.port}`, publicUrl: config.publicUrl, hostname: config.hostname, dataDir: config.dataDir });
}

// New sessions get the new certificate; sessions already in TLS keep theirs, as with Postfix's reload.
async function reload(app: App, parts: { doors: FrontDoors; work: Background; disk?: FreeSpace }, next: Config): Promise<{ applied: string[]; atRestart: string[] }> {
  const { config, log } = app;
  const { doors, work } = parts;
  const fresh = await doors.served.reload(next);
  log.info('reloaded the TLS certificate', { selfSigned: fresh.selfSigned, cert: doors.served.acme?.forHostname() ? 'acme' : (next.tlsCert ?? 'self-signed') });
  // Key names only: relay URLs and the metrics token are secrets.
  const changed = applyLiveKeys(config, next);
  parts.disk?.setMargin(config.minFreeSpaceMb * MiB);
  work.deliverer.setRelays(config.relayUrl, config.relays);
  Object.assign(work.retryPolicy, { schedule: config.retrySchedule, lifetimeMs: config.queueLifetime });
  // Said at the level that was in force when the reload was asked for, then the new level applies.
  if (changed.applied.length) log.info('reloaded the configuration', { applied: changed.applied });
  if (changed.atRestart.length) log.warn('these changed settings take effect at the next restart (systemctl restart mailwright)', { atRestart: changed.atRestart });
  log.setLevel(config.logLevel);
  return changed;
}
