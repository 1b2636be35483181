// Free space under the data directory, watched so the box refuses new work before the disk is full rather
// than after: below the margin, inbound SMTP answers 452 4.3.1 at MAIL and sends answer 507, and
// both resume by themselves once space returns. A statfs every few seconds costs nothing.
import { statfsSync } from 'node:fs';
import type { Log } from '../log.ts';

const EVERY_MS = 5_000;

export class FreeSpace {
  private lowNow = false;
  private bytesNow = Number.POSITIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly dir: string,
    private marginBytes: number,
    /** Tests give their own measure; the box asks the filesystem. */
    private readonly measure: (dir: string) => number = (dir) => {
      const s = statfsSync(dir);
      return Number(s.bavail) * Number(s.bsize);
    },
  ) {}

  /** Looks now and every few seconds; each crossing of the margin is logged once. */
  start(log: Log): void {
    const onChange = (low: boolean, bytes: number) =>
      low
        ? log.warn('free space under the data directory is below min_free_space_mb: new mail and sends are refused until there is more', { freeBytes: bytes, dataDir: this.dir })
        : log.info('free space is back above min_free_space_mb: mail and sends are accepted again', { freeBytes: bytes });
    const check = () => {
      try {
        this.bytesNow = this.measure(this.dir);
      } catch {
        return; // a failed statfs says nothing about space: keep the last answer
      }
      const low = this.marginBytes > 0 && this.bytesNow < this.marginBytes;
      if (low !== this.lowNow) onChange(low, this.bytesNow);
      this.lowNow = low;
    };
    check();
    this.timer = setInterval(check, EVERY_MS);
    this.timer.unref();
  }

  /** A new min_free_space_mb (`systemctl reload`): judged at the next look, within seconds. */
  setMargin(bytes: number): void {
    this.marginBytes = bytes;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Below the margin at the last look. */
  get low(): boolean {
    return this.lowNow;
  }

  get bytes(): number {
    return this.bytesNow;
  }
}
