// PostgreSQL for tests: Debian's server that .ci/run starts, reached as a role that may create databases
// (MAILWRIGHT_TEST_POSTGRES names another). Each test gets a database of its own, dropped afterwards.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

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
