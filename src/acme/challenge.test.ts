// The challenge port faces the Internet: a challenge set on one node is answered by another at once, and a
// flood of made-up tokens costs the store a few reads, not one each. On both stores (testkit/postgres.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../clock.ts';
import { createLog } from '../log.ts';
import type { Store } from '../db/store.ts';
import { bothStores } from '../testkit/postgres.ts';
import { Challenges, createChallengeServer } from './challenge.ts';

let stores: Store[] = [];
let close: () => Promise<void>;

test.before(async () => {
  ({ stores, close } = await bothStores());
});
test.after(async () => {
  await close();
});

/** A node's challenge listener on `store`, counting the store's reads. */
async function node(store: Store) {
  let reads = 0;
  const counted: Store = Object.assign(Object.create(store) as Store, {
    read: (...args: Parameters<Store['read']>) => {
      reads++;
      return store.read(...args);
    },
  });
  const challenges = new Challenges({ store: counted, clock: systemClock, log: createLog({ level: 'error' }) });
  const server = createChallengeServer(challenges, 0);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const get = async (token: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/.well-known/acme-challenge/${token}`);
    return { status: res.status, body: await res.text() };
  };
  return { challenges, get, reads: () => reads, close: () => new Promise((resolve) => server.close(resolve)) };
}

test('a challenge set on one node is answered by the other at once; made-up tokens cost a few reads', async () => {
  for (const store of stores) {
    const [a, b] = [await node(store), await node(store)];
    try {
      const token = `tok_${store.dialect}_${Date.now()}`;
      await b.get('warm-up'); // b has read the (empty) set once: the challenge below is new to it
      await a.challenges.set(token, `${token}.thumbprint`);
      assert.equal(await b.get(token), { status: 200, body: `${token}.thumbprint` }, `${store.dialect}: the other node`);
      assert.equal(await a.get(token), { status: 200, body: `${token}.thumbprint` }, `${store.dialect}: the node that set it`);

      const before = b.reads();
      const started = performance.now();
      const flood = await Promise.all(Array.from({ length: 300 }, (_, i) => b.get(`made-up-${i}`)));
      const elapsed = performance.now() - started;
      assert.ok(flood.every((r) => r.status === 404 && r.body === 'no such challenge\n'), `${store.dialect}: every made-up token is 404`);
      // At most one read every 100 ms however many requests wait (a loaded machine takes longer over the 300).
      const allowed = Math.max(5, Math.ceil(elapsed / 100) + 1);
      assert.ok(b.reads() - before <= allowed, `${store.dialect}: ${b.reads() - before} reads of the store for 300 requests in ${Math.round(elapsed)} ms`);

      await a.challenges.delete(token);
      await new Promise((resolve) => setTimeout(resolve, 150));
      assert.is((await b.get('another-made-up')).status, 404);
      assert.is((await b.get(token)).status, 404, `${store.dialect}: gone from the other node once deleted`);
    } finally {
      await a.close();
      await b.close();
    }
  }
});

test.run();
