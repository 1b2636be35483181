// A pool of worker threads for CPU-heavy work kept off the event loop (composing and signing outgoing mail,
// authenticating and parsing received mail). It owns the workers and the jobs in flight: a job is answered
// once, with its result or its error, never retried here; a worker that dies fails only its own jobs and is
// replaced by the next job. The worker side is `serveJobs` in the module the pool names.
import { availableParallelism } from 'node:os';
import { parentPort, Worker, type ResourceLimits, type Transferable } from 'node:worker_threads';

const BOOT = new URL('./worker-boot.mjs', import.meta.url);

interface Posted<J> {
  id: number;
  job: J;
}
type Reply<R> = { id: number; result: R } | { id: number; error: { name: string; message: string } };

interface Pending<R> {
  resolve: (result: R) => void;
  reject: (err: Error) => void;
}

interface Slot<R> {
  worker: Worker;
  threadId: number;
  jobs: Map<number, Pending<R>>;
  done: number;
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
}

/** A job, or what makes it when a worker has room (so its data is read only then). */
export type JobSource<J> = { job: J; transfer?: Transferable[] } | (() => { job: J; transfer?: Transferable[] });

interface Waiting<J, R> extends Pending<R> {
  source: JobSource<J>;
}

/** Workers start with the first jobs and keep the process alive until close(). */
export class WorkerPool<J, R> {
  private readonly size: number;
  private readonly jobsPerWorker: number;
  private readonly slots = new Set<Slot<R>>();
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
      this.waiting.push({ source, resolve, reject });
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
      const { source, resolve, reject } = this.waiting.shift()!;
      const id = this.nextId++;
      slot.jobs.set(id, { resolve, reject });
      try {
        const { job, transfer = [] } = typeof source === 'function' ? source() : source;
        slot.worker.postMessage({ id, job } satisfies Posted<J>, transfer);
      } catch (err) {
        // The job could not be made or cloned (not plain data); the worker never saw it.
        slot.jobs.delete(id);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }

  // The least busy worker with room; a new one while the pool is short and every worker has work. Workers
  // start on demand, so a process that never needs one never starts one, and a dead worker is replaced here.
  private pick(): Slot<R> | null {
    let best: Slot<R> | undefined;
    for (const slot of this.slots) if (!best || slot.jobs.size < best.jobs.size) best = slot;
    if (best && (best.jobs.size === 0 || this.slots.size >= this.size)) return best.jobs.size < this.jobsPerWorker ? best : null;
    return this.spawn();
  }

  private spawn(): Slot<R> {
    // No inherited execArgv: the boot file registers tsx itself, and flags of the parent's command line such as
    // --input-type (or a second --import tsx) break or slow a worker's start.
    const worker = new Worker(BOOT, {
      workerData: { ...this.opts.workerData, module: this.opts.module.href, name: this.opts.name },
      execArgv: [],
      resourceLimits: this.opts.resourceLimits,
    });
    const slot: Slot<R> = { worker, threadId: worker.threadId, jobs: new Map(), done: 0 };
    this.slots.add(slot);
    worker.on('message', (reply: Reply<R>) => {
      const pending = slot.jobs.get(reply.id);
      if (!pending) return;
      slot.jobs.delete(reply.id);
      slot.done++;
      if ('result' in reply) pending.resolve(reply.result);
      else pending.reject(revive(reply.error));
      this.dispatch();
    });
    // An uncaught error (or running out of its heap limit) ends the thread: 'error' carries the cause,
    // 'exit' follows (or comes alone).
    const name = this.opts.name;
    worker.on('error', (err: unknown) => this.retire(slot, new Error(`${name} worker failed: ${err instanceof Error ? err.message : String(err)}`)));
    worker.on('exit', (code) => this.retire(slot, new Error(`${name} worker exited with code ${code}`)));
    return slot;
  }

  private retire(slot: Slot<R>, err: Error): void {
    this.slots.delete(slot);
    failAll(slot, err);
    // What was waiting for this worker goes to its replacement.
    this.dispatch();
  }
}

function failAll<R>(slot: Slot<R>, err: Error): void {
  const jobs = [...slot.jobs.values()];
  slot.jobs.clear();
  for (const job of jobs) job.reject(err);
}

// Errors cross the thread boundary as name and message only; the class is not rebuilt, so callers tell
// them apart by name (ComposeError, SignError).
function revive(e: { name: string; message: string }): Error {
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

/**
 * The worker side: answers each job the pool posts with `handle`'s result (moving the buffers it lists) or
 * its error's name and message. One job's failure never ends the thread.
 */
export function serveJobs<J, R>(handle: (job: J) => Promise<{ result: R; transfer?: Transferable[] }>): void {
  const port = parentPort;
  if (!port) throw new Error('serveJobs runs only inside a worker thread (see worker-pool.ts)');
  port.on('message', ({ id, job }: Posted<J>) => {
    handle(job).then(
      ({ result, transfer }) => port.postMessage({ id, result } satisfies Reply<R>, transfer ?? []),
      (err: unknown) => {
        const error = err instanceof Error ? { name: err.name, message: err.message } : { name: 'Error', message: String(err) };
        port.postMessage({ id, error } satisfies Reply<R>);
      },
    );
  });
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

/** The items with contents another thread can take over without a copy; their buffers are added to `transfer`. */
export function movingContents<A extends { content: Buffer }>(items: A[], transfer: ArrayBuffer[]): A[] {
  return items.map((item) => {
    const content = transferable(item.content);
    transfer.push(content.buffer);
    return { ...item, content: content as Buffer };
  });
}
