// A piece of background work that runs beside the mail on the event loop: one pass at a time, started at once,
// woken early when new work is recorded, polled otherwise, and stopped after the pass in flight. Subclasses
// write the pass (`run`) and say when to look again (`schedule`).
export abstract class BackgroundLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  protected stopped = false;

  start(): void {
    this.schedule(0);
  }

  /** New work was recorded: start on it now instead of at the next poll. */
  wake(): void {
    if (!this.running && !this.stopped) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** The next pass in `ms`; a pass already planned is replaced. */
  protected schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.run().finally(() => (this.running = null));
    }, ms);
    this.timer.unref();
  }

  protected abstract run(): Promise<void>;
}
