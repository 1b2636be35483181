// The group commit on PostgreSQL: writes handed over together share a transaction, in the order handed over; one
// that fails is refused alone and the others commit; two nodes' writes never interleave.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freshDatabase } from '../testkit/postgres.ts';
import { PostgresCommit } from './postgres-commit.ts';
import { openPool, readOn, type PgPool } from './postgres.ts';
import { change, run, transactionMemo, value, type Query } from './query.ts';

let pool: PgPool;
let drop: () => Promise<void>;
const batches: number[] = [];
let commits: PostgresCommit;

test.before(async () => {
  const fresh = await freshDatabase();
  drop = fresh.drop;
  pool = openPool(fresh.url, { max: 6 });
  await pool.query('CREATE TABLE notes (n INTEGER PRIMARY KEY, seen INTEGER NOT NULL, tx BIGINT NOT NULL)');
  commits = new PostgresCommit(pool, (writes) => batches.push(writes));
});
test.after(async () => {
  await pool.end();
  await drop();
});

/** Adds note `n`, recording how many notes it saw before it and its transaction. */
function* note(n: number): Query<number> {
  const seen = Number(yield* value('SELECT count(*) FROM notes'));
  yield* run('INSERT INTO notes (n, seen, tx) VALUES (?, ?, txid_current())', n, seen);
  return seen;
}

const notes = async () => (await pool.query('SELECT n, seen, tx FROM notes ORDER BY n')).rows as Array<{ n: number; seen: number; tx: string }>;

test('writes handed over together commit in one transaction, each seeing the ones before it', async () => {
  batches.length = 0;
  const seen = await Promise.all(Array.from({ length: 20 }, (_, i) => commits.run(() => note(i))));
  assert.equal(seen, Array.from({ length: 20 }, (_, i) => i), 'each write saw exactly the writes handed over before it');
  const rows = await notes();
  assert.is(rows.length, 20);
  assert.is(new Set(rows.map((r) => r.tx)).size, 1, 'one transaction');
  assert.equal(batches, [20]);
  await pool.query('DELETE FROM notes');
});

test('a write that fails is refused with its own error, and the others of its batch commit', async () => {
  await commits.run(() => note(5));
  const outcomes = await Promise.allSettled([1, 5, 2, 3].map((n) => commits.run(() => note(n))));
  assert.equal(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
  assert.is(((outcomes[1] as PromiseRejectedResult).reason as { code?: string }).code, '23505', 'the duplicate key, as PostgreSQL said it');
  assert.equal((await notes()).map((r) => r.n), [1, 2, 3, 5]);
  await pool.query('DELETE FROM notes');
});

test('a change that fails after its query ended is still its own write\'s failure, in the middle of a batch or last', async () => {
  // Only changes: each query ends before its insert is answered, which the next query's statements, or the
  // COMMIT, carry.
  const add = (n: number) => commits.run(() => change('INSERT INTO notes (n, seen, tx) VALUES (?, 0, txid_current())', n));
  await add(5);
  for (const order of [[1, 5, 2, 3], [1, 2, 3, 5]]) {
    const outcomes = await Promise.allSettled(order.map(add));
    assert.equal(outcomes.map((o) => o.status), order.map((n) => (n === 5 ? 'rejected' : 'fulfilled')), `order ${order}`);
    assert.is(((outcomes[order.indexOf(5)] as PromiseRejectedResult).reason as { code?: string }).code, '23505');
    assert.equal((await notes()).map((r) => r.n), [1, 2, 3, 5]);
    await pool.query('DELETE FROM notes WHERE n != 5');
  }
  // And a read after an earlier query's failed change refuses that query, not the reader.
  const outcomes = await Promise.allSettled([add(5), commits.run(() => note(6))]);
  assert.equal(outcomes.map((o) => o.status), ['rejected', 'fulfilled']);
  assert.equal((await notes()).map((r) => r.n), [5, 6]);
  await pool.query('DELETE FROM notes');
});

test('a write whose query throws is refused, and nothing of it is kept', async () => {
  const failing = commits.run(function* () {
    yield* note(7);
    throw new Error('changed its mind');
  });
  const kept = commits.run(() => note(8));
  assert.match(String(await failing.catch((e: Error) => e.message)), /changed its mind/);
  assert.is(await kept, 0, 'the note before it was undone when the batch ran again');
  assert.equal((await notes()).map((r) => r.n), [8]);
  await pool.query('DELETE FROM notes');
});

test('two nodes writing at once take turns: no write sees a half of the other node\'s batch', async () => {
  const other = new PostgresCommit(pool);
  const writes = Array.from({ length: 40 }, (_, i) => (i % 2 ? commits : other).run(() => note(i)));
  const seen = await Promise.all(writes);
  // Run one after the other, the counts each write saw are 0..39, each once.
  assert.equal([...seen].sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i));
  await pool.query('DELETE FROM notes');
});

test('an unreachable server fails every write of the batch, and the committer goes on afterwards', async () => {
  const gone = openPool('postgres://mailwright:mailwright@127.0.0.1:1/none', { max: 1 });
  const lost = new PostgresCommit(gone);
  const outcomes = await Promise.allSettled([lost.run(() => note(1)), lost.run(() => note(2))]);
  assert.equal(outcomes.map((o) => o.status), ['rejected', 'rejected']);
  assert.is(((outcomes[0] as PromiseRejectedResult).reason as { code?: string }).code, 'STORE_UNREACHABLE');
  await gone.end();
  assert.is(await commits.run(() => note(1)), 0);
});

test('the writes of one transaction share its memo; a transaction run again starts with an empty one', async () => {
  // Each write counts itself in the memo, then the second of the first batch fails: the batch runs again without it.
  function* counted(fail: boolean): Query<number> {
    const memo = (yield* transactionMemo())!;
    const n = ((memo.get('n') as number | undefined) ?? 0) + 1;
    memo.set('n', n);
    if (fail) yield* run('SELECT 1 / 0');
    return n;
  }
  const [first, failed, third] = await Promise.allSettled([commits.run(() => counted(false)), commits.run(() => counted(true)), commits.run(() => counted(false))]);
  assert.equal([first, third].map((r) => (r as PromiseFulfilledResult<number>).value), [1, 2], 'counted afresh in the transaction run again');
  assert.is(failed.status, 'rejected');
  assert.is(await commits.run(() => counted(false)), 1, 'a later transaction starts empty');
  assert.is(await readOn(pool, transactionMemo()), null, 'none outside a write transaction');
});

test.run();
