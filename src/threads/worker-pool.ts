// A pool of worker threads for CPU-heavy work kept off the event loop (composing and signing outgoing mail,
// authenticating and parsing received mail). It owns the workers and the jobs in flight: a job is answered
// once, with its result or its error. A worker that dies fails its own jobs and is replaced by the next job.
// With a job budget (jobTimeoutMs), a job past it fails and its worker is replaced, and the other jobs that
// worker held are handed again. The worker side is `serveJobs` in the module the pool names.
import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, Worker, type ResourceLimits, type Transferable } from 'node:worker_threads';
import { reclaimSoon } from './reclaim.ts';

const BOOT = new URL('./worker-boot.mjs', import.meta.url);

interface Posted<J> {
  id: number;
  job: J;
}
/** An error as it crosses the thread boundary: `code` is a string such as SQLITE_FULL when the error had one. */
interface ErrorData {
  name: string;
  message: string;
  code?: string;
}
// `ready` is sent once, when the worker's module has loaded and serves jobs.
type Reply<R> = { id: number; result: R } | { id: number; error: ErrorData } | { ready: true };

interface Pending<R> {
  resolve: (result: R) => void;
  reject: (err: Error) => void;
}

interface Slot<J, R> {
  worker: Worker;
  threadId: number;
  jobs: Map<number, InFlight<J, R>>;
  done: number;
  /** The worker has loaded its module: the budget of its jobs runs from now on. */
  ready: boolean;
  /** Ends the worker once it has had no job for PoolOptions.idleMs. */
  idle?: NodeJS.Timeout;
}

export interface WorkerStats {
  threadId: number;
  /** Jobs posted and not yet answered. */
  inFlight: number;
  /** Jobs answered, with a result or an error. */
  done: number;
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
   * Wall-clock budget of one job (ms), from when a started worker has it. Past it the job fails with
   * JobTimeout and its worker is terminated and replaced; the other jobs that worker held are handed again,
   * first in line and each with a fresh budget, when they can be made again (see InFlight.again). Set it only
   * for pools whose jobs can run twice without harm (parsing, signing), never for one that writes. Default: none.
   */
  jobTimeoutMs?: number;
  /**
   * A worker that has had no job for this long (ms) is terminated; the next job starts a new one (a few tens of
   * ms: its module loads again). An idle thread keeps its V8 heap as the last burst of work left it, tens of
   * MiB each (issue 22: RSS back under 160 MiB within a minute of a load). 0: workers live until close().
   * Default IDLE_MS.
   */
  idleMs?: number;
  /**
   * The threads' scheduling priority on Linux (nice, 1-19; elsewhere ignored): a pool whose work may wait while
   * the event loop and the writer want the cores. Default 0, as the process.
   */
  nice?: number;
}

/** How long a worker may sit without a job before it is ended (PoolOptions.idleMs). */
export const IDLE_MS = 30_000;

/** A job that ran past its pool's budget (PoolOptions.jobTimeoutMs); its worker was replaced. */
export class JobTimeout extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobTimeout';
  }
}

/** How often one job may be handed again after the worker it was on was stopped for another job's budget. */
export const MAX_REQUEUES = 3;

/** A job, or what makes it when a worker has room (so its data is read only then). */
export type JobSource<J> = { job: J; transfer?: Transferable[] } | (() => { job: J; transfer?: Transferable[] });

interface Waiting<J, R> extends Pending<R> {
  source: JobSource<J>;
  /** Times it was handed again after its worker was stopped for another job's budget. */
  requeues: number;
}

interface InFlight<J, R> extends Waiting<J, R> {
  /**
   * It can be handed to another worker: it was posted with nothing transferred (the worker got a copy), or it
   * is made by a function, which can make it again. Data transferred to a terminated worker is gone.
   */
  again: boolean;
  timer?: NodeJS.Timeout;
}

/** Workers start with the first jobs and keep the process alive until close(). */
export class WorkerPool<J, R> {
  readonly size: number;
  private readonly jobsPerWorker: number;
  private readonly slots = new Set<Slot<J, R>>();
  private readonly waiting: Array<Waiting<J, R>> = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly opts: PoolOptions) {
    this.size = Math.max(1, Math.floor(opts.size ?? availableParallelism()));
    this.jobsPerWorker = Math.max(1, Math.floor(opts.jobsPerWorker ?? 2));
  }

  run(job: J, transfer: Transferable[] = []): Promise<R> {
    return this.runFrom({ job, transfer });
  }

  /** run(), with the job made by `source` when a worker takes it. */
  runFrom(source: JobSource<J>): Promise<R> {
    if (this.closed) return Promise.reject(new Error(`${this.opts.name} pool is closed`));
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ source, resolve, reject, requeues: 0 });
      this.dispatch();
    });
  }

  stats(): WorkerStats[] {
    return [...this.slots].map((s) => ({ threadId: s.threadId, inFlight: s.jobs.size, done: s.done }));
  }

  /** Jobs not yet handed to a worker. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Rejects the jobs in flight and ends every worker. */
  async close(): Promise<void> {
    this.closed = true;
    const slots = [...this.slots];
    this.slots.clear();
    for (const slot of slots) clearTimeout(slot.idle);
    const closed = new Error(`${this.opts.name} pool closed before the job finished`);
    for (const job of this.waiting.splice(0)) job.reject(closed);
    for (const slot of slots) failAll(slot, closed);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  /** Hands waiting jobs, oldest first, to workers with room. */
  private dispatch(): void {
    while (this.waiting.length > 0 && !this.closed) {
      const slot = this.pick();
      if (!slot) return;
      const waiting = this.waiting.shift()!;
      const { source } = waiting;
      const id = this.nextId++;
      const entry: InFlight<J, R> = { ...waiting, again: typeof source === 'function' };
      slot.jobs.set(id, entry);
      clearTimeout(slot.idle);
      try {
        const { job, transfer = [] } = typeof source === 'function' ? source() : source;
        entry.again ||= transfer.length === 0;
        slot.worker.postMessage({ id, job } satisfies Posted<J>, transfer);
        if (slot.ready) this.startClock(slot, id, entry);
      } catch (err) {
        // The job could not be made or cloned (not plain data); the worker never saw it.
        slot.jobs.delete(id);
        entry.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }

  // The least busy worker with room; a new one while the pool is short and every worker has work. Workers
  // start on demand, so a process that never needs one never starts one, and a dead worker is replaced here.
  private pick(): Slot<J, R> | null {
    let best: Slot<J, R> | undefined;
    for (const slot of this.slots) if (!best || slot.jobs.size < best.jobs.size) best = slot;
    if (best && (best.jobs.size === 0 || this.slots.size >= this.size)) return best.jobs.size < this.jobsPerWorker ? best : null;
    return this.spawn();
  }

  private spawn(): Slot<J, R> {
    // No inherited execArgv: the boot file registers tsx itself, and flags of the parent's command line such as
    // --input-type (or a second --import tsx) break or slow a worker's start.
    const worker = new Worker(BOOT, {
      workerData: { ...this.opts.workerData, module: this.opts.module.href, name: this.opts.name, nice: this.opts.nice ?? 0 },
      execArgv: [],
      resourceLimits: this.opts.resourceLimits,
    });
    const slot: Slot<J, R> = { worker, threadId: worker.threadId, jobs: new Map(), done: 0, ready: false };
    this.slots.add(slot);
    worker.on('message', (reply: Reply<R>) => {
      if ('ready' in reply) {
        // Loading the module (tsx, mailauth, mailparser) is not the jobs' time: their budgets start now.
        slot.ready = true;
        for (const [id, entry] of slot.jobs) this.startClock(slot, id, entry);
        return;
      }
      const pending = slot.jobs.get(reply.id);
      // A job this worker no longer holds: failed for its budget, or handed again, while the answer was on its way.
      if (!pending) return;
      slot.jobs.delete(reply.id);
      clearTimeout(pending.timer);
      slot.done++;
      if ('result' in reply) pending.resolve(reply.result);
      else pending.reject(revive(reply.error));
      this.dispatch();
      if (slot.jobs.size === 0) this.idleFrom(slot);
    });
    // An uncaught error (or running out of its heap limit) ends the thread: 'error' carries the cause,
    // 'exit' follows (or comes alone).
    const name = this.opts.name;
    worker.on('error', (err: unknown) => this.retire(slot, new Error(`${name} worker failed: ${err instanceof Error ? err.message : String(err)}`)));
    worker.on('exit', (code) => this.retire(slot, new Error(`${name} worker exited with code ${code}`)));
    return slot;
  }

  // A worker that died by itself (an uncaught error, its heap limit) fails all its jobs: any of them may be
  // what killed it, so none is run again.
  private retire(slot: Slot<J, R>, err: Error): void {
    this.slots.delete(slot);
    failAll(slot, err);
    // What was waiting for this worker goes to its replacement.
    this.dispatch();
  }

  /** Ends `slot`'s worker if it is still without a job after idleMs; a job handed to it meanwhile stops the clock. */
  private idleFrom(slot: Slot<J, R>): void {
    const ms = this.opts.idleMs ?? IDLE_MS;
    if (ms <= 0) return;
    clearTimeout(slot.idle);
    slot.idle = setTimeout(() => {
      if (slot.jobs.size > 0 || !this.slots.has(slot)) return;
      // Out of the pool first: 'exit' then retires a slot that holds nothing, and the next job starts a worker.
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

  /**
   * Job `id` ran past its budget: it fails, and its worker, which may be stuck in it for good, is terminated.
   * The worker's other jobs are innocent as far as anyone can tell: they go back to the front of the line in
   * the order they were posted, for a new worker, unless their data went to the dead one or they were handed
   * again too often already. A job that blocks its worker's event loop also stops the jobs beside it, so the
   * oldest of those may run out first and take the blame (451, tried again later by the sender); the blocker
   * is then handed again with a fresh budget, at most MAX_REQUEUES times.
   */
  private expire(slot: Slot<J, R>, id: number): void {
    const late = slot.jobs.get(id);
    if (!late || !this.slots.has(slot)) return;
    this.slots.delete(slot);
    const others = [...slot.jobs.entries()].filter(([other]) => other !== id).map(([, entry]) => entry);
    for (const entry of slot.jobs.values()) clearTimeout(entry.timer);
    slot.jobs.clear();
    // 'exit' follows and retires a slot that holds nothing by then.
    void slot.worker.terminate();
    const { name, jobTimeoutMs: ms } = this.opts;
    late.reject(new JobTimeout(`${name} job ran past its ${ms} ms budget; its worker was replaced`));
    const again: Array<Waiting<J, R>> = [];
    for (const entry of others) {
      if (!entry.again) entry.reject(new Error(`${name} worker was stopped: another of its jobs ran past the ${ms} ms budget`));
      else if (entry.requeues >= MAX_REQUEUES) entry.reject(new JobTimeout(`${name} job was on ${MAX_REQUEUES + 1} workers stopped for running past the ${ms} ms budget`));
      else again.push({ source: entry.source, resolve: entry.resolve, reject: entry.reject, requeues: entry.requeues + 1 });
    }
    this.waiting.unshift(...again);
    this.dispatch();
  }
}

function failAll<J, R>(slot: Slot<J, R>, err: Error): void {
  const jobs = [...slot.jobs.values()];
  slot.jobs.clear();
  for (const job of jobs) {
    clearTimeout(job.timer);
    job.reject(err);
  }
}

// Errors cross the thread boundary as name, message and string code only; the class is not rebuilt, so
// callers tell them apart by name (ComposeError, SignError) or code (SQLITE_FULL, SQLITE_CORRUPT).
function revive(e: ErrorData): Error {
  const err: Error & { code?: string } = new Error(e.message);
  err.name = e.name;
  if (typeof e.code === 'string') err.code = e.code;
  return err;
}

function errorData(err: unknown): ErrorData {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const { code } = err as { code?: unknown };
  return typeof code === 'string' ? { name: err.name, message: err.message, code } : { name: err.name, message: err.message };
}

/**
 * The worker side: says it is ready, then answers each job the pool posts with `handle`'s result (moving the
 * buffers it lists) or its error's name, message and code. One job's failure never ends the thread.
 */
export function serveJobs<J, R>(handle: (job: J) => Promise<{ result: R; transfer?: Transferable[] }>): void {
  const port = parentPort;
  if (!port) throw new Error('serveJobs runs only inside a worker thread (see worker-pool.ts)');
  // Nothing reads a stack captured in this thread: its errors cross as name, message and code, and a thread
  // that dies is reported by its error's message. Node's stream.pipeline aborts an AbortController as each
  // pipeline ends, and the DOMException that makes walks the stack: with nodemailer's and mailparser's
  // pipelines that was 30-50 µs of a signing thread's CPU per 10 KB message (issue 22).
  Error.stackTraceLimit = 0;
  port.on('message', ({ id, job }: Posted<J>) => {
    handle(job).then(
      ({ result, transfer }) => port.postMessage({ id, result } satisfies Reply<R>, transfer ?? []),
      (err: unknown) => port.postMessage({ id, error: errorData(err) } satisfies Reply<R>),
    );
  });
  port.postMessage({ ready: true } satisfies Reply<R>);
}

/**
 * A Uint8Array that owns its whole ArrayBuffer, so it can be moved to another thread: a small Buffer can be a
 * slice of Node's shared allocation pool, whose transfer would detach every other buffer in it. Anything
 * else is copied once.
 */
export function transferable(buf: Uint8Array): Uint8Array<ArrayBuffer> {
  const { buffer } = buf;
  if (buffer instanceof ArrayBuffer && buf.byteOffset === 0 && buf.byteLength === buffer.byteLength) return new Uint8Array(buffer);
  return new Uint8Array(buf);
}

/** A Buffer over a Uint8Array that crossed a thread boundary: structured clone delivers Buffers as plain Uint8Arrays. */
export const asBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** `value` with every Uint8Array in it (in place, at any depth of plain objects and arrays) a Buffer over the same bytes. */
export function withBuffers<T>(value: T): T {
  if (value instanceof Uint8Array) return (Buffer.isBuffer(value) ? value : asBuffer(value)) as T;
  if (Array.isArray(value)) value.forEach((v, i) => (value[i] = withBuffers(v)));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) (value as Record<string, unknown>)[k] = withBuffers(v);
  return value;
}

/** The items with contents another thread can take over without a copy; their buffers are added to `transfer`. */
export function movingContents<A extends { content: Buffer }>(items: A[], transfer: ArrayBuffer[]): A[] {
  return items.map((item) => {
    const content = transferable(item.content);
    transfer.push(content.buffer);
    return { ...item, content: content as Buffer };
  });
}
