// A corrupted database is reported, never served (DESIGN.md 3, catalogue DUR-12): pages in the middle
// overwritten stop start-up with exit 78 naming the file (quick_check), a damaged header too (SQLITE_NOTADB,
// for the CLI as well), and corruption met while running turns /healthz to 503.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../config/config.ts';
import { startApp } from '../app.ts';
import { createLog } from '../log.ts';
import { systemClock } from '../clock.ts';
import { createKey } from '../account/keys.ts';
import { findWorkspace, DEFAULT_WORKSPACE } from '../account/workspaces.ts';
import { databasePath } from './open.ts';
import { request, runCli, seedWorkspace, sqliteOnly, startTestApp, tempDir, testEnv } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';
import { runOn } from './sqlite-query.ts';

const quiet = () => createLog({ level: 'error', write: () => {} });

/** A stopped box's data directory with a few hundred API keys, so that api_keys spans many pages. */
async function boxWithKeys(): Promise<{ dataDir: string; env: Record<string, string>; file: string }> {
  const dataDir = tempDir();
  const env = testEnv(dataDir);
  const running = await startApp(loadConfig(env), { log: quiet() });
  const db = running.app.db!;
  const ws = runOn(db, findWorkspace(DEFAULT_WORKSPACE))!;
  db.transaction(() => {
    for (let i = 0; i < 500; i++) runOn(db, createKey(systemClock, ws.id, `key ${i}`));
  })();
  await running.stop();
  const file = databasePath(dataDir);
  const check = new Database(file);
  check.pragma('wal_checkpoint(TRUNCATE)'); // everything in the main file, where the garbage will go
  check.close();
  return { dataDir, env, file };
}

/** Leaf pages of a table, by dbstat. */
function leafPages(db: Database.Database, table: string): number[] {
  return db.prepare("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno").pluck().all(table) as number[];
}

/** Overwrites whole pages of the database file with random bytes, behind SQLite's back. */
function garble(file: string, pages: number[], pageSize = 4096): void {
  const fd = openSync(file, 'r+');
  try {
    for (const page of pages) writeSync(fd, randomBytes(pageSize), 0, pageSize, (page - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
}

// Every wait is bounded: a start-up or CLI run that hangs fails the file instead of stalling the suite.
setTimeout(() => {
  console.error('corruption.test.ts: timed out after 120 s');
  process.exit(1);
}, 120_000).unref();

sqliteOnly(test)('pages in the middle overwritten: serve exits 78 naming the file, pointing at doctor and a backup', async () => {
  const { dataDir, env, file } = await boxWithKeys();
  try {
    const db = new Database(file, { readonly: true });
    const pages = leafPages(db, 'api_keys');
    const total = Number(db.pragma('page_count', { simple: true }));
    db.close();
    assert.ok(pages.length >= 4, `api_keys has ${pages.length} leaf pages`);
    const middle = pages.slice(1, 3);
    assert.ok(middle.every((p) => p > 2 && p < total), 'pages in the middle of the file');
    garble(file, middle);

    const res = await runCli(['serve'], env);
    assert.is(res.code, 78, res.stderr);
    assert.ok(res.stderr.includes(file), res.stderr);
    assert.match(res.stderr, /damaged \(quick_check: /);
    assert.match(res.stderr, /mailwright doctor/);
    assert.match(res.stderr, /restore the latest backup/);
    assert.not.match(res.stderr, /    at /, 'no stack trace');
    assert.not.match(res.stdout, /"msg":"ready"/, 'never ready');
    const doctor = await runCli(['doctor'], env);
    assert.is(doctor.code, 1, doctor.stderr);
    assert.match(doctor.stdout, /mailwright\.db: DAMAGED \(quick_check: /);
    assert.match(doctor.stdout, /restore the latest\s+backup/);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

sqliteOnly(test)('a check that outlasts the start-up wait goes on: damage it then finds turns /healthz to 503', async () => {
  const { dataDir, env, file } = await boxWithKeys();
  const logs: string[] = [];
  const db = new Database(file, { readonly: true });
  const pages = leafPages(db, 'api_keys');
  db.close();
  garble(file, pages.slice(1, 3));
  const running = await startApp(loadConfig(env), { log: createLog({ level: 'info', write: (l) => logs.push(l) }), checkWaitMs: 0 });
  try {
    const url = `http://127.0.0.1:${running.http.port}/healthz`;
    assert.ok(logs.some((l) => l.includes('the database check is still running')), 'it said it started before the check finished');
    const unhealthy = await eventually(async () => {
      const res = await request(url);
      return res.status === 503 && res;
    }, 10_000, '/healthz 503');
    assert.equal(unhealthy.body, { ok: false });
    const damaged = logs.filter((l) => l.includes('the database is damaged'));
    assert.is(damaged.length, 1);
    assert.is(JSON.parse(damaged[0]).level, 'error');
    assert.ok(damaged[0].includes(file) && damaged[0].includes('mailwright doctor'), damaged[0]);
  } finally {
    await running.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

sqliteOnly(test)('the first bytes overwritten: serve and the CLI exit 78 naming the file and pointing at doctor', async () => {
  const { dataDir, env, file } = await boxWithKeys();
  try {
    const fd = openSync(file, 'r+');
    writeSync(fd, randomBytes(100), 0, 100, 0);
    closeSync(fd);
    for (const args of [['serve'], ['key', 'create', '--name', 'ci']]) {
      const res = await runCli(args, env);
      assert.is(res.code, 78, `${args[0]}: ${res.stderr}`);
      assert.ok(res.stderr.includes(file), res.stderr);
      assert.match(res.stderr, /SQLITE_NOTADB/);
      assert.match(res.stderr, /mailwright doctor/);
      assert.not.match(res.stderr, /    at /, 'no stack trace');
    }
    const doctor = await runCli(['doctor'], env);
    assert.is(doctor.code, 1, doctor.stderr);
    assert.match(doctor.stdout, /DAMAGED \(quick_check: SQLITE_NOTADB/, 'doctor says what is wrong instead of refusing too');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

sqliteOnly(test)('corruption met at run time: the request fails, /healthz answers 503 from then on, logged once', async () => {
  const t = await startTestApp();
  try {
    const { key } = await seedWorkspace(t);
    const { db, clock } = t.app;
    const ws = runOn(db, findWorkspace(DEFAULT_WORKSPACE))!;
    db.transaction(() => {
      for (let i = 0; i < 500; i++) runOn(db, createKey(clock, ws.id, `key ${i}`));
    })();
    assert.is((await request(`${t.url}/healthz`)).status, 200);
    assert.is((await request(`${t.api}/keys`, { key })).status, 200);

    // Every page in the main file, then garbage over api_keys' leaves there.
    const [busy] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
    assert.is(busy.busy, 0);
    const file = databasePath(t.dataDir);
    garble(file, leafPages(db, 'api_keys'));
    // A commit by another connection changes the WAL, so the box's connection drops its cached pages at its
    // next read and reads the garbled ones from the file.
    const other = new Database(file);
    other.prepare("INSERT INTO box_settings (key, value) VALUES ('test-poke', x'00')").run();
    other.close();

    const res = await request(`${t.api}/keys`, { key });
    assert.is(res.status, 500, JSON.stringify(res.body));
    assert.is(res.body.error.code, 'internal_error');
    const health = await request(`${t.url}/healthz`);
    assert.equal([health.status, health.body], [503, { ok: false }]);
    await request(`${t.api}/keys`, { key });
    assert.is((await request(`${t.url}/healthz`)).status, 503, 'it stays unhealthy');
    const damaged = t.logs.filter((l) => l.includes('the database is damaged'));
    assert.is(damaged.length, 1, 'logged once');
    assert.match(damaged[0], /SQLITE_CORRUPT/);
    assert.ok(damaged[0].includes(file), damaged[0]);
  } finally {
    await t.stop();
  }
});

test.run();
