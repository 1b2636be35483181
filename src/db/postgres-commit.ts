// Group commit on PostgreSQL (group-commit.ts is SQLite's): the writes a node hands over while one transaction is
// under way ride together in the next, under the box's write lock, with one BEGIN and one COMMIT. A write to
// PostgreSQL is mostly waiting for round trips, one after the other while the lock is held, so a transaction
// per write paid four of them (lock, BEGIN, COMMIT, unlock) and a WAL flush each time.
// Each write's promise settles after the shared COMMIT. One failing write is taken out and the others run again
// in a new transaction: a query is only database work, so it may be run again (query.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { EarlierChangeFailed, StoreUnreachable, Unanswered, WRITE_LOCK, reach, retryable, runOnClient, type PgClient, type PgPool } from './postgres.ts';
import { MERGED, readSchemaMap, type SchemaMap } from './postgres-merge.ts';
import type { Query } from './query.ts';

interface Write {
  make: () => Query<unknown>;
  durable: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** A batch this large commits at once; the rest wait for the next (the lock is not held for ever). */
const MAX_BATCH = 128;
/** Serialization failures or deadlocks (only from writers outside the lock) before a batch gives up. */
const RETRIES = 20;

// The write lock is a transaction-level advisory lock taken right after BEGIN, in the same round trip, and
// COMMIT gives it back. READ COMMITTED gives each statement a snapshot taken after it returned, so the
// transaction sees every commit before it: writers one at a time, as on SQLite, which the resources were
// written for.
const begin = (durable: boolean) => `BEGIN; ${durable ? '' : 'SET LOCAL synchronous_commit = off; '}SELECT pg_advisory_xact_lock(${WRITE_LOCK})`;

export class PostgresCommit {
  private pending: Write[] = [];
  private running = false;
  /** The schema as merging one-row INSERTs needs it (postgres-merge.ts), read at the first commit. */
  private schema: SchemaMap | null = null;

  constructor(
    private readonly pool: PgPool,
    /** Hears the number of writes each committed transaction carried (metrics: writer batch sizes). */
    private readonly onCommit?: (writes: number) => void,
  ) {}

  /**
   * Runs the query `make` returns in the next shared transaction; resolves once that is committed, and on disk
   * unless `durable` is false (synchronous_commit off: bookkeeping that answers nobody).
   */
  run<T>(make: () => Query<T>, durable = true): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ make, durable, resolve: resolve as (v: unknown) => void, reject });
      if (!this.running) {
        this.running = true;
        // The writes handed over in this turn of the event loop ride in the first transaction too.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length) await this.commit(this.pending.splice(0, MAX_BATCH));
    this.running = false;
  }

  /** Commits `writes` together, less any that fail, each of which is refused with its own error. */
  private async commit(writes: Write[]): Promise<void> {
    let merge = true;
    for (let attempt = 1; writes.length; ) {
      let client: PgClient;
      try {
        client = await reach(this.pool.connect());
      } catch (err) {
        for (const w of writes) w.reject(err);
        return;
      }
      let failed: { at: number; error: unknown } | null = null;
      const results: unknown[] = [];
      try {
        this.schema ??= await reach(readSchemaMap(client));
        await reach(client.query(begin(writes.some((w) => w.durable))));
        // Each query's last changes go on with the next query's statements, and the last ones with the COMMIT
        // (which an aborted transaction answers by rolling back).
        const unanswered = new Unanswered(client, merge ? this.schema : undefined);
        const memo = new Map<string, unknown>();
        for (const [at, w] of writes.entries()) {
          try {
            results.push(await runOnClient(client, w.make(), { unanswered, of: at, memo }));
          } catch (error) {
            failed = error instanceof EarlierChangeFailed ? { at: error.failure.of, error: error.failure.error } : { at, error };
            break;
          }
        }
        if (!failed) {
          unanswered.flush();
          const committed = reach(client.query('COMMIT'));
          committed.catch(() => {});
          const late = await unanswered.settled();
          if (late) failed = { at: late.of, error: late.error };
          else await committed;
        }
      } catch (error) {
        failed = { at: -1, error }; // BEGIN or COMMIT: the whole batch
      }
      if (!failed) {
        client.release();
        this.onCommit?.(writes.length);
        writes.forEach((w, i) => w.resolve(results[i]));
        return;
      }
      // The server out of reach fails the batch; anything else (a statement refused, the query's own throw)
      // leaves the connection usable, once rolled back.
      const cut = failed.error instanceof StoreUnreachable;
      let broken = cut ? (failed.error as Error) : undefined;
      if (!broken) await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      client.release(broken);
      if (failed.at === MERGED && !cut) {
        // A statement of rows from several writes failed: run them again unmerged, to learn whose row it was.
        merge = false;
      } else if (retryable(failed.error) && attempt++ < RETRIES) {
        await sleep(Math.random() * Math.min(50, 2 ** attempt));
      } else if (failed.at < 0 || cut) {
        // No transaction could be made or kept (the server went away): every write of the batch fails with it.
        for (const w of writes) w.reject(failed.error);
        return;
      } else {
        writes[failed.at]!.reject(failed.error);
        writes = writes.filter((_, i) => i !== failed!.at);
      }
    }
  }
}
