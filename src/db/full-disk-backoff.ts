// How a background loop whose writes fail waits and tells (catalogue DUR-13): the wait before its next try
// doubles up to a cap, and a full disk is one warning line with its cause when it starts and one line when a
// write succeeds again, never a line (or a stack trace) per try.
import type { Log } from '../log.ts';
import { errorCode, storageFault } from './health.ts';

export interface BackoffOptions {
  /** The loop's name, first in its lines ("webhooks"). */
  name: string;
  /** What waits while the disk is full, and what resumes: "deliveries". */
  work: string;
  /** The wait while all is well. */
  baseMs: number;
  maxMs: number;
}

export class FullDiskBackoff {
  private failures = 0;
  private fullSince: number | null = null;
  private failedWrites = 0;

  constructor(
    private readonly log: Log,
    private readonly opts: BackoffOptions,
  ) {}

  /** The disk was full at the last failed write and no write has succeeded since. */
  get full(): boolean {
    return this.fullSince !== null;
  }

  /** The last try failed: the loop waits delayMs() and is not to be woken sooner. */
  get retrying(): boolean {
    return this.failures > 0;
  }

  /** Any failure of the loop; true when it was the full disk (logged here, once a run), else the caller's to log. */
  failed(err: unknown): boolean {
    this.failures++;
    if (storageFault(err) !== 'full') return false;
    this.failedWrites++;
    if (this.fullSince === null) {
      this.fullSince = Date.now();
      this.log.warn(`${this.opts.name}: the disk is full; ${this.opts.work} wait until a write succeeds, trying again at growing intervals`, {
        cause: errorCode(err),
        reason: (err as Error).message,
        maxRetryMs: this.opts.maxMs,
      });
    }
    return true;
  }

  /** A write of the loop committed: the failures in a row end, and a full disk's run is over. */
  wrote(): void {
    this.failures = 0;
    if (this.fullSince === null) return;
    this.log.info(`${this.opts.name}: the disk has room again; ${this.opts.work} resume`, { fullForMs: Date.now() - this.fullSince, failedWrites: this.failedWrites });
    this.fullSince = null;
    this.failedWrites = 0;
  }

  /** How long to wait before the next try: the base while all is well, doubling with each failure in a row. */
  delayMs(): number {
    return this.failures === 0 ? this.opts.baseMs : Math.min(this.opts.maxMs, this.opts.baseMs * 2 ** Math.min(this.failures, 20));
  }
}
