// The fair pool with real worker threads whose jobs hold their thread until the test lets them go (a shared
// gate): one key's burst runs perKey at a time and waits in its own bounded line, one job past it is refused at
// once, another key's job takes the next free thread ahead of the burst, and close() refuses what still waits.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Busy, FairPool } from './fair-pool.ts';

const PROBE = new URL(
  'data:text/javascript,' +
    encodeURIComponent(`
      import { serveJobs } from ${JSON.stringify(new URL('./worker-pool.ts', import.meta.url).href)};
      serveJobs(async ({ gate, id }) => {
        const slots = new Int32Array(gate);
        Atomics.store(slots, id, 1);            // started
        while (Atomics.load(slots, id) !== 2) Atomics.wait(slots, id, 1, 50); // until the test opens it
        return { result: id };
      });`),
);

interface Job {
  gate: SharedArrayBuffer;
  id: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function scene(opts: { size: number; perKey: number; waitingPerKey: number; waitingTotal: number }) {
  const gate = new SharedArrayBuffer(4 * 64);
  const slots = new Int32Array(gate);
  const pool = new FairPool<Job, number>({ name: 'fair-probe', module: PROBE, ...opts });
  const finished: number[] = [];
  let next = 0;
  return {
    pool,
    /** Posts job number n for `key`; its promise records the order jobs finish in. */
    post(key: string) {
      const id = next++;
      const done = pool.run(key, { job: { gate, id } });
      done.then((n) => finished.push(n), () => {});
      return { id, done };
    },
    started: (id: number) => Atomics.load(slots, id) >= 1,
    open(id: number) {
      Atomics.store(slots, id, 2);
      Atomics.notify(slots, id);
    },
    finished,
  };
}

/** Polls until `check` holds; fails after `ms` (a budget, not a timing assertion). */
async function until(check: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  for (const end = Date.now() + ms; !check(); await sleep(10)) if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
}

test("one key's burst runs perKey at a time, waits in its own line, and one past the line is refused at once", async () => {
  const s = scene({ size: 2, perKey: 1, waitingPerKey: 3, waitingTotal: 10 });
  try {
    const burst = [0, 1, 2, 3].map(() => s.post('A'));
    await until(() => s.started(burst[0].id), 10_000, 'the first job of A started');
    assert.equal(s.pool.load('A'), { running: 1, waiting: 3 }, 'one thread stays free for others');
    const refused = await s.post('A').done.then(
      () => null,
      (err: unknown) => err,
    );
    assert.instance(refused, Busy);
    assert.match((refused as Busy).message, /3 jobs of this workspace are already waiting/);
    assert.is((refused as Busy).retryAfterSeconds, 1);

    // Another key runs at once on the free thread, whatever A has waiting.
    const b = s.post('B');
    await until(() => s.started(b.id), 10_000, "B's job started");
    s.open(b.id);
    assert.is(await b.done, b.id);

    // A's jobs then run one after another, in the order posted.
    for (const job of burst) {
      await until(() => s.started(job.id), 10_000, `A's job ${job.id} started`);
      assert.ok(s.pool.load('A').running <= 1, 'never more than perKey of A at once');
      s.open(job.id);
      assert.is(await job.done, job.id);
    }
    assert.equal(s.pool.load(), { running: 0, waiting: 0 });
  } finally {
    await s.pool.close();
  }
});

test('a freed thread goes to the waiting key with none running before a key that already has one', async () => {
  const s = scene({ size: 2, perKey: 2, waitingPerKey: 8, waitingTotal: 16 });
  try {
    const a = [0, 1, 2, 3].map(() => s.post('A'));
    await until(() => s.started(a[0].id) && s.started(a[1].id), 10_000, 'A holds both threads');
    const b = s.post('B');
    assert.equal([s.pool.load('A'), s.pool.load('B')], [{ running: 2, waiting: 2 }, { running: 0, waiting: 1 }]);
    s.open(a[0].id);
    await until(() => s.started(b.id), 10_000, "B's job took the freed thread");
    assert.not.ok(s.started(a[2].id), "A's waiting job did not jump ahead of B");
    for (const job of [b, a[1], a[2], a[3]]) {
      await until(() => s.started(job.id), 10_000, `job ${job.id} started`);
      s.open(job.id);
      await job.done;
    }
    assert.equal(s.finished, [a[0].id, b.id, a[1].id, a[2].id, a[3].id]);
  } finally {
    await s.pool.close();
  }
});

test('the line of all keys is bounded too, and close() refuses what still waits', async () => {
  const s = scene({ size: 1, perKey: 1, waitingPerKey: 2, waitingTotal: 3 });
  const first = s.post('A');
  await until(() => s.started(first.id), 10_000, 'the first job started');
  const waiting = [s.post('A'), s.post('B'), s.post('C')];
  const refused = await s.post('D').done.catch((err: unknown) => err);
  assert.instance(refused, Busy, 'a fourth key is refused: three jobs wait in all');
  assert.match((refused as Busy).message, /3 jobs are already waiting/);
  const outcomes = Promise.all(waiting.map((w) => w.done.then(() => 'ran', (err: Error) => err.message)));
  s.open(first.id);
  await first.done;
  // The next job has the thread now; closing ends it and refuses the two behind it.
  await until(() => s.started(waiting[0].id), 10_000, 'the second job started');
  await s.pool.close();
  const [, ...rest] = await outcomes;
  assert.equal(rest, ['fair-probe pool closed before the job ran', 'fair-probe pool closed before the job ran']);
  assert.equal(s.pool.load(), { running: 0, waiting: 0 });
});

test.run();
