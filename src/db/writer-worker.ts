// The writer thread (writer.ts): one SQLite connection of its own (or, with database_url, a PostgreSQL
// connection) that runs the steps of each call from the job table it is handed (serveWriter, called by the
// thread's module, start/writer-thread.ts) inside a group commit, and answers only after that commit is on disk.
// The event loop then never waits on their SQL, full-text indexing or fsync. Log lines written by a step travel
// back with the answer; the main thread writes them.
import { workerData } from 'node:worker_threads';
import { GroupCommit } from './group-commit.ts';
import { openDatabase, type Db } from './open.ts';
import { openPool, readOn } from './postgres.ts';
import { SETTINGS_CHANNEL } from './node-cache.ts';
import { PostgresCommit } from './postgres-commit.ts';
import { PostgresWriter } from './postgres-writer.ts';
import { runOn } from './sqlite-query.ts';
import { isQuery } from './query.ts';
import { ApiError } from '../errors.ts';
import type { Config } from '../config/config.ts';
import type { Level, Log } from '../log.ts';
import { serveJobs, withBuffers } from '../threads/worker-pool.ts';
import type { Answer, BackgroundJob, DbContext, JobTable, LogEntry, PostedStep, ReadsFirst } from './writer.ts';

// The background job runs this long after a call's commit, so that it finds a batch to do (search-backlog.ts:
// at 4,500 API sends a second, 50 ms gathers about 200), and then again at once while it has more.
const BACKGROUND_DELAY_MS = 50;

/** Serves the calls the Writer posts to this thread with `jobs`, and `background` between them. */
export function serveWriter(jobs: JobTable, background?: BackgroundJob, readsFirst: ReadsFirst = {}): void {
  const config = workerData.config as Config;
  if (config.databaseUrl) return servePostgres(config, jobs, background, readsFirst);
  const db = openDatabase(config.dataDir);
  // A batch's size rides on the first answer sent after its commit (metrics).
  const batches: number[] = [];
  // Jobs here are data in, rows out, so a batch runs without a savepoint per job (see GroupCommit).
  const commit = new GroupCommit(db, { rerunnable: true, onCommit: (calls) => batches.push(calls) });

  // Calls run one at a time inside the commit, so the entries of the call running now are the ones being written.
  let entries: LogEntry[] | null = null;
  const log = collecting((entry) => entries?.push(entry), {});

  let backgroundTimer: NodeJS.Timeout | null = null;
  const scheduleBackground = (ms: number) => {
    if (!background || backgroundTimer) return;
    backgroundTimer = setTimeout(() => {
      backgroundTimer = null;
      const ctx: DbContext = { clock: { now: () => Date.now() }, log, config };
      commit.runUnacknowledged(() => finish(db, background(ctx)) as boolean).then(
        (more) => more && scheduleBackground(0),
        // It failed with its batch (the disk, a lock held too long): the next call's commit brings it back.
        () => {},
      );
    }, ms);
    // It must not keep an idle writer alive: the pool ends it, and the next writer starts over from the table.
    backgroundTimer.unref();
  };
  // A backlog left by the thread before (ended, or the process stopped) is taken up at once.
  scheduleBackground(0);

  serveJobs(async ({ steps, now }: { steps: PostedStep[]; now: number }) => {
    for (const step of steps) if (!jobs[step.kind]) throw new Error(`the writer has no job "${step.kind}"`);
    // Structured clone delivers Buffers as plain Uint8Arrays; the jobs get Buffers back, without a copy.
    const payloads = steps.map((s) => withBuffers(s.payload));
    const ctx: DbContext = { clock: { now: () => now }, log, config };
    const logs: LogEntry[] = [];
    let answer: Answer;
    try {
      const results = await commit.run(() => {
        logs.length = 0; // a batch that is run again must not log twice
        entries = logs;
        try {
          return steps.map((step, i) => finish(db, jobs[step.kind](ctx, payloads[i])));
        } finally {
          entries = null;
        }
      });
      answer = { results, logs };
      scheduleBackground(BACKGROUND_DELAY_MS);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      answer = refusal(err);
    }
    return { result: { ...answer, batches: batches.splice(0) } };
  });
}

/**
 * On PostgreSQL: the same calls, run by PostgresWriter in this thread's own group commit on its own connection.
 * Its round trips, one after another while the box's write lock is held, are then answered by an event loop that
 * does nothing else, not one that also serves every SMTP session and API request (under load, half a millisecond
 * a round trip instead of a tenth).
 */
function servePostgres(config: Config, jobs: JobTable, background: BackgroundJob | undefined, readsFirst: ReadsFirst): void {
  const batches: number[] = [];
  // A change of settings this thread committed is heard before its COMMIT is answered, and said with the answers
  // after it: the main thread forgets what it kept before it answers the caller (db/node-cache.ts).
  const settingsChanged = new Set<string>();
  // One connection for the group commit, the others for the calls' reads before it (readsFirst).
  const pool = openPool(config.databaseUrl!, { max: 4, applicationName: 'mailwright-writer', notices: { channel: SETTINGS_CHANNEL, heard: (scope) => settingsChanged.add(scope) } });
  const writer = new PostgresWriter(new PostgresCommit(pool, (calls) => batches.push(calls)), jobs, config, { background, readsFirst, read: (q) => readOn(pool, q) });
  serveJobs(async ({ steps, now }: { steps: PostedStep[]; now: number }) => {
    const logs: LogEntry[] = [];
    const log = collecting((entry) => logs.push(entry), {});
    let answer: Answer;
    try {
      const results = await writer.commit(steps.map((s) => ({ kind: s.kind, payload: withBuffers(s.payload) })) as never, { now, log });
      answer = { results: results as unknown[], logs };
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      answer = refusal(err);
    }
    const changed = [...settingsChanged];
    settingsChanged.clear();
    return { result: { ...answer, batches: batches.splice(0), ...(changed.length ? { settingsChanged: changed } : {}) } };
  });
}

/** A log whose lines go into `entries`, for the main thread to write (it filters them by its level). */
function collecting(push: (entry: LogEntry) => void, base: Record<string, unknown>): Log {
  const at = (level: Level) => (msg: string, fields?: Record<string, unknown>) => void push({ level, msg, fields: { ...base, ...fields } });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (fields) => collecting(push, { ...base, ...fields }), setLevel: () => {} };
}

/** A check that can only be made in the transaction (a label the send would create) refused the call: the caller's 4xx, with nothing written. */
const refusal = (err: ApiError): Answer => ({ refused: { status: err.status, code: err.code, message: err.message, errors: err.errors } });

/** A job's result: the end of its query, run here on the writer's connection, or what it returned. */
function finish(db: Db, result: unknown): unknown {
  return isQuery(result) ? runOn(db, result) : result;
}
