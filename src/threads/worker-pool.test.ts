// The pool's idle workers (issue 22): a worker without a job for idleMs is ended, its thread gone from the
// process, and the next job starts a new one; a job that arrives in time keeps it; idleMs 0 keeps it for good.
// When a pool's last worker ends, this thread's heap is collected and its young generation shrunk (reclaim.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
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

const newSpaceMiB = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size / 2 ** 20;

test("when a pool's last worker ends for idleness, this thread's young generation shrinks back", async () => {
  // V8 shrinks the young generation in a collection made while its allocation rate is low (measured over the
  // last 5 s): serve's pools wait 30 s.
  const p = pool(5500);
  try {
    // Garbage that survives a scavenge or two, as messages in flight do: V8 grows the semi-spaces and keeps them.
    let keep: string[] = [];
    for (let i = 0; i < 400_000; i++) {
      keep.push(`${'x'.repeat(100)}${i}`);
      if (keep.length > 30_000) keep = [];
    }
    keep = [];
    const grown = newSpaceMiB();
    assert.ok(grown >= 8, `the young generation grew (${grown} MiB)`);
    await p.run({});
    await sleep(5500 + 1000 + 700); // idleMs, reclaim's settling delay, and some slack
    assert.ok(newSpaceMiB() <= 2, `shrunk from ${grown} to ${newSpaceMiB()} MiB`);
  } finally {
    await p.close();
  }
});

test.run();
