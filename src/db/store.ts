// The store a box keeps its state in, as the rest of the code sees it: queries (query.ts) run by either the
// data directory's SQLite database or a PostgreSQL database several nodes share (docs/architecture.md, "The
// store"). The resources' functions are queries; a caller hands one to the store to read, or to write in a
// transaction that is durable before the promise resolves.
import type { GroupCommit } from './group-commit.ts';
import type { Db } from './open.ts';
import { readOn, type PgPool } from './postgres.ts';
import { PostgresCommit } from './postgres-commit.ts';
import type { Dialect, Query } from './query.ts';
import { runOn } from './sqlite-query.ts';

export interface Store {
  readonly dialect: Dialect;
  /**
   * Runs a query that only reads. Each statement sees what was committed when it ran, unless `snapshot`: then
   * all of them see one moment (a read transaction), for a page whose parts must agree.
   */
  read<T>(q: Query<T>, opts?: { snapshot?: boolean }): Promise<T>;
  /**
   * Runs the query `make` returns in a transaction; resolves once it is committed and durable. `make` may be
   * called again (a rerun after a rollback), so it only makes the query. `acknowledged: false` is for
   * bookkeeping that answers nobody (claims, outcomes, counts): its commit need not wait for the disk, and
   * becomes durable with the next one that does (a power cut can undo it, never mail that was acknowledged).
   */
  write<T>(make: () => Query<T>, opts?: { acknowledged?: boolean }): Promise<T>;
}

/** The data directory's database: a query runs at once, a write in the event loop's group commit. */
export function sqliteStore(db: Db, commit: GroupCommit): Store {
  return {
    dialect: 'sqlite',
    read: <T>(q: Query<T>, opts?: { snapshot?: boolean }) => new Promise<T>((resolve) => resolve(opts?.snapshot ? db.transaction(() => runOn(db, q))() : runOn(db, q))),
    write: <T>(make: () => Query<T>, opts?: { acknowledged?: boolean }) =>
      opts?.acknowledged === false ? commit.runUnacknowledged(() => runOn(db, make())) : commit.run(() => runOn(db, make())),
  };
}

/** A PostgreSQL database: each read on a connection of the pool, each write in the node's group commit. */
export function postgresStore(pool: PgPool, commit = new PostgresCommit(pool)): Store {
  return {
    dialect: 'postgres',
    read: (q, opts) => readOn(pool, q, opts?.snapshot),
    write: (make, opts) => commit.run(make, opts?.acknowledged !== false),
  };
}
