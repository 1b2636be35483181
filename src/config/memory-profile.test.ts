// memory_profile: "small" runs one signing thread however much mail waits, where "default" runs one
// per core (counted by the threads' own names, worker-boot.mjs, in this process, where the app runs); analyze
// threads are one for small and one less than the cores for default.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { startOutboundScene, eventually } from '../testkit/outbound.ts';
import { request } from '../testkit/app.ts';
import { memorySettings } from './live.ts';

const threads = (name: string) => readdirSync('/proc/self/task').filter((t) => readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === name).length;

for (const profile of ['small', 'default'] as const) {
  test(`${profile}: signing threads for 40 messages at once`, async () => {
    const s = await startOutboundScene({ env: { MAILWRIGHT_MEMORY_PROFILE: profile } });
    try {
      await s.verifiedDomain('sender.test');
      s.routeTo('dest.test');
      const emails = Array.from({ length: 40 }, (_, i) => ({ from: 'a@sender.test', to: `r${i}@dest.test`, subject: `m${i}`, text: 'Hello.' }));
      const res = await request(`${s.t.api}/emails/batch`, { body: emails, key: s.key });
      assert.is(res.status, 200, JSON.stringify(res.body));
      await eventually(() => s.sink.messages.length >= 40, 20_000, 'all 40 delivered');
      const want = profile === 'small' ? 1 : Math.min(2, availableParallelism());
      assert.is(threads('mw-sign'), want);
    } finally {
      await s.stop();
    }
  });
}

test('analyze threads: small one; default one less than the cores, at least one', () => {
  assert.equal([1, 2, 4, 8].map((cores) => memorySettings('default', cores).analyzeWorkers), [1, 1, 3, 7]);
  assert.equal([1, 2, 8].map((cores) => memorySettings('small', cores).analyzeWorkers), [1, 1, 1]);
  assert.equal([2, 8].map((cores) => memorySettings('default', cores).signWorkers), [2, 8]);
});

test('render threads (large templates): one, two from four cores; small one', () => {
  assert.equal([1, 2, 4, 8].map((cores) => memorySettings('default', cores).renderWorkers), [1, 1, 2, 2]);
  assert.equal([2, 8].map((cores) => memorySettings('small', cores).renderWorkers), [1, 1]);
});

test.run();
