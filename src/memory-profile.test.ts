// memory_profile (issue 22): "small" runs one signing thread however much mail waits, where "default" runs one
// per core. Counted by the threads' own names (worker-boot.mjs) in this process, where the app runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { startOutboundScene, eventually } from './testkit/outbound.ts';
import { request } from './testkit/app.ts';

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

test.run();
