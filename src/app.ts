// Composition root: builds the App value (config, db, log, clock, dns, dial, group commit, writer), mounts every
// resource's routes, starts the listeners and the periodic jobs, and stops them in order on shutdown.
import type { AddressInfo, Server } from 'node:net';
import type { Config } from './config/config.ts';
import { applyLiveKeys, memorySettings } from './config/live.ts';
import type { App, Dial } from './context.ts';
import { systemClock, type Clock } from './clock.ts';
import { createLog, type Log } from './log.ts';
import { DataDirRefused, databasePath, openDatabase, secureDataDir, type Db } from './db/open.ts';
import { damagedAdvice, errorCode, storageFault, StoreHealth } from './db/health.ts';
import { checkAtStart, START_CHECK_WAIT_MS } from './db/integrity.ts';
import { migrate } from './db/migrate.ts';
import { GroupCommit } from './db/group-commit.ts';
import { createResolver } from './dns/resolver.ts';
import { hostnameProblem } from './dns/box-name.ts';
import { createHttpApp, createHttpServer } from './http/server.ts';
import { Idempotency } from './db/idempotency.ts';
import { RateLimiter } from './http/rate-limit.ts';
import type { Authenticator } from './http/auth.ts';
import { createMxServer } from './smtp/mx.ts';
import { createSubmissionServer } from './smtp/submission.ts';
import { tlsCredentials } from './smtp/certificate.ts';
import { accountRoutes } from './account/routes.ts';
import { boxRoutes } from './account/box-routes.ts';
import { domainRoutes } from './domains/routes.ts';
import { emailRoutes } from './emails/routes.ts';
import { emailListRoutes, indexBacklogNow } from './emails/search-routes.ts';
import { hasBacklog, searchBacklog } from './emails/search-backlog.ts';
import { analyticsRoutes } from './emails/analytics-routes.ts';
import { labelRoutes } from './labels/routes.ts';
import { Scheduler } from './send/schedule.ts';
import { draftRoutes } from './drafts/routes.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { WebhookDispatcher } from './webhooks/deliver.ts';
import { EventStream } from './webhooks/stream.ts';
import { hasUsers, SETUP_LINK_COMMAND } from './account/setup.ts';
import { dashboardPages } from './dashboard/routes.ts';
import { FreeSpace } from './db/free-space.ts';
import { freePageBytes, startReclaiming } from './db/free-pages.ts';
import { templateRoutes } from './templates/routes.ts';
import { createRenderPool } from './templates/render-pool.ts';
import { Resorter } from './labels/resort.ts';
import { forwardingPages, inboxRoutes } from './inboxes/routes.ts';
import { Signer } from './send/signer.ts';
import { Analyzer } from './receive/analyzer.ts';
import { Deliverer, type Transport } from './send/deliver.ts';
import { LocalOutbox } from './send/local-outbox.ts';
import { isTryDir } from './db/try-marker.ts';
import { dialTcp } from './send/connect.ts';
import { Queue } from './send/queue.ts';
import { SignedCopies } from './send/signed-copies.ts';
import { Presigner } from './send/presign.ts';
import { linkPages } from './feedback/link-routes.ts';
import { LinkVisits } from './feedback/visits.ts';
import { suppressionRoutes } from './feedback/routes.ts';
import { billingRoutes } from './billing/routes.ts';
import { billingPages } from './billing/page-routes.ts';
import { createCheckoutProvider } from './billing/providers.ts';
import { ensureDefaultWorkspace } from './account/workspaces.ts';
import { boxSecret } from './db/box-secret.ts';
import { findKeyBySecret } from './account/keys.ts';
import { Writer } from './db/writer.ts';
import { findSession } from './account/sessions.ts';
import { LoginThrottle } from './account/login-throttle.ts';
import { startSchedules } from './start/schedules.ts';
import { Metrics } from './metrics/metrics.ts'; // metrics (issue 21)
import { metricsPage } from './metrics/routes.ts';
import { queueDepth } from './send/queue-stats.ts';
import { markServing } from './db/serving.ts';

export interface RunningApp {
  app: App;
  http: AddressInfo;
  smtp: AddressInfo;
  /** The SMTP submission listener; null when MAILWRIGHT_SUBMISSION_PORT is 0 (off). */
  submission: AddressInfo | null;
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

/** Where the box reaches its own listener bound to `host` (a wildcard address listens on loopback too). */
const ownAddress = (host: string) => (host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host);

export class StartupError extends Error {
  override name = 'StartupError';
}

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
    ensureDefaultWorkspace(db, clock);
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

export async function startApp(
  config: Config,
  opts: { log?: Log; clock?: Clock; dial?: Dial; fetchCa?: string; checkWaitMs?: number; resortBatch?: number; measureFreeSpace?: (dir: string) => number; tryMode?: TryMode } = {},
): Promise<RunningApp> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLog({ level: config.logLevel });
  // serve never has try's behaviour, nor runs on its data (try/try.ts: a directory of its own).
  if (!opts.tryMode && isTryDir(config.dataDir)) {
    throw new StartupError(`${config.dataDir} was made by 'mailwright try' and keeps its mail in a local outbox; serve a data directory of its own (MAILWRIGHT_DATA_DIR), or run 'mailwright try --dir ${config.dataDir}'`);
  }
  const db = openStore(config, clock, log);
  const unmarkServing = markServing(config.dataDir, log); // how `restore` knows serve runs here (serving.ts says why a marker)
  const health = new StoreHealth(databasePath(config.dataDir), log);
  // Runs while the rest is built; nothing listens before it answered (or its wait ran out).
  const checking = checkAtStart(databasePath(config.dataDir), { waitMs: opts.checkWaitMs ?? START_CHECK_WAIT_MS, health, log });
  const dns = createResolver(config.dnsServers);
  // One registry per app (issue 21): two apps in one process (tests) keep their own counts.
  const metrics = new Metrics({ queueDepth: () => queueDepth(db, clock.now()), searchBacklog: () => searchBacklog(db), databaseFile: databasePath(config.dataDir), databaseFreeBytes: () => freePageBytes(db) });
  const disk = new FreeSpace(config.dataDir, config.minFreeSpaceMb * 1024 * 1024, opts.measureFreeSpace);
  disk.start(log);
  const memory = memorySettings(config.memoryProfile);
  const app: App = {
    config,
    db,
    log,
    clock,
    dns,
    dial: opts.dial ?? dialTcp,
    health,
    commit: new GroupCommit(db, { observe: (err) => health.observe(err), onCommit: (jobs) => metrics.writerBatch('main', jobs) }),
    writer: new Writer(config, new URL('./start/writer-thread.ts', import.meta.url), health, (calls) => metrics.writerBatch('writer', calls)),
    idempotency: new Idempotency(db, clock),
    queue: { wake: () => {} },
    presign: { accepted: () => {} },
    scheduler: { wake: () => {} },
    disk,
    billing: createCheckoutProvider(config, { resolver: dns, fetchCa: opts.fetchCa }),
    fetchCa: opts.fetchCa,
    metrics,
    templateRenders: createRenderPool(config, memory.renderWorkers),
  };
  const signer = new Signer({ size: memory.signWorkers });
  const analyzer = new Analyzer(config, { size: memory.analyzeWorkers });
  const delivery = { resolver: app.dns, dial: app.dial, clock, heloName: config.hostname, port: config.mtaPort, allowPrivate: config.allowPrivateDelivery, maxConnectionsPerHost: config.maxConnectionsPerMx };
  // Try mode delivers to its own listener or keeps the mail (send/local-outbox.ts); a box delivers it.
  const deliverer: Transport = opts.tryMode
    ? new LocalOutbox(opts.tryMode.localDomains, { host: ownAddress(config.smtpHost), port: config.smtpPort }, delivery)
    : new Deliverer({ ...delivery, relayUrl: config.relayUrl, relays: config.relays });
  // One object the queue reads at every outcome, so a reload's retry_schedule and queue_lifetime apply at once.
  const retryPolicy = { schedule: config.retrySchedule, lifetimeMs: config.queueLifetime };
  const copies = new SignedCopies(app, signer);
  const queue = new Queue(app, copies, deliverer, { policy: retryPolicy, maxInFlight: memory.queueInFlight });
  app.queue = queue;
  // Two emails per signing thread: each thread always has the next one waiting, and the queue's own requests
  // (mail accepted before this start, personal copies) wait behind few.
  const presigner = new Presigner(app, copies, { concurrency: 2 * signer.size });
  app.presign = presigner;
  const scheduler = new Scheduler(app);
  app.scheduler = scheduler;
  const dispatcher = new WebhookDispatcher(app, { timeoutMs: config.webhookTimeout, keepFinishedMs: config.retentionWebhookDays * 24 * 60 * 60_000 });
  const eventStream = new EventStream(app);
  const linkVisits = new LinkVisits(app);

  const authenticator: Authenticator = {
    byKey: (secret) => {
      const k = findKeyBySecret(db, clock, secret);
      return k && { kind: 'key', ...k };
    },
    bySession: (token) => {
      const s = findSession(db, clock, token);
      return s && { kind: 'session', workspaceId: s.workspaceId, userId: s.userId, sessionId: s.id };
    },
  };
  const tls = await tlsCredentials(config);
  if (tls.notSaved) log.warn('could not keep the new self-signed TLS certificate; STARTTLS uses it from memory and the next start makes another', tls.notSaved);
  const resorter = new Resorter(db, app.writer, clock, log, opts.resortBatch);
  let healthy = false;
  const httpApp = createHttpApp(
    {
      config,
      log,
      authenticator,
      rateLimiter: config.rateLimit > 0 ? new RateLimiter(config.rateLimit, clock) : null,
      healthy: () => healthy && health.corrupt === null,
      largerBodies: [
        { path: /^\/api\/v1\/emails$/, limitBytes: 20 * MiB },
        { path: /^\/api\/v1\/emails\/batch$/, limitBytes: 50 * MiB },
      ],
      // A draft's file is the request body itself, read by its route with its own caps.
      rawBodies: [/^\/api\/v1\/drafts\/[^/]+\/attachments$/],
      metrics,
    },
    [accountRoutes(app, new LoginThrottle(db, clock, 'login'), { tlsCert: tls.cert.toString(), tryMode: opts.tryMode !== undefined }), domainRoutes(app), emailRoutes(app), emailListRoutes(app), analyticsRoutes(app), labelRoutes(app, resorter), templateRoutes(app), draftRoutes(app), webhookRoutes(app, dispatcher, eventStream), inboxRoutes(app), suppressionRoutes(app), billingRoutes(app), boxRoutes(app)],
    [forwardingPages(app), linkPages(app, linkVisits), billingPages(app), metricsPage(app), dashboardPages()],
  );
  // errorEnvelope hands on what it answered 5xx: SQLite corruption there turns /healthz to 503.
  httpApp.on('error', (err) => health.observe(err));
  const httpServer = createHttpServer(httpApp);
  const mx = createMxServer(app, tls, { analyzer, writer: app.writer });
  const submission = config.submissionPort === 0 ? null : createSubmissionServer(app, tls, analyzer);

  // Undone in reverse: jobs, HTTP, SMTP, the queue (each letting its work in flight finish), the signer's,
  // analyzer's and writer's workers and pooled connections, the last group commit, the db.
  const opened: Array<() => Promise<void>> = [
    async () => unmarkServing(),
    async () => void db.close(),
    async () => app.commit.flush(),
    async () => disk.stop(),
    startReclaiming(db, app.commit, log),
    async () => {
      await deliverer.close();
      await signer.close();
      await analyzer.close();
      await app.templateRenders.close();
      // The full-text backlog before the writer ends (emails/search-backlog.ts); else the next start takes it.
      if (hasBacklog(db)) await indexBacklogNow(app).catch((err) => log.warn('could not index the full-text backlog before stopping', { err }));
      await app.writer.close();
    },
  ];
  const closeAll = async () => {
    for (const close of opened.reverse()) await close().catch((err) => log.error('shutdown step failed', { err }));
  };
  let smtpAddress: AddressInfo;
  let submissionAddress: AddressInfo | null = null;
  let httpAddress: AddressInfo;
  try {
    const check = await checking;
    opened.push(async () => check.stop());
    if (check.damaged) throw new StartupError(check.damaged);
    queue.start();
    // A full-text backlog left by kill -9 or a power loss: the writer takes it a batch at a time between mail.
    if (hasBacklog(db)) indexBacklogNow(app, { all: false }).catch((err) => log.warn('could not index the full-text backlog yet', storageFault(err) === 'full' ? { code: errorCode(err) } : { err }));
    opened.push(() => queue.stop());
    presigner.start();
    opened.push(() => presigner.stop());
    resorter.start();
    opened.push(() => resorter.stop());
    scheduler.start();
    opened.push(() => scheduler.stop());
    dispatcher.start();
    opened.push(() => dispatcher.stop());
    // Stopped after the HTTP listener (undone in reverse): its last count of repeated visits is written then.
    linkVisits.start();
    opened.push(() => linkVisits.stop());
    smtpAddress = await listen(mx.server, config.smtpHost, config.smtpPort, 'SMTP', 'MAILWRIGHT_SMTP_PORT');
    opened.push(() => new Promise<void>((resolve) => mx.close(() => resolve())));
    if (submission) {
      // On the MX listener's address: one SMTP host setting for both (DESIGN.md names no other).
      submissionAddress = await listen(submission.server, config.smtpHost, config.submissionPort, 'SMTP submission', 'MAILWRIGHT_SUBMISSION_PORT', 'MAILWRIGHT_SMTP_HOST');
      opened.push(() => new Promise<void>((resolve) => submission.close(() => resolve())));
    }
    eventStream.start();
    httpAddress = await listen(httpServer, config.httpHost, config.httpPort, 'HTTP', 'MAILWRIGHT_HTTP_PORT');
    opened.push(() => closeHttp(httpServer));
    // Before the HTTP server closes: open event streams would hold it open.
    opened.push(async () => eventStream.stop());
  } catch (err) {
    await closeAll();
    throw err;
  }

  // A try box looks nothing up about itself: its name is a .localhost one.
  opened.push(startSchedules(app, { boxDns: !opts.tryMode }));

  healthy = true;
  // The one-time setup link is a credential: never logged (journald and log shippers keep logs); the CLI prints it.
  if (!hasUsers(db)) log.warn(`this box has no owner yet: run '${SETUP_LINK_COMMAND}' on this machine for the one-time link that creates one`);
  const badName = hostnameProblem(config.hostname);
  if (badName) log.warn(`hostname: ${badName.message} Fix: ${badName.fix}.`, { hostname: config.hostname });
  log.info('ready', { http: `${httpAddress.address}:${httpAddress.port}`, smtp: `${smtpAddress.address}:${smtpAddress.port}`, submission: submissionAddress && `${submissionAddress.address}:${submissionAddress.port}`, publicUrl: config.publicUrl, hostname: config.hostname, dataDir: config.dataDir });

  let stopping: Promise<void> | null = null;
  return {
    app,
    http: httpAddress,
    smtp: smtpAddress,
    submission: submissionAddress,
    stop: () => {
      healthy = false;
      stopping ??= closeAll().then(() => log.info('stopped'));
      return stopping;
    },
    // New sessions get the new certificate; sessions already in TLS keep theirs, as with Postfix's reload.
    reload: async (next) => {
      const fresh = await tlsCredentials(next);
      for (const server of [mx, submission]) server?.updateSecureContext({ key: fresh.key, cert: fresh.cert });
      log.info('reloaded the TLS certificate', { selfSigned: fresh.selfSigned, cert: next.tlsCert ?? 'self-signed' });
      // Key names only: relay URLs and the metrics token are secrets.
      const changed = applyLiveKeys(config, next);
      disk.setMargin(config.minFreeSpaceMb * MiB);
      deliverer.setRelays(config.relayUrl, config.relays);
      Object.assign(retryPolicy, { schedule: config.retrySchedule, lifetimeMs: config.queueLifetime });
      // Said at the level that was in force when the reload was asked for, then the new level applies.
      if (changed.applied.length) log.info('reloaded the configuration', { applied: changed.applied });
      if (changed.atRestart.length) log.warn('these changed settings take effect at the next restart (systemctl restart mailwright)', { atRestart: changed.atRestart });
      log.setLevel(config.logLevel);
      return changed;
    },
  };
}

function listen(server: Server, host: string, port: number, what: string, variable: string, hostVariable = variable.replace('PORT', 'HOST')): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      if (err.code === 'EACCES') {
        reject(
          new StartupError(
            `cannot listen for ${what} on ${where}: permission denied. Ports below 1024 need root or the CAP_NET_BIND_SERVICE capability ` +
              `(the unit in systemd/ grants it with AmbientCapabilities=CAP_NET_BIND_SERVICE), or set ${variable} to a port above 1023.`,
          ),
        );
      } else if (err.code === 'EADDRINUSE') {
        reject(new StartupError(`cannot listen for ${what} on ${where}: the address is already in use by another program; stop it or set ${variable}.`));
      } else if (err.code === 'EADDRNOTAVAIL') {
        reject(new StartupError(`cannot listen for ${what} on ${where}: this machine has no such address; check the ${hostVariable} setting.`));
      } else {
        reject(err);
      }
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

// Stop accepting, let requests in flight finish (up to 10 s), then drop idle keep-alive connections.
function closeHttp(server: Server & { closeIdleConnections?: () => void; closeAllConnections?: () => void }): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => server.closeAllConnections?.(), 10_000);
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections?.();
  });
}
