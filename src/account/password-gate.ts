// The box-wide bound on password hashes (catalogue AUTH-13). Each scrypt hash takes about 0.4 s and 32 MiB
// on one of libuv's four threads, which fs and dns.lookup share: a few at once, and a short queue served by
// the caller's standing (login-throttle.ts rank), so a flood of guesses waits behind the owner, not in front,
// and one of the slots is kept for addresses without failures, so the owner never waits for a guess either.
// Past the queue a caller is refused at once (503 with retry-after) instead of waiting without end.
import { ApiError } from '../errors.ts';

/** Hashes at once: half of libuv's default pool, so files and DNS keep two threads. */
export const MAX_HASHES_IN_FLIGHT = 2;
/** Callers waiting for a hash: a morning's logins of a small team; the last waits about 3 s. */
export const MAX_HASHES_WAITING = 16;
/** Ranks (login-throttle.ts): an address that signed in lately, then one without failures; above, failures. */
export const SIGNED_IN_RANK = 0;
export const CLEAN_RANK = 1;
const RETRY_AFTER_S = 2;

export type GateOutcome = 'computed' | 'busy';

export interface GateOptions {
  maxInFlight: number;
  maxWaiting: number;
  /** Slots that only callers of CLEAN_RANK or better may take (at most maxInFlight - 1). */
  keptForClean: number;
  /** Told of each hash started and each caller turned away (metrics). */
  observe?: (outcome: GateOutcome) => void;
}

interface Waiter {
  rank: number;
  seq: number;
  start(): void;
  refuse(err: ApiError): void;
}

export const busy = () =>
  new ApiError(503, 'server_busy', `Too many passwords are being checked right now; try again in ${RETRY_AFTER_S} seconds`, { headers: { 'retry-after': String(RETRY_AFTER_S) } });

const abandoned = () => new ApiError(400, 'request_aborted', 'The client left before its password was checked');

export class PasswordGate {
  private running = 0;
  /** Of `running`, those of callers ranked below CLEAN_RANK (with failures). */
  private runningSuspect = 0;
  private seq = 0;
  private readonly waiting: Waiter[] = [];
  private readonly opts: GateOptions;

  constructor(opts: Partial<GateOptions> = {}) {
    const o = { maxInFlight: MAX_HASHES_IN_FLIGHT, maxWaiting: MAX_HASHES_WAITING, keptForClean: 1, ...opts };
    this.opts = { ...o, keptForClean: Math.min(o.keptForClean, o.maxInFlight - 1) };
  }

  /** Hashes running and callers waiting, now. */
  get state(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /**
   * Runs `hash` once a slot is free for its rank, before every waiter of a higher rank and after those of a
   * lower one (the older first among equals). When the queue is full, the newest waiter of the highest rank
   * is refused, or this caller if none ranks above it. A caller whose `signal` aborts while waiting leaves.
   */
  async run<T>(rank: number, hash: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw abandoned();
    // No waiter could take a free slot (startNext sees to it), so a caller that can goes first.
    if (this.canStart(rank)) this.take(rank);
    else await this.wait(rank, signal);
    try {
      this.opts.observe?.('computed');
      return await hash();
    } finally {
      this.running--;
      if (rank > CLEAN_RANK) this.runningSuspect--;
      this.startNext();
    }
  }

  private canStart(rank: number): boolean {
    const { maxInFlight, keptForClean } = this.opts;
    return this.running < maxInFlight && (rank <= CLEAN_RANK || this.runningSuspect < maxInFlight - keptForClean);
  }

  private take(rank: number): void {
    this.running++;
    if (rank > CLEAN_RANK) this.runningSuspect++;
  }

  private wait(rank: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const leave = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        leave();
        reject(abandoned());
      };
      const waiter: Waiter = {
        rank,
        seq: this.seq++,
        start: () => {
          leave();
          this.take(rank);
          resolve();
        },
        refuse: (err) => {
          leave();
          reject(err);
        },
      };
      if (this.waiting.length >= this.opts.maxWaiting) {
        const worst = this.waiting.reduce((a, b) => (b.rank > a.rank || (b.rank === a.rank && b.seq > a.seq) ? b : a));
        this.opts.observe?.('busy');
        if (worst.rank <= rank) return reject(busy());
        worst.refuse(busy());
      }
      this.waiting.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  // The best waiter first; when it cannot start, no other can (all rank the same or worse).
  private startNext(): void {
    while (this.waiting.length) {
      const best = this.waiting.reduce((a, b) => (b.rank < a.rank || (b.rank === a.rank && b.seq < a.seq) ? b : a));
      if (!this.canStart(best.rank)) return;
      best.start();
    }
  }
}
