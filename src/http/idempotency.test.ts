// The idempotency layer on the real HTTP core, real SQLite and real HTTP, through a small route that
// changes state the way the send endpoints will: its effect and its idempotency record commit together.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { loadConfig } from '../config/config.ts';
import { openStore } from '../start/store.ts';
import { createLog } from '../log.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { newId } from '../db/ids.ts';
import type { Db } from '../db/open.ts';
import { ApiError } from '../errors.ts';
import { findKeyBySecret, createKey } from '../account/keys.ts';
import { createWorkspace, findWorkspace } from '../account/workspaces.ts';
import { tempDir, testEnv, request } from '../testkit/app.ts';
import { apiRouter, createHttpApp, createHttpServer } from './server.ts';
import { principalOf, requireAuth } from './auth.ts';
import { Idempotency, purgeIdempotencyKeys, storeAnswer } from '../db/idempotency.ts';
import { sqliteStore } from '../db/store.ts';
import { claimOf, idempotent } from './idempotency.ts';
import { runOn } from '../db/sqlite-query.ts';

const clock = { at: Date.now(), now() { return this.at; } };
const dataDir = tempDir();
const config = loadConfig(testEnv(dataDir));
let db: Db;
let server: Server;
let url: string;
let keyA: string;
let keyB: string;

function start() {
  db = openStore(config, clock);
  db.exec('CREATE TABLE IF NOT EXISTS things (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, name TEXT NOT NULL)');
  const commit = new GroupCommit(db);
  const idempotency = new Idempotency(sqliteStore(db, commit), clock);
  const router = apiRouter();
  router.post('/things', requireAuth(config.publicUrl), idempotent(idempotency, 'POST /things'), async (ctx) => {
    const body = ctx.request.body as { name?: string; delayMs?: number; failAfterRecording?: boolean };
    if (typeof body.name !== 'string') throw new ApiError(400, 'validation_error', 'name: is required');
    if (body.delayMs) await new Promise((r) => setTimeout(r, body.delayMs));
    const answer = { id: newId('em', clock.now()), name: body.name };
    const claim = claimOf(ctx);
    await commit.run(() => {
      db.prepare('INSERT INTO things VALUES (?, ?, ?)').run(answer.id, principalOf(ctx).workspaceId, body.name);
      if (claim) runOn(db, storeAnswer(clock.now(), claim.record, 200, answer));
      if (body.failAfterRecording) throw new Error('the effect failed after the record was written');
    });
    claim?.stored();
    ctx.body = answer;
  });
  const app = createHttpApp(
    {
      config,
      log: createLog({ write: () => {} }),
      authenticator: {
        byKey: async (secret) => {
          const k = runOn(db, findKeyBySecret(clock, secret));
          return k && { kind: 'key', ...k };
        },
        bySession: async () => null,
      },
      rateLimiter: null,
      healthy: () => true,
      routeScopes: { 'POST /things': {} },
    },
    [router],
  );
  server = createHttpServer(app);
  return new Promise<void>((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/things`;
      resolve();
    }),
  );
}
const stop = () => new Promise<void>((resolve) => server.close(() => (db.close(), resolve())));

test.before(async () => {
  await start();
  keyA = runOn(db, createKey(clock, runOn(db, findWorkspace('default'))!.id, 'a')).key;
  keyB = runOn(db, createKey(clock, runOn(db, createWorkspace(clock, 'b')).id, 'b')).key;
});
test.after(() => stop());

const post = (body: unknown, key: string, idem?: string) => request(url, { body, key, headers: idem === undefined ? {} : { 'idempotency-key': idem } });
const things = (name: string) => Number(db.prepare('SELECT count(*) FROM things WHERE name = ?').pluck().get(name));

test('same key and same body replays the first answer; the effect happens once', async () => {
  const first = await post({ name: 'one', extra: { a: 1, b: 2 } }, keyA, 'k-1');
  const again = await post({ extra: { b: 2, a: 1 }, name: 'one' }, keyA, 'k-1');
  assert.is(first.status, 200);
  assert.equal([again.status, again.body], [200, first.body]);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.is(first.headers.get('idempotent-replayed'), null);
  assert.is(things('one'), 1);
  const without = await post({ name: 'one' }, keyA);
  assert.is.not(without.body.id, first.body.id, 'without a key every request is new');
});

test('same key with another body is 409 invalid_idempotent_request and changes nothing', async () => {
  await post({ name: 'two' }, keyA, 'k-2');
  const res = await post({ name: 'two, changed' }, keyA, 'k-2');
  assert.equal([res.status, res.body.error.code], [409, 'invalid_idempotent_request']);
  assert.is(things('two, changed'), 0);
});

test('the same key still in flight is 409 concurrent_idempotent_requests; exactly one effect', async () => {
  const slow = post({ name: 'three', delayMs: 300 }, keyA, 'k-3');
  await new Promise((r) => setTimeout(r, 50));
  const racing = await Promise.all(Array.from({ length: 5 }, () => post({ name: 'three', delayMs: 300 }, keyA, 'k-3')));
  for (const r of racing) assert.equal([r.status, r.body.error.code], [409, 'concurrent_idempotent_requests']);
  const done = await slow;
  assert.is(done.status, 200);
  assert.is(things('three'), 1);
  assert.equal((await post({ name: 'three', delayMs: 300 }, keyA, 'k-3')).body, done.body, 'after it finished, the answer replays');
});

test('4xx outcomes are not kept, so a corrected retry with the same key works', async () => {
  const bad = await post({ nom: 'typo' }, keyA, 'k-4');
  assert.is(bad.status, 400);
  const fixed = await post({ name: 'four' }, keyA, 'k-4');
  assert.is(fixed.status, 200);
  assert.is(things('four'), 1);
});

test('effect and record commit together: a failed effect leaves no record, the retry runs', async () => {
  const failed = await post({ name: 'five', failAfterRecording: true }, keyA, 'k-5');
  assert.is(failed.status, 500);
  assert.is(things('five'), 0);
  const retry = await post({ name: 'five' }, keyA, 'k-5');
  assert.is(retry.status, 200);
  assert.is(retry.headers.get('idempotent-replayed'), null);
  assert.is(things('five'), 1);
});

test('keys are scoped to the workspace', async () => {
  const a = await post({ name: 'six' }, keyA, 'shared');
  const b = await post({ name: 'six' }, keyB, 'shared');
  assert.is.not(a.body.id, b.body.id);
  assert.is(b.headers.get('idempotent-replayed'), null);
  assert.is(things('six'), 2);
});

test('an invalid key is 400 invalid_idempotency_key', async () => {
  for (const key of ['', 'x'.repeat(257)]) {
    const res = await post({ name: 'seven' }, keyA, key);
    assert.equal([res.status, res.body.error.code], [400, 'invalid_idempotency_key']);
  }
  assert.is((await post({ name: 'seven' }, keyA, 'x'.repeat(256))).status, 200);
});

test('records survive a restart and expire after 24 hours', async () => {
  const first = await post({ name: 'eight' }, keyA, 'k-8');
  await stop();
  await start();
  const replay = await post({ name: 'eight' }, keyA, 'k-8');
  assert.equal(replay.body, first.body);
  assert.is(replay.headers.get('idempotent-replayed'), 'true');
  clock.at += 24 * 3600_000;
  const later = await post({ name: 'eight' }, keyA, 'k-8');
  assert.is.not(later.body.id, first.body.id, 'after 24 h the key is new again');
  assert.is(things('eight'), 2);
  assert.ok(runOn(db, purgeIdempotencyKeys(clock.at + 24 * 3600_000)) >= 1);
});

test.run();
