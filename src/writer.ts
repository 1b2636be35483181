// The writer: one thread with its own SQLite connection (writer-worker.ts) that commits what both flows hand
// over as data, received mail to file and checked sends to queue, in shared group commits. One thread,
// because SQLite has one writer at a time: a second would only wait on the lock, and the event loop, which
// serves every SMTP session and API request, would wait with it. It takes many jobs at once so that they
// share a commit.
import type { Config } from './config.ts';
import type { StoreHealth } from './db/health.ts';
import { ApiError, type FieldError } from './errors.ts';
import type { IdempotencyClaim, IdempotencyRecord } from './http/idempotency.ts';
import type { Level, Log } from './log.ts';
import type { Analysed, Filed } from './receive/file.ts';
import type { PlannedSend } from './send/submit.ts';
import { movingContents, transferable, WorkerPool } from './worker-pool.ts';

/** An Analysed message as it crosses the thread boundary (Buffers arrive as plain Uint8Arrays). */
export interface FileJob extends Omit<Analysed, 'raw'> {
  kind: 'file';
  raw: Uint8Array;
  /** The main thread's clock when the message was handed over: every timestamp of its rows. */
  now: number;
}

/** Sends planned on the main thread, written in one transaction with the answer an Idempotency-Key replays. */
export interface SendJob {
  kind: 'send';
  plans: PlannedSend[];
  answer?: { record: IdempotencyRecord; status: number; body: unknown };
  now: number;
}

export type WriterJob = FileJob | SendJob;

export interface LogEntry {
  level: Level;
  msg: string;
  fields?: Record<string, unknown>;
}

export interface ApiErrorData {
  status: number;
  code: string;
  message: string;
  errors?: FieldError[];
}

export type WriterResult = ({ kind: 'filed'; logs: LogEntry[] } & Filed) | { kind: 'sent' } | { kind: 'refused'; error: ApiErrorData };

export class Writer extends WorkerPool<WriterJob, WriterResult> {
  constructor(
    config: Pick<Config, 'dataDir'>,
    private readonly health?: StoreHealth,
  ) {
    super({ name: 'writer', module: new URL('./writer-worker.ts', import.meta.url), size: 1, jobsPerWorker: 1024, workerData: { dataDir: config.dataDir } });
  }

  /**
   * A job's error keeps SQLite's code across the thread boundary (SQLITE_FULL, SQLITE_CORRUPT: worker-pool.ts),
   * so the caller answers a full disk with 507 or 451; corruption also makes the box unhealthy.
   */
  private async commit(job: WriterJob, transfer: ArrayBuffer[]): Promise<WriterResult> {
    try {
      return await this.run(job, transfer);
    } catch (err) {
      this.health?.observe(err);
      throw err;
    }
  }

  /** Resolves after the message is committed and fsynced; the caller's buffers move to the writer. */
  async file(m: Analysed, now: number, log: Log): Promise<Filed> {
    const raw = transferable(m.raw);
    const transfer: ArrayBuffer[] = [raw.buffer];
    const attachments = movingContents(m.parsed.attachments, transfer);
    const result = await this.commit({ kind: 'file', ...m, raw, parsed: { ...m.parsed, attachments }, now }, [...new Set(transfer)]);
    if (result.kind !== 'filed') throw new Error(`the writer answered a file job with ${result.kind}`);
    const { kind: _, logs, ...filed } = result;
    for (const entry of logs) log[entry.level](entry.msg, entry.fields);
    return filed;
  }

  /**
   * Writes the sends, and the claim's answer with them, in one transaction; resolves after it is on disk,
   * and throws the ApiError of a check that refused them (then nothing was written). The attachments'
   * buffers move to the writer.
   */
  async send(plans: PlannedSend[], now: number, answer?: { claim: IdempotencyClaim; status: number; body: unknown }): Promise<void> {
    const transfer: ArrayBuffer[] = [];
    const moved = plans.map((plan) => (plan.req.attachments.length ? { ...plan, req: { ...plan.req, attachments: movingContents(plan.req.attachments, transfer) } } : plan));
    const result = await this.commit({ kind: 'send', plans: moved, answer: answer && { record: answer.claim.record, status: answer.status, body: answer.body }, now }, [...new Set(transfer)]);
    if (result.kind === 'refused') throw new ApiError(result.error.status, result.error.code, result.error.message, { errors: result.error.errors });
    if (result.kind !== 'sent') throw new Error(`the writer answered a send job with ${result.kind}`);
    answer?.claim.stored();
  }
}

