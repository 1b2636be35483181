// Group commit: writers that arrive within a short window share one transaction and so one fsync.
// One failing writer rolls back only itself (its own savepoint, or for rerunnable work a rerun of the batch
// with savepoints); every promise settles only after the shared COMMIT returned, which is what lets SMTP
// say 250 and the API 200.
import type { Db } from './open.ts';

interface Job {
  work: () => unknown;
  acknowledged: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitOptions {
  /**
   * How long the first writer waits for company. 0 (the default) adds no wait: writers that arrived while
   * the previous commit was being fsynced are all in the next turn of the event loop and ride together,
   * which measured 20% faster than a 2 ms window (`npm run bench`).
   */
  windowMs?: number;
  /** A batch this large commits at once. */
  maxBatch?: number;
  /**
   * The jobs only read and write the database (no other effects), so running one again after a rollback is
   * safe: a batch then runs without a savepoint per job, and only when a job fails is it rolled back and run
   * again with one. FTS5 flushes its pending rows into a new segment at every savepoint, so a savepoint per
   * job cost about 500 µs per 10 KB message indexed (scratch measurement, 10 messages per commit).
   */
  rerunnable?: boolean;
  /** Sees every error a writer is rejected with (StoreHealth.observe: corruption makes the box unhealthy). */
  observe?: (error: unknown) => void;
  /** Hears the number of jobs of each batch that committed (metrics: writer batch sizes). */
  onCommit?: (jobs: number) => void;
}

export class GroupCommit {
  private pending: Job[] = [];
  private timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  private readonly windowMs: number;
  private readonly maxBatch: number;
  private readonly busyTimeoutMs: number;
  private readonly rerunnable: boolean;
  private readonly observe: (error: unknown) => void;
  private readonly onCommit?: (jobs: number) => void;
  /** When the current batch first found the write lock taken. */
  private busySince: number | null = null;
  /** Commits made and jobs carried, for tests and benchmarks. */
  readonly stats = { commits: 0, jobs: 0 };

  constructor(
    private readonly db: Db,
    opts: GroupCommitOptions = {},
  ) {
    this.windowMs = opts.windowMs ?? 0;
    this.maxBatch = opts.maxBatch ?? 256;
    this.busyTimeoutMs = Number(db.pragma('busy_timeout', { simple: true }));
    this.rerunnable = opts.rerunnable ?? false;
    this.observe = opts.observe ?? (() => {});
    this.onCommit = opts.onCommit;
  }

  /** Runs `work` (synchronous SQL) in the next shared transaction; resolves after it is durable. */
  run<T>(work: () => T): Promise<T> {
    return this.enqueue(work, true);
  }

  /**
   * Like run(), for the queue's own bookkeeping that answers nobody (claims, signed copies, attempt outcomes):
   * a transaction holding only such writes commits at synchronous=NORMAL, without an fsync of its own, and
   * becomes durable with the next acknowledged commit or checkpoint. A power loss can then undo an outcome
   * and repeat a delivery (at least once, as Postfix, which does not fsync a queue file's removal either), but
   * never lose mail: everything acknowledged still commits at FULL. The fsync per small commit had kept the
   * event loop blocked for half of the outbound benchmark.
   */
  runUnacknowledged<T>(work: () => T): Promise<T> {
    return this.enqueue(work, false);
  }

  private enqueue<T>(work: () => T, acknowledged: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work, acknowledged, resolve: resolve as (v: unknown) => void, reject });
      if (this.pending.length >= this.maxBatch) this.commitPending(false);
      else if (!this.timer) this.timer = this.windowMs > 0 ? setTimeout(() => this.commitPending(false), this.windowMs) : setImmediate(() => this.commitPending(false));
    });
  }

  /** Commits what is waiting now, waiting for the write lock if another connection holds it (shutdown). */
  flush(): void {
    this.commitPending(true);
  }

  private commitPending(patient: boolean): void {
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
      this.timer = null;
    }
    if (this.pending.length === 0) return;
    const relaxed = !this.pending.some((job) => job.acknowledged);
    if (relaxed) this.db.pragma('synchronous = NORMAL');
    try {
      let began: boolean;
      try {
        began = this.begin(patient);
      } catch (error) {
        // No transaction at all (the disk, or a lock held past the busy timeout): every waiting writer fails.
        this.observe(error);
        for (const job of this.pending.splice(0)) job.reject(error);
        return;
      }
      if (!began) {
        // Another connection is committing: try again in a moment, with what arrives meanwhile in the batch.
        this.timer = setTimeout(() => this.commitPending(false), 1);
        return;
      }
      const jobs = this.pending;
      this.pending = [];
      this.commitJobs(jobs);
    } finally {
      if (relaxed) this.db.pragma('synchronous = FULL');
    }
  }

  /**
   * BEGIN IMMEDIATE without waiting while another connection (the writer thread, or the event loop's) holds
   * SQLite's write lock: SQLite's busy handler waits by sleeping, and a sleeping event loop serves nobody.
   * Returns false when the lock is taken. After a second of that, or when `patient`, it waits as usual.
   */
  private begin(patient: boolean): boolean {
    const wait = patient || (this.busySince !== null && performance.now() - this.busySince > MAX_LOCK_POLLING_MS);
    if (!wait) this.db.pragma('busy_timeout = 0');
    try {
      this.db.prepare('BEGIN IMMEDIATE').run();
      this.busySince = null;
      return true;
    } catch (error) {
      if (wait || (error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
      this.busySince ??= performance.now();
      return false;
    } finally {
      if (!wait) this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    }
  }

  private commitJobs(jobs: Job[]): void {
    let outcomes: Outcome[];
    try {
      outcomes = (this.rerunnable && this.runTogether(jobs)) || this.runEach(jobs);
      this.db.prepare('COMMIT').run();
    } catch (error) {
      this.observe(error);
      if (this.db.inTransaction) this.db.prepare('ROLLBACK').run();
      for (const job of jobs) job.reject(error);
      return;
    }
    this.stats.commits++;
    this.stats.jobs += jobs.length;
    this.onCommit?.(jobs.length);
    jobs.forEach((job, i) => {
      const outcome = outcomes[i];
      if (outcome.ok) job.resolve(outcome.value);
      else {
        this.observe(outcome.error);
        job.reject(outcome.error);
      }
    });
  }

  /** Each job in a savepoint of its own (better-sqlite3 nests transactions as savepoints): a failing one undoes only itself. */
  private runEach(jobs: Job[]): Outcome[] {
    const outcomes: Outcome[] = [];
    for (const job of jobs) {
      try {
        outcomes.push({ ok: true, value: this.db.transaction(job.work)() });
      } catch (error) {
        outcomes.push({ ok: false, error });
        // SQLITE_FULL, IOERR and the like roll back the whole transaction; nothing after may commit alone.
        if (!this.db.inTransaction) throw error;
      }
    }
    return outcomes;
  }

  /**
   * Every job straight in the transaction; null, with all of it undone, when one fails. Not even one savepoint
   * around the batch: under a savepoint SQLite copies every page the batch changes to a sub-journal, which
   * spills to a temporary file past 64 KiB (about 15 µs per API send). Nothing precedes the batch in
   * its transaction, so undoing it is a ROLLBACK, and the rerun begins a new transaction, waiting for the lock
   * if another connection took it meanwhile.
   */
  private runTogether(jobs: Job[]): Outcome[] | null {
    try {
      return jobs.map((job): Outcome => ({ ok: true, value: job.work() }));
    } catch (error) {
      if (!this.db.inTransaction) throw error;
      this.db.prepare('ROLLBACK').run();
      this.begin(true);
      return null;
    }
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** How long a batch keeps retrying without blocking before it waits for the lock like any other writer. */
const MAX_LOCK_POLLING_MS = 1000;
