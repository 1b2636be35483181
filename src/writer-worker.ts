// The writer thread (writer.ts): one SQLite connection of its own that writes what both flows hand over, as
// data, in group commits, and answers each job only after its commit is on disk: received mail to file
// (receive/file.ts) and checked sends to queue (send/submit.ts writeSend, with the idempotency record). The
// event loop then never waits on their SQL, full-text indexing or fsync. Log lines written while filing
// travel back with the answer; the main thread writes them.
import { workerData } from 'node:worker_threads';
import type { DbContext } from './context.ts';
import { GroupCommit } from './db/group-commit.ts';
import { openDatabase } from './db/open.ts';
import { ApiError } from './errors.ts';
import { storeAnswer } from './http/idempotency.ts';
import type { Level, Log } from './log.ts';
import { fileMessage } from './receive/file.ts';
import { writeSend } from './send/submit.ts';
import { asBuffer, serveJobs } from './worker-pool.ts';
import type { ApiErrorData, FileJob, LogEntry, SendJob, WriterJob, WriterResult } from './writer.ts';

const db = openDatabase(workerData.dataDir as string);
// Jobs here are data in, rows out, so a batch runs without a savepoint per job (see GroupCommit).
const commit = new GroupCommit(db, { rerunnable: true });

// Jobs run one at a time inside the commit, so the entries of the job running now are the ones being written.
let entries: LogEntry[] | null = null;
const collectingLog = (base: Record<string, unknown>): Log => {
  const at = (level: Level) => (msg: string, fields?: Record<string, unknown>) => void entries?.push({ level, msg, fields: { ...base, ...fields } });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (fields) => collectingLog({ ...base, ...fields }) };
};
const log = collectingLog({});

/** The connection, with the main thread's time of the hand-over as every timestamp the job writes. */
const contextAt = (now: number): DbContext => ({ db, clock: { now: () => now }, log });

async function file(job: FileJob): Promise<WriterResult> {
  const raw = asBuffer(job.raw);
  for (const a of job.parsed.attachments) a.content = asBuffer(a.content);
  const logs: LogEntry[] = [];
  const filed = await commit.run(() => {
    logs.length = 0; // a batch that is run again must not log twice
    entries = logs;
    try {
      return fileMessage(contextAt(job.now), { ...job, raw });
    } finally {
      entries = null;
    }
  });
  return { kind: 'filed', ...filed, logs };
}

async function send(job: SendJob): Promise<WriterResult> {
  for (const plan of job.plans) for (const a of plan.req.attachments) a.content = asBuffer(a.content);
  try {
    await commit.run(() => {
      for (const plan of job.plans) writeSend(contextAt(plan.now), plan);
      if (job.answer) storeAnswer(db, job.now, job.answer.record, job.answer.status, job.answer.body);
    });
  } catch (err) {
    // A check that can only be made in the transaction (a label the send would create) refused it: the
    // caller's 4xx, with nothing written.
    if (err instanceof ApiError) return { kind: 'refused', error: { status: err.status, code: err.code, message: err.message, errors: err.errors } satisfies ApiErrorData };
    throw err;
  }
  return { kind: 'sent' };
}

serveJobs(async (job: WriterJob) => ({ result: job.kind === 'file' ? await file(job) : await send(job) }));
