// serve with database_url: the box keeps its state in PostgreSQL (Debian's server, testkit/postgres.ts). It
// makes its tables at the first start, serves the API from them, starts again on the same database without
// migrating twice, and refuses a wrong password as a configuration error (exit 78) without showing it. The
// commands act on the same database.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { loadConfig } from '../config/config.ts';
import { startApp } from '../app.ts';
import { StartupError } from '../errors.ts';
import { createLog } from '../log.ts';
import { freshDatabase } from '../testkit/postgres.ts';
import { request, runCli, seedWorkspace, tempDir, testEnv, type TestApp } from '../testkit/app.ts';

let database: Awaited<ReturnType<typeof freshDatabase>>;
test.before(async () => {
  database = await freshDatabase();
});
test.after(async () => {
  await database.drop();
});

async function serve(url: string) {
  const dataDir = tempDir();
  const env = testEnv(dataDir, { MAILWRIGHT_DATABASE_URL: url });
  const logs: string[] = [];
  const running = await startApp(loadConfig(env), { log: createLog({ level: 'info', write: (line) => logs.push(line) }) });
  const t = { env, url: `http://127.0.0.1:${running.http.port}`, api: `http://127.0.0.1:${running.http.port}/api/v1`, app: running.app, running, logs, dataDir } as unknown as TestApp;
  return { t, logs, stop: async () => (await running.stop(), rmSync(dataDir, { recursive: true, force: true })) };
}

test('the first start makes the tables in PostgreSQL; the API answers from them; SQLite is not used', async () => {
  const first = await serve(database.url);
  try {
    assert.is(first.t.app.db, undefined);
    assert.is(first.t.app.store.dialect, 'postgres');
    assert.ok(first.logs.some((l) => l.includes('"msg":"schema migrated"')), 'migrated at the first start');
    assert.is((await fetch(`${first.t.url}/healthz`)).status, 200);
    const { key } = await seedWorkspace(first.t);
    const made = await request(`${first.t.api}/domains`, { key, body: { name: 'pg.example' } });
    assert.is(made.status, 201, JSON.stringify(made.body));
    const listed = await request(`${first.t.api}/domains`, { key });
    assert.equal(listed.body.data.map((d: { name: string }) => d.name), ['pg.example']);
  } finally {
    await first.stop();
  }
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  const { rows } = await client.query('SELECT name FROM domains');
  await client.end();
  assert.equal(rows, [{ name: 'pg.example' }], 'the row is in PostgreSQL');

  const again = await serve(database.url);
  try {
    assert.not.ok(again.logs.some((l) => l.includes('"msg":"schema migrated"')), 'nothing to migrate the second time');
    const { key } = await seedWorkspace(again.t, { email: 'second@example.test' });
    assert.equal((await request(`${again.t.api}/domains`, { key })).body.data.map((d: { name: string }) => d.name), ['pg.example']);
  } finally {
    await again.stop();
  }
});

test('a wrong password is a configuration error (exit 78), and the message does not show it', async () => {
  const url = new URL(database.url);
  url.password = 'not-the-password';
  const err = await serve(url.toString()).then(
    async (s) => (await s.stop(), null),
    (e: unknown) => e,
  );
  assert.instance(err, StartupError);
  assert.match((err as Error).message, /database_url/);
  assert.not.ok((err as Error).message.includes('not-the-password'), (err as Error).message);
});

test('the commands act on the PostgreSQL database: refused before a box ran on it, then a key, the setup link, a backup (restore refused) and doctor', async () => {
  const fresh = await freshDatabase();
  const dataDir = tempDir();
  try {
    const env = testEnv(dataDir, { MAILWRIGHT_DATABASE_URL: fresh.url });
    const before = await runCli(['queue', 'list'], env);
    assert.is(before.code, 78, before.stderr);
    assert.match(before.stderr, /no box has run on the database postgres:\/\/mailwright@127\.0\.0\.1:5432\/mw_test_/);
    assert.not.ok(before.stderr.includes(':mailwright@'), 'no password');
    const key = await runCli(['key', 'create', '--name', 'cli key'], env);
    assert.is(key.code, 0, key.stderr);
    assert.match(key.stdout.trim(), /^re_/);
    const link = await runCli(['setup', 'link'], env);
    assert.is(link.code, 0, link.stderr);
    assert.match(link.stdout, /\/setup#/);
    const backup = await runCli(['backup', `${dataDir}/b.backup`], env);
    assert.is(backup.code, 0, backup.stderr);
    const restore = await runCli(['restore', `${dataDir}/b.backup`], env);
    assert.is(restore.code, 78);
    assert.match(restore.stderr, /Restore into a data directory without database_url, then .*'mailwright migrate --to URL'/);
    const running = await serve(fresh.url);
    try {
      assert.is((await request(`${running.t.api}/domains`, { key: key.stdout.trim() })).status, 200, 'the key made by the command works');
      // doctor checks the server, its replicas and the nodes; this box is one node, its clock the server's.
      const doctor = await runCli(['doctor'], env);
      assert.match(doctor.stdout + doctor.stderr, /✓ PostgreSQL 1[5-9][.\d]*.*, the database is [\d,]+ MiB/);
      assert.match(doctor.stdout, /✓ no streaming replica is connected/);
      assert.match(doctor.stdout, new RegExp(`Nodes\\n  ✓ node ${running.t.app.node.id} \\(\\S+, pid ${process.pid}\\) is running; its clock is within 0\\.\\d s of the database's`));
    } finally {
      await running.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await fresh.drop();
  }
});

test.run();
