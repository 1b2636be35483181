// Delivering the outbox: due deliveries are claimed, signed with Standard Webhooks (the `standardwebhooks`
// package: webhook-id, webhook-timestamp, webhook-signature) and POSTed through the SSRF-guarded request of
// dns/safe-fetch.ts, with the slots shared per workspace and endpoint (fair-share.ts), so slow endpoints only
// ever wait on themselves: sending, receiving and other workspaces' webhooks never wait on a webhook.
import { Webhook } from 'standardwebhooks';
import type { App } from '../context.ts';
import { boxSecret } from '../db/box-secret.ts';
import { FullDiskBackoff } from '../db/full-disk.ts';
import { FetchFailed, FetchRefused, safeRequest } from '../dns/safe-fetch.ts';
import { eventOf } from '../emails/events.ts';
import { endpointOf, signingSecrets } from './endpoints.ts';
import { DEFAULT_SHARES, type Shares } from './fair-share.ts';
import { claimDue, KEEP_FINISHED_MS, markFailed, pruneFinished, recordAttempt, storePayload, unclaim, type Attempt, type DeliveryRow } from './outbox.ts';
import { eventPayload } from './payload.ts';

const PRUNE_EVERY_MS = 60 * 60_000;
/** The longest wait between tries while claiming or recording fails (a full disk). */
const MAX_BACKOFF_MS = 30_000;

export interface DispatchOptions {
  shares?: Partial<Shares>;
  pollMs?: number;
  /** A 2xx must arrive within this. */
  timeoutMs?: number;
  /** Delivered and failed deliveries are kept this long (retention_webhook_days). */
  keepFinishedMs?: number;
}

/** The headers of one signed delivery; every secret in its overlap signs (space-separated, as the spec allows). */
export function signedHeaders(secrets: string[], id: string, at: Date, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Mailwright-Webhooks',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(id, at, body)).join(' '),
  };
}

export class WebhookDispatcher {
  /** Slots held by attempts in flight, per endpoint and per workspace. */
  private readonly held = { endpoints: new Map<string, number>(), workspaces: new Map<string, number>() };
  private readonly running = new Set<Promise<void>>();
  private inFlight = 0;
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private prunedAt = 0;
  private stopped = false;
  private readonly shares: Shares;
  private readonly pollMs: number;
  private readonly timeoutMs: number;
  private readonly keepFinishedMs: number;
  private readonly backoff: FullDiskBackoff;

  constructor(
    private readonly app: App,
    opts: DispatchOptions = {},
  ) {
    this.shares = { ...DEFAULT_SHARES, ...opts.shares };
    this.pollMs = opts.pollMs ?? 250;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.keepFinishedMs = opts.keepFinishedMs ?? KEEP_FINISHED_MS;
    this.backoff = new FullDiskBackoff(app.log, { name: 'webhooks', baseMs: this.pollMs, maxMs: MAX_BACKOFF_MS });
  }

  start(): void {
    this.schedule(0);
  }

  /** Look now (a test delivery was added, a replay asked for, an attempt finished); not while backing off. */
  wake(): void {
    if (!this.stopped && !this.backoff.retrying) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled([...this.running]);
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.ticking) return;
    this.ticking = true;
    try {
      const now = this.app.clock.now();
      if (now - this.prunedAt >= PRUNE_EVERY_MS) {
        this.prunedAt = now;
        await this.app.store.write(() => pruneFinished(now, this.keepFinishedMs));
      }
      // While the disk is full one delivery at a time tries whether there is room: fewer sent only to be
      // sent again when their record fails.
      const room = Math.min(this.shares.slots - this.inFlight, this.backoff.full ? 1 : Infinity);
      if (room > 0) {
        const claimed = await this.claim(room);
        for (const d of claimed) this.attempt(d);
        // A claim's few bytes do not prove the disk has room for an attempt's record: only a record ends a full disk.
        if (!this.backoff.full) this.backoff.wrote();
      }
    } catch (err) {
      if (!this.backoff.failed(err)) this.app.log.error('webhooks: claiming deliveries failed; trying again shortly', { err, retryMs: this.backoff.delayMs() });
    } finally {
      this.ticking = false;
      if (!this.stopped) this.schedule(this.backoff.delayMs());
    }
  }

  /** Claims due deliveries and makes the body of each one tried for the first time (then kept for retries). */
  private async claim(room: number): Promise<Array<DeliveryRow & { payload: string }>> {
    const { clock, config } = this.app;
    const { shares, held } = this;
    return this.app.store.write(function* () {
      const out: Array<DeliveryRow & { payload: string }> = [];
      for (const d of yield* claimDue(clock.now(), room, shares, held)) {
        if (d.payload !== null) {
          out.push(d as DeliveryRow & { payload: string });
          continue;
        }
        const event = d.event_id && d.email_id ? yield* eventOf(d.email_id, d.event_id) : undefined;
        const payload = event ? yield* eventPayload(config.publicUrl, event) : null;
        if (!payload) {
          yield* markFailed(clock.now(), d.id, 'the event is gone: its email was deleted');
          continue;
        }
        const body = JSON.stringify(payload);
        yield* storePayload(d.id, body);
        out.push({ ...d, payload: body });
      }
      return out;
    });
  }

  private attempt(d: DeliveryRow & { payload: string }): void {
    this.inFlight++;
    this.hold(d, 1);
    const run = this.post(d)
      .then((outcome) => (this.app.metrics?.webhookDelivery(outcome), outcome))
      .then((outcome) => this.app.store.write(() => (outcome ? recordAttempt(this.app.clock.now(), d, outcome) : unclaim(this.app.clock.now(), d.id))))
      .then(
        () => this.backoff.wrote(),
        (err) => {
          if (!this.backoff.failed(err)) this.app.log.error('webhooks: recording a delivery failed; it is tried again when its lease ends', { err, delivery: d.id });
        },
      )
      .finally(() => {
        this.inFlight--;
        this.hold(d, -1);
        this.running.delete(run);
        this.wake();
      });
    this.running.add(run);
  }

  private hold(d: DeliveryRow, n: number): void {
    for (const [counts, key] of [[this.held.endpoints, d.webhook_id], [this.held.workspaces, d.workspace_id]] as const) {
      const now = (counts.get(key) ?? 0) + n;
      if (now > 0) counts.set(key, now);
      else counts.delete(key);
    }
  }

  /** The attempt's outcome; null when the endpoint was disabled after the claim (nothing was sent). */
  private async post(d: DeliveryRow & { payload: string }): Promise<Attempt | null> {
    const { store, clock, config, dns, fetchCa } = this.app;
    const w = await this.app.store.read(endpointOf(d.webhook_id));
    if (!w || w.enabled !== 1) return null;
    const started = performance.now();
    const headers = signedHeaders(signingSecrets(await boxSecret(store), w, clock.now()), d.id, new Date(clock.now()), d.payload);
    try {
      const res = await safeRequest(
        w.url,
        { method: 'POST', headers, body: Buffer.from(d.payload) },
        { resolver: dns, allowPrivate: config.allowPrivateFetch, ca: fetchCa, timeoutMs: this.timeoutMs, maxBytes: 4096, truncate: true },
      );
      return { status: res.status, response: res.body.toString('utf8'), error: null, durationMs: res.durationMs };
    } catch (err) {
      const why = err instanceof FetchRefused || err instanceof FetchFailed ? err.message : `unexpected: ${(err as Error).message}`;
      return { status: null, response: '', error: why, durationMs: performance.now() - started };
    }
  }
}
