// The box-wide bound on password hashes (catalogue AUTH-13), on its own with hashes that end when the test
// says: how many run at once, who waits in front of whom, who is turned away when the queue is full, and
// that a caller who leaves gives its place up. The end-to-end floods are in setup-flood.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../errors.ts';
import { PasswordGate, type GateOutcome } from './password-gate.ts';

/** A hash that runs until finish() is called; `order` records who started, in order. */
function harness(maxInFlight: number, maxWaiting: number, keptForClean = 0) {
  const outcomes: GateOutcome[] = [];
  const gate = new PasswordGate({ maxInFlight, maxWaiting, keptForClean, observe: (o) => outcomes.push(o) });
  const order: string[] = [];
  const finishers = new Map<string, () => void>();
  const settled = new Map<string, string>();
  const submit = (name: string, rank: number, signal?: AbortSignal) => {
    const done = gate.run(
      rank,
      () =>
        new Promise<string>((resolve) => {
          order.push(name);
          finishers.set(name, () => resolve(name));
        }),
      signal,
    );
    done.then(
      () => settled.set(name, 'done'),
      (err: ApiError) => settled.set(name, `${err.status} ${err.code}`),
    );
    return done;
  };
  const finish = async (name: string) => {
    finishers.get(name)!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { gate, order, submit, finish, settled, outcomes, tick: () => new Promise((resolve) => setImmediate(resolve)) };
}

test('at most maxInFlight run at once; the rest wait, lower rank first, older first among equals', async () => {
  const h = harness(2, 10);
  for (const [name, rank] of [['a', 3], ['b', 3], ['guess1', 4], ['guess2', 2], ['owner', 0], ['clean', 1], ['guess3', 2]] as const) void h.submit(name, rank);
  await h.tick();
  assert.equal(h.order, ['a', 'b'], 'two at once');
  await h.finish('a');
  assert.equal(h.order, ['a', 'b', 'owner']);
  await h.finish('b');
  await h.finish('owner');
  await h.finish('clean');
  await h.finish('guess2');
  await h.finish('guess3');
  assert.equal(h.order, ['a', 'b', 'owner', 'clean', 'guess2', 'guess3', 'guess1']);
});

test('a slot is kept for addresses without failures: guesses take the other, the owner never waits for one', async () => {
  const h = harness(2, 10, 1);
  for (const name of ['g1', 'g2', 'g3']) void h.submit(name, 3);
  await h.tick();
  assert.equal(h.order, ['g1'], 'guesses run one at a time');
  void h.submit('owner', 1);
  await h.tick();
  assert.equal(h.order, ['g1', 'owner'], 'the kept slot is free for the owner at once');
  await h.finish('owner');
  assert.equal(h.order, ['g1', 'owner'], 'nor does a guess take it when the owner is done');
  await h.finish('g1');
  assert.equal(h.order, ['g1', 'owner', 'g2']);
  void h.submit('clean', 1);
  void h.submit('signed-in', 0);
  await h.tick();
  assert.equal(h.order, ['g1', 'owner', 'g2', 'clean'], 'a clean address takes the kept slot; the next waits for a free one');
  await h.finish('g2');
  assert.equal(h.order, ['g1', 'owner', 'g2', 'clean', 'signed-in']);
  assert.equal(h.gate.state, { running: 2, waiting: 1 });
});

test('a full queue turns away its newest worst waiter for a better one, and a caller no better than the worst', async () => {
  const h = harness(1, 3);
  void h.submit('running', 5);
  for (const [name, rank] of [['g1', 4], ['g2', 4], ['g3', 4]] as const) void h.submit(name, rank);
  void h.submit('g4', 4);
  await h.tick();
  assert.is(h.settled.get('g4'), '503 server_busy', 'no better than the worst waiting: turned away');
  void h.submit('owner', 1);
  await h.tick();
  assert.is(h.settled.get('g3'), '503 server_busy', 'the newest of the worst gave its place to the owner');
  assert.is(h.settled.get('g1'), undefined);
  await h.finish('running');
  assert.equal(h.order, ['running', 'owner']);
  assert.equal(h.outcomes.filter((o) => o === 'busy').length, 2);
  void h.submit('g5', 4);
  const refused = await h.gate.run(9, async () => 'x').catch((err: ApiError) => err);
  assert.ok(refused instanceof ApiError && refused.headers?.['retry-after'] === '2', 'a refusal says when to retry');
});

test('a caller that leaves while waiting gives up its place; one that left before asking never runs', async () => {
  const h = harness(1, 5);
  void h.submit('running', 1);
  const leaving = new AbortController();
  void h.submit('leaver', 1, leaving.signal);
  void h.submit('next', 2);
  await h.tick();
  leaving.abort();
  await h.tick();
  assert.is(h.settled.get('leaver'), '400 request_aborted');
  await h.finish('running');
  assert.equal(h.order, ['running', 'next']);
  const gone = new AbortController();
  gone.abort();
  void h.submit('gone', 0, gone.signal);
  await h.finish('next');
  assert.equal(h.order, ['running', 'next']);
  assert.is(h.settled.get('gone'), '400 request_aborted');
});

test('a hash that fails frees its slot for the next waiter', async () => {
  const gate = new PasswordGate({ maxInFlight: 1, maxWaiting: 2 });
  const failing = gate.run(1, async () => {
    throw new Error('scrypt failed');
  });
  const next = gate.run(1, async () => 'ran');
  assert.is(await failing.catch((err: Error) => err.message), 'scrypt failed');
  assert.is(await next, 'ran');
});

test.run();
