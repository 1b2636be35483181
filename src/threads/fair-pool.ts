// Worker threads shared fairly between keys (workspaces): at most perKey jobs of one key run at once, the rest
// wait in a bounded line of their key, and a thread that comes free goes to the waiting key with the fewest
// running, in turn among equals. So a burst of one key's heavy jobs delays another key's job by at most the jobs
// already running (nginx limit_conn with a queue per client). Past the lines' bounds run() refuses at once with
// Busy, holding nothing.
import { FairQueue } from './fair-queue.ts';
import { WorkerPool, type JobSource, type PoolOptions } from './worker-pool.ts';

export interface FairPoolOptions extends Omit<PoolOptions, 'jobsPerWorker'> {
  /** Jobs of one key running at once. */
  perKey: number;
  /** Jobs of one key waiting for a thread; one more is Busy. */
  waitingPerKey: number;
  /** Jobs of all keys waiting; one more is Busy. */
  waitingTotal: number;
}

/** A job refused because its key's line (or the pool's) is full; nothing of it ran or waits. */
export class Busy extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = 'Busy';
  }
}

interface Turn<J, R> {
  key: string;
  source: JobSource<J>;
  resolve: (result: R) => void;
  reject: (err: Error) => void;
}

export class FairPool<J, R> {
  private readonly pool: WorkerPool<J, R>;
  /** Waiting jobs per key, handed out to the key with the fewest running, in turn among equals. */
  private readonly lines = new FairQueue<Turn<J, R>>();
  private readonly runningByKey = new Map<string, number>();
  private running = 0;

  constructor(private readonly opts: FairPoolOptions) {
    // One job per thread: a render holds its thread until it ends, so a second job posted beside it would only
    // wait there, with its budget running, instead of in its key's line here.
    this.pool = new WorkerPool<J, R>({ ...opts, jobsPerWorker: 1 });
  }

  /** Threads, hence jobs of all keys running at once. */
  get size(): number {
    return this.pool.size;
  }

  /** Runs the job when its key's turn comes; `source` as a function is made only then (worker-pool.ts). */
  run(key: string, source: JobSource<J>): Promise<R> {
    if (!this.startsNow(key)) {
      const waiting = this.lines.sizeOf(key);
      if (waiting >= this.opts.waitingPerKey) return Promise.reject(new Busy(`${this.opts.name}: ${waiting} jobs of this workspace are already waiting`, 1));
      if (this.lines.size >= this.opts.waitingTotal) return Promise.reject(new Busy(`${this.opts.name}: ${this.lines.size} jobs are already waiting`, 1));
      return new Promise<R>((resolve, reject) => this.lines.push(key, { key, source, resolve, reject }));
    }
    return this.start(key, source);
  }

  /** Jobs running and waiting, for key or all keys. */
  load(key?: string): { running: number; waiting: number } {
    if (key === undefined) return { running: this.running, waiting: this.lines.size };
    return { running: this.runningByKey.get(key) ?? 0, waiting: this.lines.sizeOf(key) };
  }

  /** Refuses the waiting jobs and ends the threads (failing the jobs on them). */
  async close(): Promise<void> {
    const closed = new Error(`${this.opts.name} pool closed before the job ran`);
    for (const turn of this.lines.drain()) turn.reject(closed);
    await this.pool.close();
  }

  private startsNow(key: string): boolean {
    return this.running < this.pool.size && (this.runningByKey.get(key) ?? 0) < this.opts.perKey;
  }

  private start(key: string, source: JobSource<J>): Promise<R> {
    this.running++;
    this.runningByKey.set(key, (this.runningByKey.get(key) ?? 0) + 1);
    return this.pool.runFrom(source).finally(() => {
      this.running--;
      const left = this.runningByKey.get(key)! - 1;
      if (left === 0) this.runningByKey.delete(key);
      else this.runningByKey.set(key, left);
      this.next();
    });
  }

  /** Hands free threads to waiting jobs: first to the key with the fewest running, in turn among equals. */
  private next(): void {
    while (this.running < this.pool.size) {
      const turn = this.lines.take((key) => {
        const running = this.runningByKey.get(key) ?? 0;
        return running < this.opts.perKey ? running : Infinity;
      });
      if (!turn) return;
      this.start(turn.key, turn.source).then(turn.resolve, turn.reject);
    }
  }
}
