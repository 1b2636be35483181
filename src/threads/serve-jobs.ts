// The message protocol between a WorkerPool (worker-pool.ts) and its threads, and the worker side of it
// (serveJobs): a job goes in with its id, its result or its error comes back under that id. Errors cross as
// plain data and are rebuilt on the pool's side.
import { parentPort, type Transferable } from 'node:worker_threads';

export interface Posted<J> {
  id: number;
  job: J;
}
/** An error as it crosses the thread boundary: `code` is a string such as SQLITE_FULL when the error had one. */
export interface ErrorData {
  name: string;
  message: string;
  code?: string;
}
// `ready` is sent once, when the worker's module has loaded and serves jobs.
export type Reply<R> = { id: number; result: R } | { id: number; error: ErrorData } | { ready: true };

// Errors cross the thread boundary as name, message and string code only; the class is not rebuilt, so
// callers tell them apart by name (ComposeError, SignError) or code (SQLITE_FULL, SQLITE_CORRUPT).
export function revive(e: ErrorData): Error {
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
  // pipelines that was 30-50 µs of a signing thread's CPU per 10 KB message.
  Error.stackTraceLimit = 0;
  port.on('message', ({ id, job }: Posted<J>) => {
    handle(job).then(
      ({ result, transfer }) => port.postMessage({ id, result } satisfies Reply<R>, transfer ?? []),
      (err: unknown) => port.postMessage({ id, error: errorData(err) } satisfies Reply<R>),
    );
  });
  port.postMessage({ ready: true } satisfies Reply<R>);
}
