// The pool's idle workers (issue 22): a worker without a job for idleMs is ended, its thread gone from the
// process, and the next job starts a new one; a job that arrives in time keeps it; idleMs 0 keeps it for good.
// When a pool's last worker ends, this thread's heap is collected in full (reclaim.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WorkerPool } from './worker-pool.ts';

const PROBE = new URL(
  'data:text/javascript,' +
    encodeURIComponent(`
      import { threadId } from 'node:worker_threads';
      import { serveJobs } from ${JSON.stringify(new URL('./worker-pool.ts', import.meta.url).href)};
      serveJobs(async (job) => {
        if (job.sleep) await new Promise((resolve) => setTimeout(resolve, job.sleep));
        return { result: { thread: threadId } };
      });`),
);

const pool = (idleMs: number) => new WorkerPool<{ sleep?: number }, { thread: number }>({ name: 'idle-probe', module: PROBE, size: 1, idleMs });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Threads of this process that worker-boot.mjs named after the probe pool. */
const probeThreads = () => readdirSync('/proc/self/task').filter((t) => readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === 'mw-idle-probe').length;

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

test.run();
