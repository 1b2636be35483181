// The pool of worker threads that compose and DKIM-sign outgoing mail off the event loop (MIME encoding, RSA
// signing and mailauth's per-message PEM parsing cost milliseconds of CPU per message). It owns the workers
// and the jobs in flight; it must not retry a job, and never leaves a caller's promise unsettled.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ComposeInput } from '../mail/compose.ts';
import type { DkimKey } from '../mail/sign.ts';
import type { SignJob, SignReply } from './sign-worker.ts';

const BOOT = new URL('./sign-worker-boot.mjs', import.meta.url);
const MODULE = new URL('./sign-worker.ts', import.meta.url).href;

interface Pending {
  resolve: (raw: Buffer) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  threadId: number;
  jobs: Map<number, Pending>;
  done: number;
}

export interface WorkerStats {
  threadId: number;
  /** Jobs posted and not yet answered. */
  inFlight: number;
  /** Jobs answered, signed or failed. */
  done: number;
}

/** Workers start on the first jobs and keep the process alive until close(). */
export class Signer {
  private readonly size: number;
  private readonly slots = new Set<Slot>();
  private nextId = 1;
  private closed = false;

  constructor(opts: { size?: number } = {}) {
    this.size = Math.max(1, Math.floor(opts.size ?? availableParallelism()));
  }

  /** sign(await compose(input), key), on a worker thread. */
  composeAndSign(input: ComposeInput, key: DkimKey): Promise<Buffer> {
    if (this.closed) return Promise.reject(new Error('Signer is closed'));
    return new Promise<Buffer>((resolve, reject) => {
      const slot = this.pick();
      const id = this.nextId++;
      slot.jobs.set(id, { resolve, reject });
      // A Buffer is often a view into a larger allocation (Node's pool, a whole request body), and structured
      // clone copies the entire allocation. Copy just the attachment's bytes once and hand that copy over.
      const transfer: ArrayBuffer[] = [];
      const attachments = input.attachments.map((a) => {
        const content = new Uint8Array(a.content);
        transfer.push(content.buffer);
        return { ...a, content };
      });
      try {
        slot.worker.postMessage({ id, input: { ...input, attachments }, key } satisfies SignJob, transfer);
      } catch (err) {
        // The input could not be cloned (not plain data); the worker never saw it.
        slot.jobs.delete(id);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  stats(): WorkerStats[] {
    return [...this.slots].map((s) => ({ threadId: s.threadId, inFlight: s.jobs.size, done: s.done }));
  }

  /** Rejects the jobs still in flight and ends every worker. */
  async close(): Promise<void> {
    this.closed = true;
    const slots = [...this.slots];
    this.slots.clear();
    for (const slot of slots) failAll(slot, new Error('Signer closed before the job finished'));
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  // The least busy worker; a new one while the pool is short and every worker has work. Workers start on
  // demand, so a process that never sends mail never starts one, and a dead worker is replaced here.
  private pick(): Slot {
    let best: Slot | undefined;
    for (const slot of this.slots) if (!best || slot.jobs.size < best.jobs.size) best = slot;
    if (best && (best.jobs.size === 0 || this.slots.size >= this.size)) return best;
    return this.spawn();
  }

  private spawn(): Slot {
    // No inherited execArgv: the boot file registers tsx itself, and flags of the parent's command line such as
    // --input-type (or a second --import tsx) break or slow a worker's start.
    const worker = new Worker(BOOT, { workerData: { module: MODULE }, execArgv: [] });
    const slot: Slot = { worker, threadId: worker.threadId, jobs: new Map(), done: 0 };
    this.slots.add(slot);
    worker.on('message', (reply: SignReply) => {
      const pending = slot.jobs.get(reply.id);
      if (!pending) return;
      slot.jobs.delete(reply.id);
      slot.done++;
      if ('raw' in reply) pending.resolve(Buffer.from(reply.raw.buffer, reply.raw.byteOffset, reply.raw.byteLength));
      else pending.reject(revive(reply.error));
    });
    // An uncaught error ends the thread: 'error' carries the cause, 'exit' follows (or comes alone).
    worker.on('error', (err: unknown) => this.retire(slot, new Error(`sign worker failed: ${err instanceof Error ? err.message : String(err)}`)));
    worker.on('exit', (code) => this.retire(slot, new Error(`sign worker exited with code ${code}`)));
    return slot;
  }

  private retire(slot: Slot, err: Error): void {
    this.slots.delete(slot);
    failAll(slot, err);
  }
}

function failAll(slot: Slot, err: Error): void {
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
