// Signing at acceptance, as OpenDKIM (at receipt) and Mox (at submission) do: each email sent now is composed
// and DKIM-signed in the signing threads as soon as its send is committed, not when the queue first claims it.
// The copy is then ready before the first attempt: a backlog drains at delivery speed (after an outage of the
// network or a relay, the queue holds mail ready to go), GET /emails/:id/raw answers at once, and a message
// that cannot be signed is known before the queue reaches it. The queue still signs whatever is not signed
// yet (signed-copies.ts makes each copy once, whoever asks first), so this list lives in memory only: on start
// it is refilled from the store with the queued emails never signed. It must not claim or deliver.
import type { App } from '../context.ts';
import { column } from '../db/query.ts';
import type { SignedCopies } from './signed-copies.ts';

export interface PresignOptions {
  /** Emails signed at once: enough to keep every signing thread busy, few enough that the queue's own requests wait behind little. */
  concurrency: number;
  /** Ids waiting here at most; beyond it the queue signs them at their first attempt, as before. */
  maxWaiting?: number;
}

/** Emails queued but never signed, soonest due first. */
const neverSigned = (limit: number) =>
  column<string>(
    `SELECT d.email_id FROM deliveries d JOIN emails e ON e.id = d.email_id
     WHERE d.state IN ('queued', 'deferred') AND d.attempts = 0 AND e.signed_at IS NULL GROUP BY d.email_id ORDER BY min(d.next_attempt_at) LIMIT ?`,
    limit,
  );

export class Presigner {
  private readonly waiting: string[] = [];
  /** The look for what a previous run left unsigned (start), which settled() waits for. */
  private starting: Promise<void> = Promise.resolve();
  private next = 0;
  private running = 0;
  private stopping = false;
  private readonly idle = new Set<() => void>();
  private readonly maxWaiting: number;

  constructor(
    private readonly app: App,
    private readonly copies: SignedCopies,
    private readonly opts: PresignOptions,
  ) {
    this.maxWaiting = opts.maxWaiting ?? 20_000;
  }

  /** Queues the emails a send just committed for signing now. */
  accepted(emailIds: readonly string[]): void {
    if (this.stopping) return;
    for (const id of emailIds) if (this.waiting.length - this.next < this.maxWaiting) this.waiting.push(id);
    this.pump();
  }

  /** Signs what a previous run accepted but never signed (it stopped, or its list was full), soonest due first. */
  start(): void {
    this.starting = this.app.store.read(neverSigned(this.maxWaiting)).then(
      (ids) => this.accepted(ids),
      (err: unknown) => this.app.log.warn('presign: could not look for emails left unsigned; the queue signs them at their first attempt', { err }),
    );
  }

  /** Takes nothing more and waits for the signing under way. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.waiting.length = this.next = 0;
    if (this.running) await new Promise<void>((resolve) => this.idle.add(resolve));
  }

  /** Resolves once nothing is waiting or being signed (benchmarks, tests). */
  async settled(): Promise<void> {
    await this.starting;
    if (!this.running && this.next >= this.waiting.length) return;
    return new Promise((resolve) => this.idle.add(resolve));
  }

  private pump(): void {
    while (!this.stopping && this.running < this.opts.concurrency && this.next < this.waiting.length) {
      const id = this.waiting[this.next++];
      this.running++;
      // A failure here is the queue's to report: its first attempt meets the same error and records it.
      this.copies
        .prepare(id)
        .catch((err) => this.app.log.debug('presign: not signed at acceptance; the queue will try at its first attempt', { emailId: id, err }))
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
    if (this.next >= this.waiting.length) this.waiting.length = this.next = 0;
    if (!this.running && this.next >= this.waiting.length) {
      for (const resolve of this.idle) resolve();
      this.idle.clear();
    }
  }
}
