// The pool's idle workers: a worker without a job for idleMs is ended, its thread gone from the
// process, and the next job starts a new one; a job that arrives in time keeps it; idleMs 0 keeps it for good.
// When a pool's last worker ends, this thread's heap is collected in full (reclaim.ts). With a budget, each
// job answers for its own work (catalogue RES-06c): a job beside one that blocks or kills its worker gets its
// result, only the culprit fails, and the culprit's key runs alone for a while. Waiting jobs are handed out
// fairly between keys. (The budget's basics are in send/signer.test.ts.)
import { readdirSync, readFileSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WorkerPool, type PoolOptions } from './worker-pool.ts';

const PROBE = new URL(
  'data:text/javascript,' +
    encodeURIComponent(`
      import { threadId } from 'node:worker_threads';
      import { serveJobs } from ${JSON.stringify(new URL('./worker-pool.ts', import.meta.url).href)};
      serveJobs(async (job) => {
        if (job.sleep) await new Promise((resolve) => setTimeout(resolve, job.sleep));
        if (job.spin) for (const end = Date.now() + job.spin; Date.now() < end; );
        if (job.exit) process.exit(job.exit);
        return { result: { thread: threadId, echo: job.echo } };
      });`),
);

interface Job {
  sleep?: number;
  spin?: number;
  exit?: number;
  echo?: number;
}
type Result = { thread: number; echo?: number };
const pool = (idleMs: number) => new WorkerPool<Job, Result>({ name: 'idle-probe', module: PROBE, size: 1, idleMs });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Threads of this process that worker-boot.mjs named after the probe pool. */
const probeThreads = () => readdirSync('/proc/self/task').filter((t) => threadName(t) === 'mw-idle-probe').length;
/** A thread that ended between the listing and the read has no name (its /proc entry is gone). */
function threadName(task: string): string {
  try {
    return readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

test('a worker idle for idleMs is ended, and the next job starts another', async () => {
  const p = pool(300);
  try {
    const { thread: first } = await p.run({});
    assert.is(probeThreads(), 1);
    await sleep(800);
    assert.equal(p.stats(), [], 'no worker left in the pool');
    assert.is(probeThreads(), 0, 'its thread has ended');
    const { thread: second } = await p.run({});
    assert.is.not(second, first, 'a new worker took the job');
  } finally {
    await p.close();
  }
});

test('a job that arrives before idleMs keeps the worker, and the clock runs from its last answer', async () => {
  const p = pool(400);
  try {
    const { thread } = await p.run({});
    for (let i = 0; i < 4; i++) {
      await sleep(200);
      assert.is((await p.run({ sleep: 100 })).thread, thread, `job ${i} on the same worker`);
    }
    // A job that runs longer than idleMs is not idleness.
    assert.is((await p.run({ sleep: 600 })).thread, thread);
  } finally {
    await p.close();
  }
});

test('idleMs 0: the worker stays until close()', async () => {
  const p = pool(0);
  try {
    const { thread } = await p.run({});
    await sleep(500);
    assert.is((await p.run({})).thread, thread);
  } finally {
    await p.close();
  }
});

test("when a pool's last worker ends for idleness, this thread's heap is collected in full", async () => {
  // What reclaim.ts does, seen from outside: a major collection soon after the idle end. (That V8 then shrinks
  // its young generation depends on its allocation rate over the last seconds, so it is not asserted here.)
  const majors: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (((e as { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(performance.now());
  });
  observer.observe({ entryTypes: ['gc'] });
  const p = pool(300);
  try {
    await p.run({});
    await sleep(100);
    const whileAlive = majors.length;
    const ended = await until(() => probeThreads() === 0, 3000);
    await sleep(1000 + 700); // reclaim's settling delay, and some slack
    assert.ok(ended, 'the idle worker ended');
    assert.ok(majors.length > whileAlive, `a full collection followed the idle end (${majors.length - whileAlive})`);
  } finally {
    observer.disconnect();
    await p.close();
  }
});

/** Polls `check` every 20 ms for up to `ms`; whether it held. */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(20)) if (check()) return true;
  return check();
}

const budgeted = (opts: Partial<PoolOptions> = {}) => new WorkerPool<Job, Result>({ name: 'probe', module: PROBE, size: 1, jobsPerWorker: 4, jobTimeoutMs: 500, ...opts });
const echoes = (outcomes: Array<PromiseSettledResult<Result>>) => outcomes.map((o) => (o.status === 'fulfilled' ? o.value.echo : `${o.reason.name}: ${o.reason.message}`));
/** Jobs in flight, one per worker, and on which lane. */
const lanes = (p: WorkerPool<Job, Result>) => p.stats().filter((w) => w.inFlight > 0).map((w) => w.lane);

test('an innocent job posted before one that spins past the budget gets its result; only the spinner fails', async () => {
  const p = budgeted();
  try {
    await p.run({ echo: 0 }); // the worker is up, so both budgets start together
    // The innocent is older: its budget runs out first while the spinner holds the event loop they share.
    const outcomes = await Promise.allSettled([p.run({ sleep: 100, echo: 1 }, [], { key: 'b' }), p.run({ spin: 60_000 }, [], { key: 'a' }), p.run({ echo: 2 }, [], { key: 'b' })]);
    assert.equal(echoes(outcomes), [1, 'JobTimeout: probe job ran past its 500 ms budget; its worker was replaced', 2]);
  } finally {
    await p.close();
  }
});

test('with a budget, a job beside one that kills its worker gets its result; only the killer fails', async () => {
  const p = budgeted();
  try {
    const outcomes = await Promise.allSettled([p.run({ sleep: 200, echo: 1 }), p.run({ sleep: 50, exit: 7 }), p.run({ sleep: 200, echo: 2 })]);
    assert.equal(echoes(outcomes), [1, 'Error: probe worker exited with code 7', 2]);
  } finally {
    await p.close();
  }
});

test("the culprit's key runs alone on the solo lane for quarantineMs; other keys keep the shared workers", async () => {
  const p = budgeted({ jobTimeoutMs: 1000, quarantineMs: 3000 });
  try {
    const [spinner] = await Promise.allSettled([p.run({ spin: 60_000 }, [], { key: 'a' }), p.run({ echo: 1 }, [], { key: 'b' })]);
    assert.is((spinner as PromiseRejectedResult).reason.name, 'JobTimeout');
    // Jobs of `a` now run one at a time on the solo lane, beside b's on the shared worker.
    const running = [p.run({ sleep: 300, echo: 2 }, [], { key: 'a' }), p.run({ sleep: 300, echo: 3 }, [], { key: 'a' }), p.run({ sleep: 300, echo: 4 }, [], { key: 'b' })];
    await sleep(150);
    assert.equal(lanes(p).sort(), ['shared', 'solo'], 'one job of a on the solo lane, b on a shared worker');
    assert.is(p.queued, 1, "a's second job waits for the solo worker");
    assert.equal(echoes(await Promise.allSettled(running)), [2, 3, 4]);
    // A spinner of the confined key is refused after one budget alone, without taking b's job with it.
    const again = await Promise.allSettled([p.run({ spin: 60_000 }, [], { key: 'a' }), p.run({ sleep: 400, echo: 5 }, [], { key: 'b' })]);
    assert.equal(echoes(again), ['JobTimeout: probe job ran past its 1000 ms budget; its worker was replaced', 5]);
    await sleep(3000);
    const later = p.run({ sleep: 300, echo: 6 }, [], { key: 'a' });
    await sleep(150);
    assert.equal(lanes(p), ['shared'], 'after quarantineMs, a is back on the shared workers');
    assert.is((await later).echo, 6);
  } finally {
    await p.close();
  }
});

test("fairness: with one key's many jobs waiting, another key's job is handed out next", async () => {
  const p = new WorkerPool<Job, Result>({ name: 'fair-probe', module: PROBE, size: 1, jobsPerWorker: 1 });
  try {
    const order: string[] = [];
    const run = (key: string, echo: number) => p.run({ sleep: 20, echo }, [], { key }).then(() => order.push(`${key}${echo}`));
    const jobs = Array.from({ length: 10 }, (_, i) => run('a', i));
    jobs.push(run('b', 0));
    await Promise.all(jobs);
    assert.equal(order.slice(0, 2), ['a0', 'b0'], `b's job second, not eleventh: ${order}`);
    // Without keys the pool is first come, first served, as before.
    const plain: number[] = [];
    await Promise.all(Array.from({ length: 5 }, (_, i) => p.run({ echo: i }).then(() => plain.push(i))));
    assert.equal(plain, [0, 1, 2, 3, 4]);
  } finally {
    await p.close();
  }
});

test.run();
