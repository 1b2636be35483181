// The write path of mail on PostgreSQL: the writer thread's job table (writer.ts) run in a group commit
// (postgres-commit.ts) of the thread's own (writer-worker.ts serves it there), each call's steps in the next
// transaction. The 200 or the 250 comes after that commit.
import type { Clock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import type { Level, Log } from '../log.ts';
import type { PostgresCommit } from './postgres-commit.ts';
import { isQuery, type Query } from './query.ts';
import type { BackgroundJob, DbContext, JobTable, LogEntry, ReadsFirst, Results, Step } from './writer.ts';

/** Runs the background job (the search backlog) this long after a commit, and again at once while it has more. */
const BACKGROUND_DELAY_MS = 50;

export interface PostgresWriterOptions {
  background?: BackgroundJob;
  /** Reads a step's payload gathers before the transaction (writer.ts ReadsFirst), run by `read`. */
  readsFirst?: ReadsFirst;
  read?: <T>(q: Query<T>) => Promise<T>;
}

export class PostgresWriter {
  private backgroundTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly commits: PostgresCommit,
    private readonly jobs: JobTable,
    private readonly config: Config,
    private readonly opts: PostgresWriterOptions = {},
  ) {}

  /** As Writer.commit: each step's result, in order, once the call's transaction is committed. */
  async commit<const S extends readonly Step[]>(steps: S, opts: { now: number; log: Log; transfer?: ArrayBuffer[] }): Promise<Results<S>> {
    for (const step of steps) if (!this.jobs[step.kind]) throw new Error(`the writer has no job "${step.kind}"`);
    const read: LogEntry[] = [];
    const payloads = await this.readFirst(steps, this.context({ now: () => opts.now }, read));
    const entries: LogEntry[] = [];
    const jobs = this.jobs;
    const ctx = this.context({ now: () => opts.now }, entries);
    const results = await this.commits.run(function* () {
      entries.length = 0; // a call run again after a serialization failure must not log twice
      const out: unknown[] = [];
      for (const [i, step] of steps.entries()) out.push(yield* asQuery(jobs[step.kind]!(ctx, payloads[i])));
      return out;
    });
    for (const e of [...read, ...entries]) opts.log[e.level](e.msg, e.fields);
    this.scheduleBackground(BACKGROUND_DELAY_MS);
    return results as Results<S>;
  }

  /** Each step's payload, with what its kind reads before the transaction (outside the write lock) added. */
  private readFirst(steps: readonly Step[], ctx: DbContext): Promise<unknown[]> {
    const { readsFirst = {}, read } = this.opts;
    return Promise.all(
      steps.map((step) => {
        const payload = (step as { payload?: unknown }).payload;
        const before = readsFirst[step.kind];
        return before && read ? read(before(ctx, payload)) : payload;
      }),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.backgroundTimer) clearTimeout(this.backgroundTimer);
  }

  private context(clock: Clock, entries: LogEntry[]): DbContext {
    const at = (level: Level) => (msg: string, fields?: Record<string, unknown>) => void entries.push({ level, msg, fields });
    const log: Log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log, setLevel: () => {} };
    // No SQLite connection here: a job on PostgreSQL is a query, and names none.
    return { clock, log, config: this.config };
  }

  private scheduleBackground(ms: number): void {
    const background = this.opts.background;
    if (!background || this.backgroundTimer || this.closed) return;
    this.backgroundTimer = setTimeout(() => {
      this.backgroundTimer = null;
      const ctx = this.context({ now: () => Date.now() }, []);
      this.commits.run(() => asQuery(background(ctx)) as Query<boolean>, false).then(
        (more) => more && this.scheduleBackground(0),
        // It failed (the server went away): the next call's commit brings it back.
        () => {},
      );
    }, ms);
    this.backgroundTimer.unref();
  }
}

/** A job's query; a job that is not one cannot run here (it still writes through SQLite directly). */
function* asQuery(result: unknown): Query<unknown> {
  if (!isQuery(result)) throw new Error('a writer job on PostgreSQL must be a query (db/query.ts)');
  return yield* result;
}
