// Runs in the receive pipeline's writer thread (storer.ts): files each analysed message (file.ts) through a
// group commit on a connection of its own, and answers only after that commit is on disk. The event loop
// that serves every SMTP session then never waits on the store's SQL, its full-text indexing or its fsync.
// Log lines written while filing travel back with the answer; the main thread writes them.
import { workerData } from 'node:worker_threads';
import { GroupCommit } from '../db/group-commit.ts';
import { openDatabase } from '../db/open.ts';
import type { Level, Log } from '../log.ts';
import { serveJobs } from '../worker-pool.ts';
import { fileMessage, type Analysed, type Filed } from './file.ts';

/** An Analysed message as it crosses the thread boundary (Buffers arrive as plain Uint8Arrays). */
export interface FileJob extends Omit<Analysed, 'raw'> {
  raw: Uint8Array;
  /** The main thread's clock when the message was handed over: every timestamp of its rows. */
  now: number;
}

export interface LogEntry {
  level: Level;
  msg: string;
  fields?: Record<string, unknown>;
}

export type FileResult = Filed & { logs: LogEntry[] };

const db = openDatabase(workerData.dataDir as string);
const commit = new GroupCommit(db);

// Jobs run one at a time inside the commit, so the entries of the job running now are the ones being written.
let entries: LogEntry[] | null = null;
const collectingLog = (base: Record<string, unknown>): Log => {
  const at = (level: Level) => (msg: string, fields?: Record<string, unknown>) => void entries?.push({ level, msg, fields: { ...base, ...fields } });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (fields) => collectingLog({ ...base, ...fields }) };
};
const log = collectingLog({});

serveJobs(async (job: FileJob) => {
  const raw = Buffer.from(job.raw.buffer, job.raw.byteOffset, job.raw.byteLength);
  for (const a of job.parsed.attachments) a.content = Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength);
  const logs: LogEntry[] = [];
  const filed = await commit.run(() => {
    entries = logs;
    try {
      return fileMessage({ db, clock: { now: () => job.now }, log }, { ...job, raw });
    } finally {
      entries = null;
    }
  });
  return { result: { ...filed, logs } };
});
