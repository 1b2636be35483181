// Events written in one group commit, on both stores: an endpoint created in that transaction gets the events
// after it, and on PostgreSQL the events of a workspace without webhooks are not waited for after its first.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { column, run, value, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import { onBothStores, socketWrites } from '../testkit/postgres.ts';
import { createWebhook } from '../webhooks/endpoints.ts';
import { addEvent, addEventSeq } from './events.ts';

const T = 1_800_000_000_000;
const clock = { now: () => T };
const BOX = Buffer.alloc(32, 7);

const { stores, both } = onBothStores((store) =>
  store.write(function* () {
    for (const ws of ['ws_a', 'ws_b']) {
      yield* run('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)', ws, ws, T);
      for (let i = 0; i < 5; i++) {
        yield* run("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, created_at) VALUES (?, ?, 'out', 'sent', ?, ?, 'a@x.example', ?)", `em_${ws}_${i}`, ws, `m${i}@${ws}`, `em_${ws}_${i}`, T);
      }
    }
  }),
);

const sent = (workspaceId: string, i: number) => addEvent(clock, { workspaceId, emailId: `em_${workspaceId}_${i}`, type: 'sent', recipient: 'r@y.example' });
const outboxOf = (s: Store, emailId: string) => s.read(column<string>('SELECT type FROM webhook_deliveries WHERE email_id = ?', emailId));

both('an endpoint created in the transaction of a workspace\'s events gets the ones after it, not the ones before', async (s) => {
  // Handed over in one turn: one group commit, in this order.
  await Promise.all([
    s.write(() => sent('ws_a', 0)),
    s.write(() => sent('ws_a', 1)),
    s.write(() => createWebhook(T, 'ws_a', { url: 'https://hooks.example/a', events: ['*'], inboxId: null, domainId: null, description: '' }, BOX)),
    s.write(() => sent('ws_a', 2)),
  ]);
  assert.equal(await outboxOf(s, 'em_ws_a_0'), []);
  assert.equal(await outboxOf(s, 'em_ws_a_1'), []);
  assert.equal(await outboxOf(s, 'em_ws_a_2'), ['email.sent']);
  assert.is(await s.read(value<number>("SELECT count(*) FROM events WHERE workspace_id = 'ws_a'")), 3);
});

test('postgres: after the first event of a workspace without webhooks, its events in that transaction go out unanswered', async () => {
  const store = stores.find((s) => s.dialect === 'postgres')!;
  const writesOf = (queries: Array<() => Query<unknown>>) => socketWrites(() => Promise.all(queries.map((q) => store.write(q))));
  const one = await writesOf([() => sent('ws_b', 0)]);
  const five = await writesOf([1, 2, 3, 4].map((i) => () => sent('ws_b', i)).concat(() => sent('ws_b', 0)));
  assert.is(five, one, 'as many socket writes for five events as for one');
  // An event whose seq is asked for is still waited for.
  const seqs = await Promise.all([store.write(() => addEventSeq(clock, { workspaceId: 'ws_b', emailId: 'em_ws_b_0', type: 'opened', recipient: null })), store.write(() => addEventSeq(clock, { workspaceId: 'ws_b', emailId: 'em_ws_b_1', type: 'opened', recipient: null }))]);
  assert.is(seqs[1], seqs[0]! + 1);
});

test.run();
