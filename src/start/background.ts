// What the box does besides answering: the signing and analyze threads (with the door's DNS blocklists), the
// delivery transport (with MTA-STS, DANE and the daily TLS report) and the queue, signing at acceptance,
// scheduled sends, webhook deliveries, link visits, labels applied to stored mail and the spam filter's training.
// startApp builds them once the App is assembled, starts them once the store passed its check, and stops them
// in reverse; closeThreads ends the threads and pooled connections, the writer's last.
import { readFileSync } from 'node:fs';
import type { App } from '../context.ts';
import type { MemorySettings } from '../config/live.ts';
import { errorCode, storageFault } from '../db/health.ts';
import { hasBacklog } from '../emails/search-backlog.ts';
import { indexBacklogNow } from '../emails/search-routes.ts';
import { Resorter } from '../labels/resort.ts';
import { Signer } from '../send/signer.ts';
import { Analyzer } from '../receive/analyzer.ts';
import { linkListings } from '../receive/links.ts';
import { Blocklists } from '../dns/blocklist.ts';
import { createResolver } from '../dns/resolver.ts';
import { Deliverer, type Transport } from '../send/deliver.ts';
import { LocalOutbox } from '../send/local-outbox.ts';
import { Queue } from '../send/queue.ts';
import { SignedCopies } from '../send/signed-copies.ts';
import { Presigner } from '../send/presign.ts';
import { Scheduler } from '../send/schedule.ts';
import { WebhookDispatcher } from '../webhooks/deliver.ts';
import { LinkVisits } from '../feedback/visits.ts';
import { Trainer } from '../receive/trainer.ts';
import { createTlsChecks } from '../send/tls-checks.ts';
import { TlsReports } from '../send/tls-rpt/send-reports.ts';

/** What app.ts's `opened` list holds: each undoes one thing start-up did. */
export type Close = () => Promise<void>;

export type Background = ReturnType<typeof createBackground>;

/** Where the box reaches its own listener bound to `host` (a wildcard address listens on loopback too). */
const ownAddress = (host: string) => (host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host);

/**
 * Builds the background work (nothing runs yet) and gives the App its queue, signing at acceptance and
 * scheduler. `localDomains`: try mode's (app.ts TryMode), which delivers to its own listener or keeps the mail.
 */
export function createBackground(app: App, memory: MemorySettings, opts: { localDomains?: string[]; resortBatch?: number }) {
  const { config, clock, log } = app;
  const signer = new Signer({ size: memory.signWorkers });
  // The door's DNS (blocklists, the forward half of reverse-DNS checks) asks the configured resolvers
  // once per query, bounded by dnsbl_timeout; one cache serves the MX listener and the analyze threads.
  const doorDns = createResolver(config.dnsServers, { timeoutMs: config.dnsblTimeout, tries: 1 });
  const blocklists = new Blocklists(doorDns, {
    timeoutMs: config.dnsblTimeout,
    observe: (list, zone, outcome) => app.metrics?.blocklistLookup(list, zone, outcome),
    warn: (message, fields) => log.warn(message, fields),
  });
  const analyzer = new Analyzer(config, { size: memory.analyzeWorkers, links: linkListings(config, blocklists, log) });
  const delivery = { resolver: app.dns, dial: app.dial, clock, heloName: config.hostname, port: config.mtaPort, allowPrivate: config.allowPrivateDelivery, maxConnectionsPerHost: config.maxConnectionsPerMx };
  const tlsCa = config.tlsCaFile ? readFileSync(config.tlsCaFile, 'utf8') : undefined;
  // Try mode delivers to its own listener or keeps the mail (send/local-outbox.ts); a box delivers it, with
  // MTA-STS, DANE and the TLS report's counts (send/outbound-tls.ts).
  const deliverer: Transport = opts.localDomains
    ? new LocalOutbox(opts.localDomains, { host: ownAddress(config.smtpHost), port: config.smtpPort }, delivery)
    : new Deliverer({ ...delivery, relayUrl: config.relayUrl, relays: config.relays, tlsCa, tlsChecks: createTlsChecks(app, tlsCa) });
  // Try mode has no outbound TLS to report on.
  const tlsReports = opts.localDomains ? null : new TlsReports(app, deliverer, { tlsCa });
  if (tlsReports) app.tlsReports = tlsReports;
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
  const linkVisits = new LinkVisits(app);
  const resorter = new Resorter(app.store, app.writer, clock, log, opts.resortBatch);
  const trainer = new Trainer(app, analyzer);
  app.spamTrainer = trainer;
  return { signer, analyzer, doorDns, blocklists, deliverer, retryPolicy, queue, presigner, scheduler, dispatcher, linkVisits, resorter, trainer, tlsReports };
}

/** Starts the background work, each part's stop added to `opened` as it starts. */
export function startBackground(app: App, work: Background, opened: Close[]): void {
  const { queue, presigner, resorter, scheduler, dispatcher, linkVisits, trainer, tlsReports } = work;
  queue.start();
  // A full-text backlog left by kill -9 or a power loss: the writer takes it a batch at a time between mail.
  app.store.read(hasBacklog()).then((has) => (has ? indexBacklogNow(app, { all: false }) : undefined)).catch((err) => app.log.warn('could not index the full-text backlog yet', storageFault(err) === 'full' ? { code: errorCode(err) } : { err }));
  opened.push(() => queue.stop());
  presigner.start();
  opened.push(() => presigner.stop());
  resorter.start();
  opened.push(() => resorter.stop());
  trainer.start();
  opened.push(() => trainer.stop());
  scheduler.start();
  opened.push(() => scheduler.stop());
  dispatcher.start();
  opened.push(() => dispatcher.stop());
  if (tlsReports) {
    tlsReports.start();
    opened.push(() => tlsReports.stop());
  }
  // Stopped after the HTTP listener (undone in reverse): its last count of repeated visits is written then.
  linkVisits.start();
  opened.push(() => linkVisits.stop());
}

/** Ends the threads and pooled connections: delivery's, the signing, analyze and render threads, the writer last. */
export async function closeThreads(app: App, work: Background): Promise<void> {
  await work.deliverer.close();
  await work.signer.close();
  await work.analyzer.close();
  await app.templateRenders.close();
  // The full-text backlog before the writer ends (emails/search-backlog.ts); else the next start takes it.
  if (await app.store.read(hasBacklog())) await indexBacklogNow(app).catch((err) => app.log.warn('could not index the full-text backlog before stopping', { err }));
  await app.writer.close();
}
