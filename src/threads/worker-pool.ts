// A pool of worker threads for CPU-heavy work kept off the event loop (composing and signing outgoing mail,
// authenticating and parsing received mail). It owns the workers and the jobs in flight: a job is answered
// once, with its result or its error. Waiting jobs are handed out fairly between the keys they carry
// (fair-queue.ts). Without a budget, a worker that dies fails its own jobs and is replaced by the next job.
// With a job budget (jobTimeoutMs) each job answers for its own work only: see PoolOptions.jobTimeoutMs.
// The worker side is `serveJobs` in the module the pool names (serve-jobs.ts).
import { availableParallelism } from 'node:os';
import { isMainThread, Worker, type ResourceLimits, type Transferable } from 'node:worker_threads';
import { builtModule } from './built-module.ts';
import { FairQueue } from './fair-queue.ts';
import { reclaimSoon } from './reclaim.ts';
import { revive, type Posted, type Reply } from './serve-jobs.ts';

export { serveJobs } from './serve-jobs.ts';
export { asBuffer, movingContents, transferable, withBuffers } from './buffers.ts';

const BOOT = new URL('./worker-boot.mjs', import.meta.url);

interface Slot<J, R> {
  worker: Worker;
  threadId: number;
  jobs: Map<number, InFlight<J, R>>;
  done: number;
  /** The worker has loaded its module: the budget of its jobs runs from now on. */
  ready: boolean;
  /** On the solo lane: it holds one job at a time. */
  solo: boolean;
  /** Ends the worker once it has had no job for PoolOptions.idleMs. */
  idle?: NodeJS.Timeout;
}

export interface WorkerStats {
  threadId: number;
  /** Jobs posted and not yet answered. */
  inFlight: number;
  /** Jobs answered, with a result or an error. */
  done: number;
  /** `solo`: a worker that runs one job at a time (PoolOptions.jobTimeoutMs). */
  lane: 'shared' | 'solo';
}

export interface PoolOptions {
  /** Names the pool in errors ("sign worker exited with code 1"). */
  name: string;
  /** The module a worker imports: it calls serveJobs(). */
  module: URL;
  size?: number;
  workerData?: Record<string, unknown>;
  resourceLimits?: ResourceLimits;
  /**
   * Jobs a worker holds at once; the rest wait here, where their data already is. A worker handed every job
   * at once starts them all, and each scavenge then copies hundreds of half-done messages: in the outbound
   * benchmark that garbage collection cost more CPU than the signing itself. Default 2.
   */
  jobsPerWorker?: number;
  /**
   * Wall-clock budget of one job (ms), from when a started worker has it. Jobs that share a worker share its
   * event loop, so one that blocks it makes the others late too: when a worker with several jobs runs past a
   * budget (or dies), it is terminated and every job it held becomes a suspect, run again alone on a solo
   * lane (soloWorkers threads, one job each) with a fresh budget. Only a job that ran alone the whole time
   * fails: with JobTimeout past its budget, or with the worker's death. Its key is then confined
   * (quarantineMs). A job whose data was transferred to the stopped worker cannot be made again and fails.
   * Set it only for pools whose jobs can run twice without harm (parsing, signing), never for one that
   * writes. Default: none.
   */
  jobTimeoutMs?: number;
  /** Threads of the solo lane (started on demand, ended when idle like the others). Default 1. */
  soloWorkers?: number;
  /**
   * How long (ms) a key whose job failed alone has its further jobs run on the solo lane, one at a time,
   * away from everyone else's; each such failure starts the time again. Jobs without a key are never
   * confined. Default QUARANTINE_MS.
   */
  quarantineMs?: number;
  /**
   * A worker that has had no job for this long (ms) is terminated; the next job starts a new one (a few tens of
   * ms: its module loads again). An idle thread keeps its V8 heap as the last burst of work left it, tens of
   * MiB each (RSS back under 160 MiB within a minute of a load). 0: workers live until close().
   * Default IDLE_MS.
   */
  idleMs?: number;
  /**
   * The threads' scheduling priority on Linux (nice, 1-19; elsewhere ignored): a pool whose work may wait while
   * the event loop and the writer want the cores. Default 0, as the process.
   */
  nice?: number;
}

export interface RunOptions {
  /**
   * Whose job it is (an SMTP client's network, a workspace): waiting jobs go first to the key with the fewest
   * in flight, and a confined key's jobs run on the solo lane. Default '': one key for every job, oldest first.
   */
  key?: string;
}

/** How long a worker may sit without a job before it is ended (PoolOptions.idleMs). */
export const IDLE_MS = 30_000;
/** How long a key whose job failed alone stays confined to the solo lane (PoolOptions.quarantineMs). */
export const QUARANTINE_MS = 10 * 60_000;
/** Keys confined at once; the one confined longest ago is let go first. */
const MAX_CONFINED = 10_000;

/** A job that ran past its pool's budget (PoolOptions.jobTimeoutMs) alone; its worker was replaced. */
export class JobTimeout extends Error {
  override name = 'JobTimeout';
}

type Made<J> = { job: J; transfer?: Transferable[] };
/** A job, or what makes it when a worker has room (its data read only then; a promise holds the room meanwhile). */
export type JobSource<J> = Made<J> | (() => Made<J> | Promise<Made<J>>);

interface Waiting<J, R> {
  source: JobSource<J>;
  key: string;
  resolve: (result: R) => void;
  reject: (err: Error) => void;
}

interface InFlight<J, R> extends Waiting<J, R> {
  /** It can go to another worker: posted with nothing transferred, or made by a function that can make it again. */
  again: boolean;
  /** Another job was on its worker at some moment while it ran: what happened to the worker may not be its doing. */
  shared: boolean;
  timer?: NodeJS.Timeout;
}

/** Workers start with the first jobs and keep the process alive until close(). */
export class WorkerPool<J, R> {
  readonly size: number;
  private readonly jobsPerWorker: number;
  private readonly soloSize: number;
  private readonly slots = new Set<Slot<J, R>>();
  /** Jobs for the shared workers. */
  private readonly waiting = new FairQueue<Waiting<J, R>>();
  /** Jobs that were on a worker stopped for a budget or a death, for the solo lane. */
  private readonly suspects = new FairQueue<Waiting<J, R>>();
  /** Jobs of confined keys, for the solo lane after the suspects. */
  private readonly confinedJobs = new FairQueue<Waiting<J, R>>();
  private readonly inFlight = new Map<string, number>();
  /** Confined keys and until when (ms since the epoch), oldest first. */
  private readonly confined = new Map<string, number>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly opts: PoolOptions) {
    this.size = Math.max(1, Math.floor(opts.size ?? availableParallelism()));
    this.jobsPerWorker = Math.max(1, Math.floor(opts.jobsPerWorker ?? 2));
    this.soloSize = opts.jobTimeoutMs ? Math.max(1, Math.floor(opts.soloWorkers ?? 1)) : 0;
  }

  run(job: J, transfer: Transferable[] = [], opts: RunOptions = {}): Promise<R> {
    return this.runFrom({ job, transfer }, opts);
  }

  /** run(), with the job made by `source` when a worker takes it. */
  runFrom(source: JobSource<J>, { key = '' }: RunOptions = {}): Promise<R> {
    if (this.closed) return Promise.reject(new Error(`${this.opts.name} pool is closed`));
    return new Promise<R>((resolve, reject) => {
      (this.isConfined(key) ? this.confinedJobs : this.waiting).push(key, { source, key, resolve, reject });
      this.dispatch();
    });
  }

  stats(): WorkerStats[] {
    return [...this.slots].map((s) => ({ threadId: s.threadId, inFlight: s.jobs.size, done: s.done, lane: s.solo ? 'solo' : 'shared' }));
  }

  /** Jobs not yet handed to a worker. */
  get queued(): number {
    return this.waiting.size + this.suspects.size + this.confinedJobs.size;
  }

  /** Rejects the jobs in flight and ends every worker. */
  async close(): Promise<void> {
    this.closed = true;
    const slots = [...this.slots];
    this.slots.clear();
    for (const slot of slots) clearTimeout(slot.idle);
    const closed = new Error(`${this.opts.name} pool closed before the job finished`);
    for (const queue of [this.waiting, this.suspects, this.confinedJobs]) for (const job of queue.drain()) job.reject(closed);
    for (const slot of slots) for (const job of this.takeJobs(slot)) job.reject(closed);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  /** Hands waiting jobs to workers with room: the key with the fewest jobs in flight first. */
  private dispatch(): void {
    const fewest = (key: string) => this.inFlight.get(key) ?? 0;
    // Suspects of keys not confined first: they are most likely innocent, and have waited already.
    const confinedLast = (key: string) => (this.isConfined(key) ? 1 : 0);
    while (this.waiting.size > 0 && !this.closed) {
      const slot = this.pickShared();
      if (!slot) break;
      this.post(slot, this.waiting.take(fewest)!);
    }
    while (this.suspects.size + this.confinedJobs.size > 0 && !this.closed) {
      const slot = this.pickSolo();
      if (!slot) break;
      this.post(slot, (this.suspects.take(confinedLast) ?? this.confinedJobs.take(fewest))!);
    }
  }

  private post(slot: Slot<J, R>, waiting: Waiting<J, R>): void {
    const { source } = waiting;
    const id = this.nextId++;
    const entry: InFlight<J, R> = { ...waiting, again: typeof source === 'function', shared: slot.jobs.size > 0 };
    for (const other of slot.jobs.values()) other.shared = true;
    slot.jobs.set(id, entry);
    this.count(entry.key, 1);
    clearTimeout(slot.idle);
    try {
      const made = typeof source === 'function' ? source() : source;
      if (made instanceof Promise) made.then((m) => this.send(slot, id, entry, m), (err) => this.unmade(slot, id, entry, err));
      else this.send(slot, id, entry, made);
    } catch (err) {
      this.unmade(slot, id, entry, err);
    }
  }

  private send(slot: Slot<J, R>, id: number, entry: InFlight<J, R>, { job, transfer = [] }: Made<J>): void {
    // The worker stopped while the job was made: the entry was handed on (made again there) or failed.
    if (slot.jobs.get(id) !== entry) return;
    try {
      entry.again ||= transfer.length === 0;
      slot.worker.postMessage({ id, job } satisfies Posted<J>, transfer);
      if (slot.ready) this.startClock(slot, id, entry);
    } catch (err) {
      this.unmade(slot, id, entry, err);
    }
  }

  /** The job could not be made or cloned (not plain data): the worker never saw it, and its room goes on. */
  private unmade(slot: Slot<J, R>, id: number, entry: InFlight<J, R>, err: unknown): void {
    if (slot.jobs.get(id) !== entry) return;
    slot.jobs.delete(id);
    clearTimeout(entry.timer);
    this.count(entry.key, -1);
    entry.reject(err instanceof Error ? err : new Error(String(err)));
    this.dispatch();
    if (slot.jobs.size === 0) this.idleFrom(slot);
  }

  // The least busy shared worker with room; a new one while the pool is short and every worker has work.
  // Workers start on demand, so a process that never needs one never starts one, and a dead worker is
  // replaced here.
  private pickShared(): Slot<J, R> | null {
    let best: Slot<J, R> | undefined;
    let shared = 0;
    for (const slot of this.slots) {
      if (slot.solo) continue;
      shared++;
      if (!best || slot.jobs.size < best.jobs.size) best = slot;
    }
    if (best && (best.jobs.size === 0 || shared >= this.size)) return best.jobs.size < this.jobsPerWorker ? best : null;
    return this.spawn(false);
  }

  /** A solo worker without a job, or a new one while the lane is short. */
  private pickSolo(): Slot<J, R> | null {
    let solo = 0;
    for (const slot of this.slots) {
      if (!slot.solo) continue;
      if (slot.jobs.size === 0) return slot;
      solo++;
    }
    return solo < this.soloSize ? this.spawn(true) : null;
  }

  private spawn(solo: boolean): Slot<J, R> {
    // No inherited execArgv: the boot file registers tsx itself, and flags of the parent's command line such as
    // --input-type (or a second --import tsx) break or slow a worker's start.
    const worker = new Worker(BOOT, {
      workerData: { ...this.opts.workerData, module: builtModule(this.opts.module).href, name: this.opts.name, nice: this.opts.nice ?? 0 },
      execArgv: [],
      resourceLimits: this.opts.resourceLimits,
    });
    const slot: Slot<J, R> = { worker, threadId: worker.threadId, jobs: new Map(), done: 0, ready: false, solo };
    this.slots.add(slot);
    worker.on('message', (reply: Reply<R>) => {
      if ('ready' in reply) {
        // Loading the module (tsx, mailauth, mailparser) is not the jobs' time: their budgets start now.
        slot.ready = true;
        for (const [id, entry] of slot.jobs) this.startClock(slot, id, entry);
        return;
      }
      const pending = slot.jobs.get(reply.id);
      // A job this worker no longer holds: it failed or was handed on while the answer was on its way.
      if (!pending) return;
      slot.jobs.delete(reply.id);
      clearTimeout(pending.timer);
      this.count(pending.key, -1);
      slot.done++;
      if ('result' in reply) pending.resolve(reply.result);
      else pending.reject(revive(reply.error));
      this.dispatch();
      if (slot.jobs.size === 0) this.idleFrom(slot);
    });
    // An uncaught error (or running out of its heap limit) ends the thread: 'error' carries the cause,
    // 'exit' follows (or comes alone).
    const name = this.opts.name;
    worker.on('error', (err: unknown) => this.lose(slot, new Error(`${name} worker failed: ${err instanceof Error ? err.message : String(err)}`)));
    worker.on('exit', (code) => this.lose(slot, new Error(`${name} worker exited with code ${code}`)));
    return slot;
  }

  /** Ends `slot`'s worker if it is still without a job after idleMs; a job handed to it meanwhile stops the clock. */
  private idleFrom(slot: Slot<J, R>): void {
    const ms = this.opts.idleMs ?? IDLE_MS;
    if (ms <= 0) return;
    clearTimeout(slot.idle);
    slot.idle = setTimeout(() => {
      if (slot.jobs.size > 0 || !this.slots.has(slot)) return;
      // Out of the pool first: 'exit' then finds a slot the pool no longer has, and the next job starts a worker.
      this.slots.delete(slot);
      void slot.worker.terminate();
      // The burst of work this pool served is over: the thread that posted it gives back its garbage too.
      if (this.slots.size === 0 && isMainThread) reclaimSoon();
    }, ms);
    // An idle worker's clock must not keep the process alive (close() ends the workers).
    slot.idle.unref();
  }

  private startClock(slot: Slot<J, R>, id: number, entry: InFlight<J, R>): void {
    const ms = this.opts.jobTimeoutMs;
    if (!ms || entry.timer) return;
    entry.timer = setTimeout(() => this.expire(slot, id), ms);
    // The worker keeps the process alive while it has jobs; the clock alone must not.
    entry.timer.unref();
  }

  /** Job `id` ran past its budget: its worker, which may be stuck for good, is terminated (see lose()). */
  private expire(slot: Slot<J, R>, id: number): void {
    if (!slot.jobs.has(id) || !this.slots.has(slot)) return;
    const { name, jobTimeoutMs: ms } = this.opts;
    this.lose(slot, new JobTimeout(`${name} job ran past its ${ms} ms budget; its worker was replaced`));
    // 'exit' follows and finds a slot the pool no longer has.
    void slot.worker.terminate();
  }

  /**
   * `slot`'s worker is gone: it died (an uncaught error, its heap limit) or ran past a budget (`cause` is a
   * JobTimeout). Without a budget every job it held fails with `cause`. With one, a job that ran alone the
   * whole time is the one to blame: it fails and its key is confined. Otherwise nobody can tell which job it
   * was, so each becomes a suspect and runs again alone; one whose data went to the dead worker fails.
   */
  private lose(slot: Slot<J, R>, cause: Error): void {
    if (!this.slots.delete(slot)) return;
    clearTimeout(slot.idle);
    const jobs = this.takeJobs(slot);
    const [only] = jobs;
    if (!this.opts.jobTimeoutMs) {
      for (const job of jobs) job.reject(cause);
    } else if (jobs.length === 1 && !only.shared) {
      this.confine(only.key);
      only.reject(cause);
    } else {
      const stopped = cause instanceof JobTimeout ? new Error(`${this.opts.name} worker was stopped: another of its jobs ran past the ${this.opts.jobTimeoutMs} ms budget`) : cause;
      for (const { source, key, resolve, reject, again } of jobs) {
        if (again) this.suspects.push(key, { source, key, resolve, reject });
        else reject(stopped);
      }
    }
    // What was waiting for this worker goes to its replacement.
    this.dispatch();
  }

  /** Empties `slot`, stopping its jobs' clocks; what it held, in the order it was posted. */
  private takeJobs(slot: Slot<J, R>): Array<InFlight<J, R>> {
    const jobs = [...slot.jobs.values()];
    slot.jobs.clear();
    for (const job of jobs) {
      clearTimeout(job.timer);
      this.count(job.key, -1);
    }
    return jobs;
  }

  private count(key: string, by: number): void {
    const n = (this.inFlight.get(key) ?? 0) + by;
    if (n > 0) this.inFlight.set(key, n);
    else this.inFlight.delete(key);
  }

  private confine(key: string): void {
    const ms = this.opts.quarantineMs ?? QUARANTINE_MS;
    if (!key || ms <= 0) return;
    this.confined.delete(key);
    if (this.confined.size >= MAX_CONFINED) this.confined.delete(this.confined.keys().next().value!);
    this.confined.set(key, Date.now() + ms);
  }

  private isConfined(key: string): boolean {
    const until = this.confined.get(key);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.confined.delete(key);
    return false;
  }
}
