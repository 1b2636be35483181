// The outbound queue's scheduler (Postfix's qmgr), the only place that retries: the pump, its timers, claims
// (claims.ts) and crash recovery; per batch it has the copies made (signed-copies.ts), delivers per destination
// and has the outcomes recorded (record.ts). It must not compose, sign, speak SMTP or write outcomes itself.
import type { App } from '../context.ts';
import type { OutboundMessage, Transport } from './deliver.ts';
import type { Relay } from './relays.ts';
import type { RetryPolicy } from './policy.ts';
import { FullDiskNotice } from '../db/full-disk.ts';
import { claimDue, nextDueAt, releaseAbandoned, releaseClaims, releaseOrphans, releaseUnheld, type Claimed } from './claims.ts';
import { forgetNodes, nodesOnRecord, stoppedNodes } from '../cluster/nodes.ts';
import type { SignedCopies } from './signed-copies.ts';
import { localFailure, recordOutcomes } from './record.ts';

export interface QueueOptions {
  policy: RetryPolicy;
  /** Recipients being worked on at once. */
  maxInFlight?: number;
  /** Recipients claimed per UPDATE. */
  batchSize?: number;
  /** A claim older than this is considered abandoned (its worker hung or died) and is put back. */
  leaseMs?: number;
  /** How often to look for work nobody woke us for (retries coming due, `queue flush` from the CLI). */
  pollMs?: number;
}

const RELEASE_EVERY_MS = 60_000;
/** How often the nodes on record are looked over for stopped ones (cluster/nodes.ts NODE_LEASE_MS). */
const SWEEP_EVERY_MS = 15_000;
const CLAIM_BACKOFF_MAX_MS = 30_000;
/** How long to wait after the n-th claim in a row failed: 1 s, 2 s, 4 s ... up to CLAIM_BACKOFF_MAX_MS. */
const claimBackoff = (n: number) => Math.min(CLAIM_BACKOFF_MAX_MS, 1000 * 2 ** Math.min(n - 1, 15));

export class Queue {
  /** The recipients this node is attempting: what it holds claimed, as far as it knows. */
  private readonly holding = new Set<number>();
  /**
   * A pump failed, perhaps in its claim's commit: the claim may have gone through unheard. The next pump puts back
   * whatever the store says this node holds beyond `holding` (releaseUnheld) before it claims.
   */
  private claimsUnsure = false;
  private stopping = false;
  private wakeQueued = false;
  /** Claims that failed in a row (the store could not commit): the next pump waits longer each time. */
  private failedClaims = 0;
  private pumping = false;
  private pumpAgain = false;
  private releasedAt = 0;
  private sweptAt = 0;
  /** Recipients of batches that failed (the store could not give their copies or take their outcomes). */
  private readonly putBack: number[] = [];
  private orphansReleased = false;
  /** Say once that claims, or the outcomes of a batch, could not be stored for a full disk, and once that they are again. */
  private readonly fullDisk: FullDiskNotice;
  private readonly outcomesDisk: FullDiskNotice;
  private timer: NodeJS.Timeout | null = null;
  private readonly running = new Set<Promise<void>>();
  private readonly maxInFlight: number;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;

  constructor(
    private readonly app: App,
    /** Shared with presign.ts, so an email is signed once whoever asks first. */
    private readonly copies: SignedCopies,
    private readonly deliverer: Transport,
    private readonly opts: QueueOptions,
  ) {
    this.maxInFlight = opts.maxInFlight ?? 1000;
    this.batchSize = opts.batchSize ?? 200;
    this.leaseMs = opts.leaseMs ?? 30 * 60_000;
    this.pollMs = opts.pollMs ?? 1000;
    this.fullDisk = new FullDiskNotice(app.log, 'queue: claiming work');
    this.outcomesDisk = new FullDiskNotice(app.log, 'queue: recording delivery outcomes (recipients go back to the queue once the disk has room)');
  }

  /** Puts back what stopped nodes left claimed (a crash, kill -9), then starts working. */
  start(): void {
    void this.pump();
  }

  /** Look for due work soon; many wakes in one turn of the event loop make one pump. */
  wake(): void {
    if (this.wakeQueued || this.stopping) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      void this.pump();
    });
  }

  /** Stops claiming and waits for the attempts under way to finish and be recorded. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    while (this.pumping || this.running.size) await Promise.allSettled([...this.running, new Promise((r) => setTimeout(r, 10))]);
  }

  private async pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        // Not on record yet (the store could not write at start): nothing can be claimed in its name.
        if (!this.app.node.id) break;
        if (this.putBack.length) await this.releaseFailed();
        if (!this.orphansReleased || this.app.clock.now() - this.sweptAt >= SWEEP_EVERY_MS) await this.sweep();
        if (this.app.clock.now() - this.releasedAt >= RELEASE_EVERY_MS) {
          this.releasedAt = this.app.clock.now();
          const releasedAt = this.releasedAt;
          await this.app.store.write(() => releaseAbandoned(releasedAt, this.leaseMs));
        }
        if (this.claimsUnsure) await this.releaseUnheld();
        while (!this.stopping && this.holding.size < this.maxInFlight) {
          const limit = Math.min(this.batchSize, this.maxInFlight - this.holding.size);
          // The claim is a write: it rides the group commit instead of paying an fsync of its own.
          const rows = await this.app.store.write(() => claimDue(this.app.clock.now(), limit, this.app.node.id), { acknowledged: false });
          if (rows.length === 0) break;
          for (const r of rows) this.holding.add(r.id);
          const work: Promise<void> = this.attempt(rows)
            .then(
              () => this.outcomesDisk.succeeded(),
              (err) => {
                // Put back by the next pump that can write (a full disk, PostgreSQL out of reach: soon after).
                this.putBack.push(...rows.map((r) => r.id));
                if (!this.outcomesDisk.failed(err)) this.app.log.error('queue: batch failed; its recipients go back to the queue', { err });
              },
            )
            .finally(() => {
              for (const r of rows) this.holding.delete(r.id);
              this.running.delete(work);
              this.wake();
            });
          this.running.add(work);
        }
      } while (this.pumpAgain && !this.stopping);
      this.failedClaims = 0;
      this.fullDisk.succeeded();
    } catch (err) {
      // Due work would make the next pump at once: a store that cannot commit (a full disk) must not be retried
      // in a tight loop. The wait doubles to CLAIM_BACKOFF_MAX_MS; a full disk is a warning, not our fault.
      this.failedClaims++;
      this.claimsUnsure = true;
      this.app.health.observe(err);
      const retryMs = claimBackoff(this.failedClaims);
      if (!this.fullDisk.failed(err)) this.app.log.error('queue: could not claim work; trying again shortly', { err, retryMs });
    } finally {
      this.pumping = false;
    }
    if (!this.stopping) await this.schedule(this.failedClaims ? claimBackoff(this.failedClaims) : undefined);
  }

  private async releaseUnheld(): Promise<void> {
    const back = await this.app.store.write(() => releaseUnheld(this.app.node.id, [...this.holding], this.app.clock.now()));
    this.claimsUnsure = false;
    if (back) this.app.log.warn('queue: recipients claimed by a write whose answer was lost are queued again', { count: back });
  }

  /** Puts back the recipients of batches that failed; kept for the next pump if the store still cannot write. */
  private async releaseFailed(): Promise<void> {
    const ids = this.putBack.splice(0);
    try {
      await this.app.store.write(() => releaseClaims(ids, this.app.node.id, this.app.clock.now()));
    } catch (err) {
      this.putBack.push(...ids);
      throw err;
    }
  }

  /**
   * Forgets the nodes that stopped and puts back what they held (at the first pump, what processes before this
   * one left too); in the pump rather than before it: on a full disk this write fails, and the pump's back-off
   * tries it again instead of the start failing (catalogue DUR-13).
   */
  private async sweep(): Promise<void> {
    const now = this.app.clock.now();
    // Whether a node on this host still runs is asked of the system, between the read and the write.
    const stopped = stoppedNodes(await this.app.store.read(nodesOnRecord()), this.app.node.id, now);
    if (stopped.length || !this.orphansReleased) {
      const back = await this.app.store.write(function* () {
        yield* forgetNodes(stopped);
        return yield* releaseOrphans(now);
      });
      if (back) this.app.log.warn('queue: recipients left in flight by a node that stopped are queued again', { count: back, nodes: stopped });
    }
    this.orphansReleased = true;
    this.sweptAt = now;
  }

  private async schedule(minDelayMs = 0): Promise<void> {
    // A store out of reach (PostgreSQL restarting): look again at the next poll, whose pump says why and backs off.
    const next = await this.app.store.read(nextDueAt()).catch(() => null);
    // stop() came while the store was asked: no timer may outlive it.
    if (this.stopping) return;
    if (this.timer) clearTimeout(this.timer);
    const delay = Math.max(minDelayMs, next === null ? this.pollMs : Math.min(this.pollMs, Math.max(0, next - this.app.clock.now())));
    this.timer = setTimeout(() => void this.pump(), delay);
    this.timer.unref();
  }

  /** One attempt for a batch of claimed recipients: their copies, one delivery per destination, the outcomes recorded. */
  private async attempt(rows: Claimed[]): Promise<void> {
    const { copies, unsigned } = await this.copies.forRecipients(rows);
    const notSent = rows.filter((r) => unsigned.has(r.id));
    if (notSent.length) {
      const failures = notSent.map((r) => {
        const { permanent, reason } = unsigned.get(r.id)!;
        return localFailure(r, permanent, reason);
      });
      await recordOutcomes(this.app, this.opts.policy, notSent, failures);
    }

    // A destination is a recipient domain's MX hosts, or a relay: everything a relay carries is one destination.
    const byDestination = new Map<string, { domain: string; relay: Relay | null; group: Claimed[] }>();
    for (const r of rows) {
      const copy = copies.get(r.id);
      if (!copy) continue;
      const relay = this.deliverer.relayFor(copy.senderDomain, r.domain);
      const key = relay ? relay.id : `mx:${r.domain}`;
      const destination = byDestination.get(key);
      if (destination) destination.group.push(r);
      else byDestination.set(key, { domain: r.domain, relay, group: [r] });
    }
    await Promise.all(
      [...byDestination.values()].map(async ({ domain, relay, group }) => {
        // One transaction per shared copy (all its recipients at this destination), one per personal copy.
        const messages = new Map<string, OutboundMessage>();
        for (const r of group) {
          const copy = copies.get(r.id)!;
          const key = copy.shared ? r.email_id : `${r.email_id}/${r.id}`;
          const m = messages.get(key) ?? { id: r.email_id, envelopeFrom: copy.envelopeFrom, recipients: [], raw: copy.raw };
          m.recipients.push(r.recipient);
          messages.set(key, m);
        }
        const outcomes = await this.deliverer.deliver(domain, [...messages.values()], relay);
        await recordOutcomes(this.app, this.opts.policy, group, outcomes);
      }),
    );
  }
}
