// PostgreSQL for tests: Debian's server that .ci/run starts, reached as a role that may create databases
// (MAILWRIGHT_TEST_POSTGRES names another). Each test gets a database of its own, dropped afterwards.
import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Socket } from 'node:net';
import pg from 'pg';
import { GroupCommit } from '../db/group-commit.ts';
import { listMigrations, migrate } from '../db/migrate.ts';
import { openDatabase, type Db } from '../db/open.ts';
import { migratePostgres, POSTGRES_MIGRATIONS } from '../db/postgres-migrate.ts';
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
  return { url: databaseUrl(name), drop: () => dropDatabase(name) };
}

/**
 * A new database with the box's whole schema: a copy of a template migrated once per set of migrations (about a
 * third of a second, where migrating a new database takes two or three). Processes that need the template at the
 * same time take turns on an advisory lock; the one that makes it migrates a database under another name and
 * renames it when done, so nobody copies a half-made one.
 */
export async function migratedDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const template = await migratedTemplate();
  const name = `mw_test_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  return { url: databaseUrl(name), drop: () => dropDatabase(name) };
}

let template: Promise<string> | undefined;
const TEMPLATE_LOCK = 7_004_301;

function migratedTemplate(): Promise<string> {
  template ??= admin(async (c) => {
    const hash = createHash('sha256');
    for (const m of listMigrations(POSTGRES_MIGRATIONS)) hash.update(`${m.version} ${m.sql}\0`);
    const name = `mw_template_${hash.digest('hex').slice(0, 16)}`;
    await c.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    if ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) return name;
    const making = `${name}_making_${process.pid}`;
    await c.query(`CREATE DATABASE ${making}`);
    const pool = openPool(databaseUrl(making), { max: 1 });
    try {
      await migratePostgres(pool);
    } finally {
      await pool.end();
    }
    // The server may not have ended the pool's session yet (55006: the database is being accessed).
    await retrying('55006', () => c.query(`ALTER DATABASE ${making} RENAME TO ${name}`));
    // Templates of older migrations (and any left half-made by a killed process) are of no more use.
    const stale = await c.query("SELECT datname FROM pg_database WHERE datname LIKE 'mw\\_template\\_%' AND datname <> $1", [name]);
    for (const { datname } of stale.rows) await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
    return name;
  });
  return template;
}

/** `work` again while it fails with the PostgreSQL error `code` (a state that ends by itself), up to 5 s. */
async function retrying<T>(code: string, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if ((err as { code?: string }).code !== code || attempt === 20) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

function databaseUrl(name: string): string {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Drops the database, closing what is still connected to it. FORCE may not end an autovacuum worker that is
 * busy in it (42501: the worker is no role of ours): it ends soon, so the drop is tried again.
 */
async function dropDatabase(name: string): Promise<void> {
  await retrying('42501', () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
}

/**
 * The box's schema on both engines, for a test that runs the same queries on each: a SQLite database in a
 * temporary directory and a fresh PostgreSQL database, both migrated; close() removes both.
 */
export async function bothStores(): Promise<{ stores: Store[]; db: Db; pool: PgPool; close: () => Promise<void> }> {
  const dir = tempDir();
  const db = openDatabase(dir);
  migrate(db);
  const fresh = await migratedDatabase();
  const pool = openPool(fresh.url, { max: 4 });
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
