// PostgreSQL for tests: Debian's server that .ci/run starts, reached as a role that may create databases
// (MAILWRIGHT_TEST_POSTGRES names another). Each test gets a database of its own, dropped afterwards.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Socket } from 'node:net';
import pg from 'pg';
import { GroupCommit } from '../db/group-commit.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase, type Db } from '../db/open.ts';
import { migratePostgres } from '../db/postgres-migrate.ts';
import { openPool, readOn, type PgPool } from '../db/postgres.ts';
import type { Query } from '../db/query.ts';
import { runOn } from '../db/sqlite-query.ts';
import Database from 'better-sqlite3';
import { test } from 'uvu';
import { join } from 'node:path';
import { postgresStore, sqliteStore, type Store } from '../db/store.ts';
import { tempDir } from './app.ts';

export const POSTGRES_ADMIN_URL = process.env.MAILWRIGHT_TEST_POSTGRES ?? 'postgres://mailwright:mailwright@127.0.0.1:5432/postgres';

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A new empty database: its URL, and drop() to remove it (closing whatever is still connected to it). */
export async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `mw_test_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => dropDatabase(name) };
}

/**
 * Drops the database, closing what is still connected to it. FORCE may not end an autovacuum worker that is
 * busy in it (42501: the worker is no role of ours): it ends soon, so the drop is tried again.
 */
async function dropDatabase(name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return void (await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
    } catch (err) {
      if ((err as { code?: string }).code !== '42501' || attempt === 20) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * The box's schema on both engines, for a test that runs the same queries on each: a SQLite database in a
 * temporary directory and a fresh PostgreSQL database, both migrated; close() removes both.
 */
export async function bothStores(): Promise<{ stores: Store[]; db: Db; pool: PgPool; close: () => Promise<void> }> {
  const dir = tempDir();
  const db = openDatabase(dir);
  migrate(db);
  const fresh = await freshDatabase();
  const pool = openPool(fresh.url, { max: 4 });
  await migratePostgres(pool);
  return {
    stores: [sqliteStore(db, new GroupCommit(db)), postgresStore(pool)],
    db,
    pool,
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
      await pool.end();
      await fresh.drop();
    },
  };
}

/**
 * A test file's two stores (bothStores), opened before its tests and each given to `setup`, closed after them.
 * `both(name, check)` is a test that checks each store in turn, a failure naming the store.
 */
export function onBothStores(setup?: (store: Store) => Promise<void>) {
  const stores: Store[] = [];
  let opened: Awaited<ReturnType<typeof bothStores>> | undefined;
  test.before(async () => {
    opened = await bothStores();
    stores.push(...opened.stores);
    for (const store of stores) await setup?.(store);
  });
  test.after(async () => {
    await opened?.close();
  });
  const both = (name: string, check: (store: Store) => Promise<void>) =>
    test(name, async () => {
      for (const store of stores) {
        try {
          await check(store);
        } catch (err) {
          (err as Error).message = `${store.dialect}: ${(err as Error).message}`;
          throw err;
        }
      }
    });
  return { stores, both, opened: () => opened! };
}

/** How many socket writes this process makes while `work` runs: on PostgreSQL, how many times it waits for the server. */
export async function socketWrites(work: () => Promise<unknown>): Promise<number> {
  const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...a: unknown[]) => void>;
  const [write, writev] = [proto._write, proto._writev];
  let n = 0;
  proto._write = function (this: Socket, ...a: unknown[]) {
    n++;
    return write.apply(this, a);
  };
  proto._writev = function (this: Socket, ...a: unknown[]) {
    n++;
    return writev.apply(this, a);
  };
  try {
    await work();
  } finally {
    [proto._write, proto._writev] = [write, writev];
  }
  return n;
}

/** The statements this thread asks PostgreSQL to run while `work` runs (BEGIN and COMMIT included), in order. */
export async function statementsSent(work: () => Promise<unknown>): Promise<string[]> {
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const query = proto.query;
  const sent: string[] = [];
  proto.query = function (this: unknown, ...a: unknown[]) {
    const q = a[0] as string | { text: string };
    sent.push(typeof q === 'string' ? q : q.text);
    return query.apply(this, a);
  };
  try {
    await work();
  } finally {
    proto.query = query;
  }
  return sent;
}

/** Reads the box's rows on a connection of the test's own: its PostgreSQL database, or its data directory's file. */
export async function readBox<T>(env: Record<string, string>, q: Query<T>): Promise<T> {
  if (env.MAILWRIGHT_DATABASE_URL) {
    const pool = openPool(env.MAILWRIGHT_DATABASE_URL, { max: 1 });
    try {
      return await readOn(pool, q);
    } finally {
      await pool.end();
    }
  }
  const db = new Database(join(env.MAILWRIGHT_DATA_DIR, 'mailwright.db'), { readonly: true });
  try {
    return runOn(db, q);
  } finally {
    db.close();
  }
}
