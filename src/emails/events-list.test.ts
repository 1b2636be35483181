// GET /emails/:id/events is a list like every other (DESIGN.md "lists"): `limit` (default 50, at most 100) and
// `offset`, `{data, count, hasMore}`, in commit order, pages that join up to every event once; bad paging is a
// 400 naming the parameter; another workspace's email is a 404.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { addEvent } from './events.ts';
import { run } from '../db/query.ts';
import { request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';

let t: TestApp;
let key = '';
let otherKey = '';
const EMAIL = 'em_01KQPAGED0000000000000000';

test.before(async () => {
  t = await startTestApp();
  const seeded = await seedWorkspace(t, { workspace: 'paged', email: 'owner@paged.test' });
  key = seeded.key;
  otherKey = (await seedWorkspace(t, { workspace: 'other', email: 'owner@other.test' })).key;
  const { store, clock } = t.app;
  await store.write(function* () {
    yield* run(
      "INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, subject, created_at) VALUES (?, ?, 'out', 'sent', ?, ?, 'a@x.example', 'paged', ?)",
      EMAIL, seeded.workspace.id, 'paged@x.example', EMAIL, clock.now(),
    );
    for (let i = 0; i < 230; i++) yield* addEvent(clock, { workspaceId: seeded.workspace.id, emailId: EMAIL, type: i % 2 ? 'opened' : 'delivered', recipient: `r${i}@dest.example` });
  });
});

test.after(() => t.stop());

const events = (query = '', k = key) => request(`${t.api}/emails/${EMAIL}/events${query}`, { key: k });

test('the first page: 50 events in commit order, count 50, hasMore', async () => {
  const res = await events();
  assert.is(res.status, 200);
  assert.equal(Object.keys(res.body).sort(), ['count', 'data', 'hasMore']);
  assert.is(res.body.count, 50);
  assert.is(res.body.data.length, 50);
  assert.is(res.body.hasMore, true);
  assert.equal(res.body.data.slice(0, 3).map((e: { recipient: string }) => e.recipient), ['r0@dest.example', 'r1@dest.example', 'r2@dest.example']);
  assert.equal(Object.keys(res.body.data[0]).sort(), ['createdAt', 'data', 'emailId', 'id', 'recipient', 'type']);
});

test('pages of 100 join up to every event once; the last says hasMore false', async () => {
  const seen: string[] = [];
  const pages: Array<[number, boolean]> = [];
  for (let offset = 0; ; offset += 100) {
    const res = await events(`?limit=100&offset=${offset}`);
    assert.is(res.status, 200);
    seen.push(...res.body.data.map((e: { recipient: string }) => e.recipient));
    pages.push([res.body.count, res.body.hasMore]);
    if (!res.body.hasMore) break;
  }
  assert.equal(pages, [[100, true], [100, true], [30, false]]);
  assert.equal(seen, Array.from({ length: 230 }, (_, i) => `r${i}@dest.example`));
  const past = await events('?offset=1000');
  assert.equal([past.status, past.body.data, past.body.count, past.body.hasMore], [200, [], 0, false]);
});

test('bad paging is a 400 naming the parameter; an email of another workspace is a 404', async () => {
  for (const [query, param] of [['?limit=101', 'limit'], ['?limit=0', 'limit'], ['?limit=ten', 'limit'], ['?offset=-1', 'offset'], ['?limit=1&limit=2', 'limit']]) {
    const res = await events(query);
    assert.is(res.status, 400, query);
    assert.is(res.body.error.code, 'validation_error');
    assert.match(res.body.error.message, new RegExp(`^${param}: `));
  }
  const foreign = await events('', otherKey);
  assert.equal([foreign.status, foreign.body.error.code], [404, 'not_found']);
});

test.run();
