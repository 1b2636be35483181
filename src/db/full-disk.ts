// How a background job whose writes fail on a full disk tells it (catalogue DUR-13): one warning line with the
// cause when the disk fills, one line when a write succeeds again, never a line (or a stack trace) per try.
// FullDiskBackoff adds the wait of a loop that backs off: doubling with each failure in a row, up to a cap.
import type { Log } from '../log.ts';
import { errorCode, storageFault } from './health.ts';

export class FullDiskNotice {
  private fullSince: number | null = null;
  private failedWrites = 0;

  /** `what` names the job, first in its lines ("webhooks", "queue: claiming work"). */
  constructor(
    private readonly log: Log,
    private readonly what: string,
  ) {}

  get isFull(): boolean {
    return this.fullSince !== null;
  }

  /** Whether `err` is a full disk (then told, the first time of a run); any other error is the caller's to log. */
  failed(err: unknown): boolean {
    if (storageFault(err) !== 'full') return false;
    this.failedWrites++;
    if (this.fullSince === null) {
      this.fullSince = Date.now();
      this.log.warn(`${this.what}: the disk is full; trying again until it has room`, { cause: errorCode(err), reason: (err as Error).message });
    }
    return true;
  }

  /** A write of the job committed: a full disk's run is over. */
  succeeded(): void {
    if (this.fullSince === null) return;
    this.log.info(`${this.what}: the disk has room again`, { fullForMs: Date.now() - this.fullSince, failedWrites: this.failedWrites });
    this.fullSince = null;
    this.failedWrites = 0;
  }
}

export class FullDiskBackoff {
  private failures = 0;
  private readonly notice: FullDiskNotice;

  constructor(
    log: Log,
    private readonly opts: { name: string; baseMs: number; maxMs: number },
  ) {
    this.notice = new FullDiskNotice(log, opts.name);
  }

  /** The disk was full at the last failed write and no write has succeeded since. */
  get full(): boolean {
    return this.notice.isFull;
  }

  /** The last try failed: the loop waits delayMs() and is not to be woken sooner. */
  get retrying(): boolean {
    return this.failures > 0;
  }

  /** Any failure of the loop; true when it was the full disk (told by the notice), else the caller's to log. */
  failed(err: unknown): boolean {
    this.failures++;
    return this.notice.failed(err);
  }

  /** A write of the loop committed: the failures in a row end, and so does a full disk's run. */
  wrote(): void {
    this.failures = 0;
    this.notice.succeeded();
  }

  /** How long to wait before the next try: the base while all is well, doubling with each failure in a row. */
  delayMs(): number {
    return this.failures === 0 ? this.opts.baseMs : Math.min(this.opts.maxMs, this.opts.baseMs * 2 ** Math.min(this.failures, 20));
  }
}
