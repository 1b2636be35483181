// The one write path of mail (docs/architecture.md): a writer thread (writer-worker.ts) with its own SQLite
// connection runs the steps the flows hand over, as data, in group commits, and answers each call only after
// its commit is on disk. One thread, because SQLite has one writer at a time: a second would only wait on the
// lock, and the event loop, which serves every SMTP session and API request, would wait with it.
// db/ knows no flow: the job table is assembled above it (start/writer-jobs.ts), which registers the table's
// type here (Register), so that each step a flow hands over is checked against its job, and its result typed.
import type { Clock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import { ApiError, type FieldError } from '../errors.ts';
import type { Level, Log } from '../log.ts';
import { WorkerPool } from '../threads/worker-pool.ts';
import type { StoreHealth } from './health.ts';
import type { Query } from './query.ts';

/** What a job that only reads and writes the database gets: the writer's connection, time, log and config. */
export interface DbContext {
  clock: Clock;
  log: Log;
  config: Config;
}

/**
 * A job: a query (query.ts), or synchronous SQL, in the writer's transaction, from plain data (structured clone:
 * Buffers arrive as Buffers again, see writer-worker.ts) to plain data. An ApiError it throws refuses its call with nothing
 * written; a batch may be run again after a rollback (GroupCommit rerunnable), so a job has no other effects.
 */
export type WriterJob = (ctx: DbContext, payload: any) => unknown;
export type JobTable = Record<string, WriterJob>;

/**
 * Work the writer thread does in its own time (served with the table: serveWriter in writer-worker.ts): run a
 * moment after a call's commit, in a transaction that acknowledges nobody, again at once while it returns true
 * (more is left). It may be run again after a rollback, like a job.
 */
export type BackgroundJob = (ctx: DbContext) => boolean | Query<boolean>;

/**
 * Reads a job may make before its transaction, by kind: given the job's payload, the payload to run it with (what
 * it read added). Only where each read under the write lock is a round trip that holds every other writer up
 * (PostgreSQL); on SQLite the job reads in its transaction as it always can, so a job must work without them.
 */
export type ReadsFirst = Partial<Record<string, (ctx: DbContext, payload: any) => Query<unknown>>>;

/**
 * The job table's type, filled in by the module that assembles the table (start/writer-jobs.ts, in a `declare
 * module` block: `interface Register { jobs: typeof jobs }`; TanStack Router's `Register` pattern). So db/
 * names no flow and no flow imports the table, yet a step of an unknown kind or a wrong payload does not compile.
 */
export interface Register {}

/** The registered job table (any table, in a program that registers none). */
export type Jobs = Register extends { jobs: infer T extends JobTable } ? T : JobTable;
/** A job's name in the table. */
export type Kind = keyof Jobs & string;
type Args<K extends Kind> = Parameters<Jobs[K]>;
/** What a job takes besides its context, read off its signature; undefined for a job that takes nothing. */
export type Payload<K extends Kind> = Args<K> extends [unknown] ? undefined : Args<K>[1];
/** What a job returns, read off its signature (what its query ends with): what its call resolves with, once committed. */
export type Result<K extends Kind> = ReturnType<Jobs[K]> extends Query<infer T> ? T : ReturnType<Jobs[K]>;

/** One step of a call: a job `kind` of the table, with its payload (left out where the job takes none). */
export type Step<K extends Kind = Kind> = K extends Kind ? (undefined extends Payload<K> ? { kind: K; payload?: Payload<K> } : { kind: K; payload: Payload<K> }) : never;

/** The results of a call's steps, one for each step, in their order. */
export type Results<S extends readonly Step[]> = { -readonly [I in keyof S]: S[I] extends { kind: infer K extends Kind } ? Result<K> : never };

/** A step as it crosses to the writer thread, its types left behind. */
export interface PostedStep {
  kind: string;
  payload?: unknown;
}

interface Call {
  steps: readonly PostedStep[];
  /** The caller's clock when it handed the work over: every timestamp the steps write. */
  now: number;
}

export interface LogEntry {
  level: Level;
  msg: string;
  fields?: Record<string, unknown>;
}

interface ApiErrorData {
  status: number;
  code: string;
  message: string;
  errors?: FieldError[];
}

/**
 * `batches`: the sizes of the group commits made since the previous answer (metrics). `settingsChanged`: on
 * PostgreSQL, the scopes of the changes of settings heard since the previous answer ('' for all: db/node-cache.ts).
 */
export type Answer = ({ results: unknown[]; logs: LogEntry[] } | { refused: ApiErrorData }) & { batches?: number[]; settingsChanged?: string[] };

export class Writer extends WorkerPool<Call, Answer> {
  constructor(
    config: Config,
    /** The writer thread's module, which serves the job table (start/writer-thread.ts). */
    thread: URL,
    private readonly health?: StoreHealth,
    /** Hears the size of each group commit the writer thread made (metrics). */
    private readonly onBatch?: (calls: number) => void,
    /** Hears that the writer thread's connection heard a change of settings (db/node-cache.ts), before the call it came with resolves. */
    private readonly onSettingsChanged?: (scope: string) => void,
  ) {
    // Ended after the pool's idle time like the other pools (worker-pool.ts IDLE_MS), which gives back its heap
    // and SQLite's cache: the first call after a quiet spell waits for a new writer to load its jobs and open
    // the database (0.1-0.25 s on a busy 2-vCPU machine).
    super({
      name: 'writer',
      module: thread,
      size: 1,
      jobsPerWorker: 1024,
      workerData: { config },
    });
  }

  /**
   * Runs `steps` in order in one transaction of the writer's next group commit and resolves with each step's
   * result once that commit is on disk (a tuple of steps, a tuple of their jobs' results); throws the ApiError a
   * step refused with (then nothing was written). Buffers listed in `transfer` move to the writer. The steps'
   * log lines are written to `log`.
   */
  async commit<const S extends readonly Step[]>(steps: S, opts: { now: number; log: Log; transfer?: ArrayBuffer[] }): Promise<Results<S>> {
    let answer: Answer;
    try {
      answer = await this.run({ steps, now: opts.now }, [...new Set(opts.transfer ?? [])]);
    } catch (err) {
      // SQLite's code crosses the thread boundary (worker-pool.ts): a full disk is answered 507 or 451, and
      // corruption makes the box unhealthy.
      this.health?.observe(err);
      throw err;
    }
    for (const calls of answer.batches ?? []) this.onBatch?.(calls);
    for (const scope of answer.settingsChanged ?? []) this.onSettingsChanged?.(scope);
    if ('refused' in answer) throw new ApiError(answer.refused.status, answer.refused.code, answer.refused.message, { errors: answer.refused.errors });
    for (const entry of answer.logs) opts.log[entry.level](entry.msg, entry.fields);
    // The writer thread ran each step with the job its kind names in the same table: its result is that job's.
    return answer.results as Results<S>;
  }
}
