// The writer's job table on PostgreSQL (postgres-writer.ts), against Debian's server: a call's steps commit
// together and come back in order, a step that refuses undoes the call, a call run again after a serialization
// failure logs once, a job that is not a query is refused rather than run outside the transaction, and a job's
// reads first (writer.ts ReadsFirst) are made outside the box's write lock.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../config/config.ts';
import { ApiError } from '../errors.ts';
import type { Log } from '../log.ts';
import { migratePostgres } from './postgres-migrate.ts';
import { PostgresWriter } from './postgres-writer.ts';
import { PostgresCommit } from './postgres-commit.ts';
import { WRITE_LOCK, openPool, readOn, type PgPool } from './postgres.ts';
import { run, value, type Query } from './query.ts';
import type { DbContext, JobTable, ReadsFirst, Step } from './writer.ts';
import { freshDatabase } from '../testkit/postgres.ts';

let pool: PgPool;
let drop: () => Promise<void>;
let writer: PostgresWriter;
const lines: string[] = [];
const log = { debug() {}, info: (msg: string) => void lines.push(msg), warn() {}, error() {}, child: () => log, setLevel() {} } as unknown as Log;

const jobs = {
  add: function* (ctx: DbContext, p: { id: string }): Query<string> {
    yield* run('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)', p.id, p.id, ctx.clock.now());
    ctx.log.info(`added ${p.id}`);
    return p.id;
  },
  bump: function* (ctx: DbContext): Query<number> {
    const n = Number(yield* value("SELECT count(*) FROM workspaces WHERE name LIKE 'bump%'"));
    yield* run('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)', `bump${n}`, `bump${n}`, ctx.clock.now());
    ctx.log.info('bumped');
    return n;
  },
  refuse: function* (): Query<never> {
    yield* run("INSERT INTO workspaces (id, name, created_at) VALUES ('refused', 'refused', 1)");
    throw new ApiError(409, 'nope', 'refused');
  },
  plain: () => 1,
  counted: function* (ctx: DbContext, p: { id: string; seen?: number }): Query<number | undefined> {
    yield* run('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)', p.id, p.id, ctx.clock.now());
    return p.seen;
  },
} satisfies JobTable;
let readsMade = 0;
const readsFirst = {
  counted: function* (_ctx: DbContext, p: { id: string }): Query<{ id: string; seen: number }> {
    const seen = Number(yield* value('SELECT count(*) FROM workspaces'));
    readsMade++;
    if (p.id === 'unread') throw new ApiError(422, 'unread', 'refused by its read');
    return { ...p, seen };
  },
} satisfies ReadsFirst;
const commit = (steps: Step[]) => writer.commit(steps as never, { now: 1_800_000_000_000, log }) as Promise<unknown[]>;

test.before(async () => {
  const fresh = await freshDatabase();
  drop = fresh.drop;
  pool = openPool(fresh.url, { max: 4 });
  await migratePostgres(pool);
  writer = new PostgresWriter(new PostgresCommit(pool), jobs, loadConfig({ MAILWRIGHT_DATA_DIR: '/nonexistent' }), { readsFirst, read: (q) => readOn(pool, q) });
});
test.after(async () => {
  await writer.close();
  await pool.end();
  await drop();
});

test('a call\'s steps commit together and resolve with their results in order, logging after the commit', async () => {
  assert.equal(await commit([{ kind: 'add', payload: { id: 'w1' } }, { kind: 'add', payload: { id: 'w2' } }] as never), ['w1', 'w2']);
  assert.equal(lines.splice(0), ['added w1', 'added w2']);
  assert.is(Number((await pool.query("SELECT count(*) AS n FROM workspaces WHERE id IN ('w1', 'w2')")).rows[0].n), 2);
});

test('a step that refuses undoes the whole call', async () => {
  const err = await commit([{ kind: 'add', payload: { id: 'w3' } }, { kind: 'refuse' }] as never).catch((e: unknown) => e);
  assert.instance(err, ApiError);
  assert.is((err as ApiError).status, 409);
  assert.is(Number((await pool.query("SELECT count(*) AS n FROM workspaces WHERE id IN ('w3', 'refused')")).rows[0].n), 0);
  assert.equal(lines.splice(0), [], 'nothing logged for an undone call');
});

test('calls that conflict are run again, each logging once, and none is lost', async () => {
  const results = await Promise.all(Array.from({ length: 12 }, () => commit([{ kind: 'bump' }] as never)));
  assert.equal(results.map((r) => r[0]).sort((a, b) => Number(a) - Number(b)), Array.from({ length: 12 }, (_, i) => i));
  assert.is(lines.splice(0).length, 12);
});

test('a job that is not a query is refused, and an unknown job too', async () => {
  assert.match(String(await commit([{ kind: 'plain' }] as never).catch((e: Error) => e.message)), /must be a query/);
  assert.match(String(await commit([{ kind: 'missing' }] as never).catch((e: Error) => e.message)), /no job "missing"/);
});


test("a job's reads first are made while another writer holds the write lock; its transaction waits for the lock", async () => {
  const holder = await pool.connect();
  await holder.query(`BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK})`);
  const before = Number((await pool.query('SELECT count(*) AS n FROM workspaces')).rows[0].n);
  const made = readsMade;
  let done = false;
  const call = commit([{ kind: 'counted', payload: { id: 'w9' } }] as never).then((r) => ((done = true), r));
  for (let i = 0; i < 100 && readsMade === made; i++) await new Promise((r) => setTimeout(r, 20));
  assert.is(readsMade, made + 1, 'the read was made with the lock held by another');
  await new Promise((r) => setTimeout(r, 100));
  assert.not.ok(done, 'the transaction waited for the lock');
  await holder.query('COMMIT');
  holder.release();
  assert.equal(await call, [before], 'the job got what its read saw');
  assert.is(Number((await pool.query("SELECT count(*) AS n FROM workspaces WHERE id = 'w9'")).rows[0].n), 1);
});

test('a read first that refuses refuses the call, with nothing written', async () => {
  const err = await commit([{ kind: 'add', payload: { id: 'w10' } }, { kind: 'counted', payload: { id: 'unread' } }] as never).catch((e: unknown) => e);
  assert.instance(err, ApiError);
  assert.is((err as ApiError).code, 'unread');
  assert.is(Number((await pool.query("SELECT count(*) AS n FROM workspaces WHERE id IN ('w10', 'unread')")).rows[0].n), 0);
});

test.run();
