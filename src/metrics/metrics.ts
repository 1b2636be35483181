// The box's Prometheus metrics (prom-client): one Registry per App, never the global default, so two apps in
// one process keep their own counts. It owns the metric names, their labels and the one-line hooks the flows
// call through `app.metrics?.…`; it must not import a flow or run SQL (queue depth is handed in by app.ts).
import { statSync } from 'node:fs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { SmtpError } from '../errors.ts';

export type DeliveryOutcome = 'delivered' | 'deferred' | 'bounced' | 'failed';

/** One recipient's recorded attempt (send/record.ts): its final or deferred state and the reply's codes. */
export type DeliveryAttempt = {
  outcome: DeliveryOutcome;
  code: number | null;
  enhanced: string | null;
};

/** What the queue looks like now: asked at every scrape (send/queue-stats.ts). */
export interface QueueDepth {
  byState: Record<'queued' | 'sending' | 'deferred', number>;
  /** Age of the oldest queued or deferred recipient (ms); 0 when there is none. */
  oldestAgeMs: number;
}

export interface MetricsSources {
  queueDepth: () => QueueDepth | Promise<QueueDepth>;
  /** Emails stored but not yet in the full-text index (emails/search-backlog.ts). */
  searchBacklog: () => number | Promise<number>;
  /** The SQLite file, its `-wal` file measured beside it, and its free pages (db/free-pages.ts); none on PostgreSQL. */
  sqlite?: { file: string; freeBytes: () => number };
}

// Seconds: most API calls answer in milliseconds; a send with attachments or a search can take seconds.
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// Calls per group commit: the writer takes up to 256 (GroupCommit.maxBatch).
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

export class Metrics {
  readonly registry = new Registry();
  private readonly deliveries: Counter<'outcome' | 'class'>;
  private readonly inboundAccepted: Counter;
  private readonly inboundRejected: Counter<'reason'>;
  private readonly tlsFailures: Counter<'listener'>;
  private readonly apiRequests: Histogram<'method' | 'route' | 'status_class'>;
  private readonly webhookDeliveries: Counter<'outcome'>;
  private readonly batchSizes: Histogram<'commit'>;
  private readonly queue: Gauge<'state'>;
  private readonly oldest: Gauge;
  private readonly backlog: Gauge;
  private readonly files: Gauge<'file'>;
  private readonly freeInFile: Gauge;
  private readonly trackingVisits: Counter<'outcome'>;
  private readonly streamsRefused: Counter<'limit'>;
  private readonly streamsDropped: Counter;
  private readonly passwordHashes: Counter<'outcome'>;
  private hashQueueState: (() => { running: number; waiting: number }) | null = null;
  private readonly blocklistLookups: Counter<'list' | 'zone' | 'outcome'>;
  private readonly rspamdChecks: Counter<'outcome'>;

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    // Event-loop lag, heap, RSS, CPU, file descriptors, GC: prom-client's standard names, so stock dashboards fit.
    collectDefaultMetrics({ register: this.registry });
    this.queue = new Gauge({ name: 'mailwright_queue_recipients', help: 'Outbound recipients in the queue, by state.', labelNames: ['state'], registers });
    this.oldest = new Gauge({ name: 'mailwright_queue_oldest_age_seconds', help: 'Age of the oldest queued or deferred recipient (0 when the queue is empty).', registers });
    this.backlog = new Gauge({ name: 'mailwright_search_backlog', help: 'Emails stored but not yet in the full-text index (indexed a moment after, or before a search).', registers });
    this.files = new Gauge({ name: 'mailwright_database_bytes', help: 'Size of the SQLite database file and of its write-ahead log.', labelNames: ['file'], registers });
    this.freeInFile = new Gauge({ name: 'mailwright_database_free_bytes', help: 'Free pages inside the database file: given back to the disk when they pass 1 MiB and 1 % of it, or kept for new mail by a database made before that.', registers });
    this.deliveries = new Counter({ name: 'mailwright_deliveries_total', help: 'Outbound delivery attempts per recipient, by outcome and status class (2, 4 or 5).', labelNames: ['outcome', 'class'], registers });
    this.inboundAccepted = new Counter({ name: 'mailwright_inbound_accepted_total', help: 'Messages the MX listener accepted (250 after the commit).', registers });
    this.inboundRejected = new Counter({ name: 'mailwright_inbound_rejected_total', help: 'Recipients and messages the MX listener refused, by reason.', labelNames: ['reason'], registers });
    this.tlsFailures = new Counter({ name: 'mailwright_smtp_tls_handshake_failures_total', help: 'TLS that SMTP clients broke, by listener: a failed STARTTLS handshake (garbage, no protocol or cipher in common, a scanner) or a broken TLS record later in a session.', labelNames: ['listener'], registers });
    this.apiRequests = new Histogram({ name: 'mailwright_http_request_duration_seconds', help: 'API request latency by matched route pattern and status class.', labelNames: ['method', 'route', 'status_class'], buckets: LATENCY_BUCKETS, registers });
    this.webhookDeliveries = new Counter({ name: 'mailwright_webhook_deliveries_total', help: 'Webhook delivery attempts by outcome (delivered: 2xx; rejected: another status; unreachable: no answer).', labelNames: ['outcome'], registers });
    const hashQueue = new Gauge({
      name: 'mailwright_password_hash_queue',
      help: 'Password hashes running now, and sign-ins waiting for one (at most 2 and 16).',
      labelNames: ['state'],
      registers,
      collect: () => {
        const state = this.hashQueueState?.() ?? { running: 0, waiting: 0 };
        hashQueue.set({ state: 'running' }, state.running);
        hashQueue.set({ state: 'waiting' }, state.waiting);
      },
    });
    this.passwordHashes = new Counter({ name: 'mailwright_password_hashes_total', help: 'Password hashes (sign-in checks, the first start\'s owner) computed, and callers turned away with 503 because too many waited.', labelNames: ['outcome'], registers });
    this.batchSizes = new Histogram({ name: 'mailwright_writer_batch_size', help: 'Calls committed together in one group commit (writer: the writer thread; main: the event loop\'s).', labelNames: ['commit'], buckets: BATCH_BUCKETS, registers });
    this.trackingVisits = new Counter({ name: 'mailwright_tracking_visits_total', help: 'Visits of open pixels and click links by outcome (recorded: an event; repeat: counted on the event of the hour; limited: over the per-address budget, not counted).', labelNames: ['outcome'], registers });
    this.streamsRefused = new Counter({ name: 'mailwright_event_streams_refused_total', help: 'Live event streams refused with 429, by the limit they would have passed.', labelNames: ['limit'], registers });
    this.streamsDropped = new Counter({ name: 'mailwright_event_streams_dropped_total', help: 'Live event streams ended because their client left too much unread.', registers });
    // The zones are the configured ones (a bounded set); an answer from the cache is no lookup.
    this.blocklistLookups = new Counter({ name: 'mailwright_blocklist_lookups_total', help: 'DNS and URI blocklist queries sent, by list kind (dnsbl, uribl), zone and outcome (listed; clear; unusable: an answer that is no listing, such as Spamhaus refusing a public resolver; timeout; error).', labelNames: ['list', 'zone', 'outcome'], registers });
    this.rspamdChecks = new Counter({ name: 'mailwright_rspamd_checks_total', help: 'Received messages rspamd was asked about (spam_filter = rspamd), by outcome (answered, or unavailable: filed without its verdict).', labelNames: ['outcome'], registers });
    // Known label values start at 0, so rate() and increase() work from the first scrape after a restart.
    for (const [outcome, cls] of [['delivered', '2'], ['deferred', '4'], ['bounced', '5'], ['failed', '5']]) this.deliveries.inc({ outcome, class: cls }, 0);
    for (const reason of [...Object.values(REASONS), BLOCKLISTED]) this.inboundRejected.inc({ reason }, 0);
    for (const outcome of ['delivered', 'rejected', 'unreachable']) this.webhookDeliveries.inc({ outcome }, 0);
    for (const listener of ['mx', 'submission']) this.tlsFailures.inc({ listener }, 0);
    for (const outcome of ['recorded', 'repeat', 'limited']) this.trackingVisits.inc({ outcome }, 0);
    for (const limit of ['credential', 'address', 'workspace', 'box']) this.streamsRefused.inc({ limit }, 0);
    for (const outcome of ['computed', 'busy']) this.passwordHashes.inc({ outcome }, 0);
    for (const outcome of ['answered', 'unavailable']) this.rspamdChecks.inc({ outcome }, 0);
  }

  /** The exposition, in the Prometheus text format; the queue and the files are measured now, once per scrape. */
  async expose(): Promise<string> {
    const [depth, backlog] = await Promise.all([this.sources.queueDepth(), this.sources.searchBacklog()]);
    for (const [state, n] of Object.entries(depth.byState)) this.queue.set({ state }, n);
    this.oldest.set(depth.oldestAgeMs / 1000);
    this.backlog.set(backlog);
    const { sqlite } = this.sources;
    if (sqlite) {
      this.files.set({ file: 'db' }, sizeOf(sqlite.file));
      this.files.set({ file: 'wal' }, sizeOf(`${sqlite.file}-wal`));
      this.freeInFile.set(sqlite.freeBytes());
    }
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  delivery(attempt: DeliveryAttempt): void {
    this.deliveries.inc({ outcome: attempt.outcome, class: statusClass(attempt) });
  }

  /** Counts one accepted message, or one refusal (a recipient at RCPT, a message at DATA) by its reason. */
  inbound(refusal?: unknown): void {
    if (refusal === undefined) this.inboundAccepted.inc();
    else this.inboundRejected.inc({ reason: rejectionReason(refusal) });
  }

  /** A client's TLS failed on an SMTP listener (smtp/listener-errors.ts). */
  smtpTlsFailure(listener: 'mx' | 'submission'): void {
    this.tlsFailures.inc({ listener });
  }

  /**
   * Koa middleware timing the API's requests (those under `prefix`), labelled by the route pattern the router
   * matched, without the prefix (`/emails/:id`), so a raw id never becomes a label value. Mounted outside the
   * error envelope (http/server.ts), it sees the status that was answered.
   */
  timeApi(prefix: string) {
    return async (ctx: ApiRequest, next: () => Promise<unknown>): Promise<void> => {
      const started = performance.now();
      try {
        await next();
      } finally {
        if (ctx.path === prefix || ctx.path.startsWith(`${prefix}/`)) this.apiRequests.observe(apiLabels(ctx, prefix), (performance.now() - started) / 1000);
      }
    };
  }

  /** An attempt's HTTP status (null when the endpoint never answered); no attempt at all counts nothing. */
  webhookDelivery(attempt: { status: number | null } | null): void {
    if (attempt) this.webhookDeliveries.inc({ outcome: attempt.status === null ? 'unreachable' : attempt.status >= 200 && attempt.status < 300 ? 'delivered' : 'rejected' });
  }

  trackingVisit(outcome: 'recorded' | 'repeat' | 'limited'): void {
    this.trackingVisits.inc({ outcome });
  }

  /** A live event stream refused (by the limit it would pass) or ended for falling behind. */
  eventStream(what: { refused: 'credential' | 'address' | 'workspace' | 'box' } | 'dropped'): void {
    if (what === 'dropped') this.streamsDropped.inc();
    else this.streamsRefused.inc({ limit: what.refused });
  }

  /** One password hash started, or one caller turned away by the box-wide bound (account/password-gate.ts). */
  passwordHash(outcome: 'computed' | 'busy'): void {
    this.passwordHashes.inc({ outcome });
  }

  /** Where the password-hash queue's state is read at each scrape. */
  watchPasswordHashes(state: () => { running: number; waiting: number }): void {
    this.hashQueueState = state;
  }

  /** One blocklist query and what came of it (dns/blocklist.ts). */
  blocklistLookup(list: 'dnsbl' | 'uribl', zone: string, outcome: 'listed' | 'clear' | 'unusable' | 'timeout' | 'error'): void {
    this.blocklistLookups.inc({ list, zone, outcome });
  }

  /** rspamd asked about one received message: a verdict came, or the message went on without one. */
  rspamdCheck(outcome: 'answered' | 'unavailable'): void {
    this.rspamdChecks.inc({ outcome });
  }

  writerBatch(commit: 'writer' | 'main', calls: number): void {
    this.batchSizes.observe({ commit }, calls);
  }
}

interface ApiRequest {
  path: string;
  method: string;
  status: number;
  /** Set by @koa/router to the pattern of the route that answered; absent when none did (401 at the gate, 404). */
  _matchedRoute?: string | RegExp;
}

function apiLabels(ctx: ApiRequest, prefix: string) {
  const matched = typeof ctx._matchedRoute === 'string' && ctx._matchedRoute.startsWith(prefix) ? ctx._matchedRoute.slice(prefix.length) || '/' : 'unmatched';
  return { method: ctx.method, route: matched, status_class: `${Math.floor(ctx.status / 100)}xx` };
}

/** The class of the enhanced status code (RFC 3463), else of the reply code; without either, what the outcome implies. */
export function statusClass({ outcome, code, enhanced }: DeliveryAttempt): '2' | '4' | '5' {
  const first = enhanced?.[0] ?? (code === null ? undefined : String(code)[0]);
  if (first === '2' || first === '4' || first === '5') return first;
  return outcome === 'delivered' ? '2' : outcome === 'deferred' ? '4' : '5';
}

// Enhanced codes the MX listener answers with (receive/route.ts, receive/receive.ts, smtp/mx.ts), named.
const REASONS: Record<string, string> = {
  '5.1.1': 'unknown_recipient',
  '5.2.1': 'mailbox_disabled',
  '5.7.1': 'relay_denied',
  '5.3.4': 'too_big',
  '5.5.2': 'smuggling',
  '5.4.6': 'loop',
  '5.6.0': 'malformed',
  '4.4.5': 'too_many_messages',
  '4.3.0': 'temporary',
};

/** The reason of a client refused for a DNS blocklist's listing (5.7.1, like relaying; smtp/door.ts). */
export const BLOCKLISTED = 'blocklisted';

/** A bounded label for a refusal: named by its enhanced code; anything not an SmtpError was our fault (451). */
export function rejectionReason(err: unknown): string {
  if (!(err instanceof SmtpError)) return 'local_error';
  if (err.reason) return err.reason;
  const enhanced = /^([245]\.\d{1,3}\.\d{1,3})\b/.exec(err.message)?.[1];
  return (enhanced && REASONS[enhanced]) ?? (err.responseCode >= 500 ? 'other_permanent' : 'other_temporary');
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0; // no WAL file between checkpoints on some systems, or the box was just created
  }
}
