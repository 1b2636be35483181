// Floods of live event streams (RES-16) on the running app, over real sockets from several client addresses:
// a sixth stream of one key and an eleventh of one address are refused with 429 too_many_streams before
// anything is streamed, and a closed stream gives its slot back; 200 streams that never read fill one
// workspace's half of the box and then the box, each refusal naming its limit, while the API still answers;
// and a client that stops reading is ended with a hint once it leaves too much unread, and reconnecting with
// its Last-Event-ID it gets every event after it, once, in order.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { newestSeq } from '../emails/events.ts';
import { column, run } from '../db/query.ts';
import { createKey } from '../account/keys.ts';
import { request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { openRawStream, streamMessages, type RawStream } from '../testkit/event-stream.ts';
import { eventually } from '../testkit/outbound.ts';
import { STREAM_LIMITS } from './stream-slots.ts';
import { MAX_UNREAD_BYTES } from './stream.ts';

let t: TestApp;
let port = 0;
const ws: Record<string, { id: string; key: string; email: string }> = {};
const open: RawStream[] = [];

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  port = Number(new URL(t.url).port);
  for (const name of ['alpha', 'beta', 'gamma']) {
    const seeded = await seedWorkspace(t, { workspace: name, email: `owner@${name}.test` });
    const email = `em_01KQ${name.toUpperCase().padEnd(22, '0')}`;
    await t.app.store.write(() =>
      run(
        "INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, subject, created_at) VALUES (?, ?, 'out', 'sent', ?, ?, 'a@x.example', ?, ?)",
        email, seeded.workspace.id, `${name}@x.example`, email, `mail of ${name}`, t.app.clock.now(),
      ),
    );
    ws[name] = { id: seeded.workspace.id, key: seeded.key, email };
  }
});

test.after(async () => {
  for (const s of open) s.close();
  await t.stop();
});

const newKey = async (name: string) => (await t.app.store.write(() => createKey(t.app.clock, ws[name].id, 'stream test'))).key;

/** Opens a stream; a 200 is kept open and not read, a refusal is read whole. */
async function stream(key: string, localAddress: string, lastEventId?: number): Promise<RawStream> {
  const s = await openRawStream({ port, key, localAddress, lastEventId });
  if (s.status === 200) {
    open.push(s);
    s.pause();
  } else await eventually(() => s.text().endsWith('}'), 5_000, 'the refusal');
  return s;
}

function refused(s: RawStream, what: string) {
  assert.is(s.status, 429);
  assert.match(s.headers, /^content-type: application\/json/im);
  assert.match(s.headers, /^retry-after: \d+/im);
  const body = JSON.parse(s.text());
  assert.equal([body.error.status, body.error.code], [429, 'too_many_streams']);
  assert.ok(body.error.message.includes(what), body.error.message);
}

const closeAll = () => {
  for (const s of open.splice(0)) s.close();
};

test('per key and per address: the sixth stream of a key and the eleventh of an address get 429 too_many_streams; a closed one frees its slot', async () => {
  const key = await newKey('alpha');
  const five = [];
  for (let i = 0; i < STREAM_LIMITS.credential; i++) five.push(await stream(key, '127.0.0.2'));
  assert.ok(five.every((s) => s.status === 200 && /^content-type: text\/event-stream/im.test(s.headers)));
  refused(await stream(key, '127.0.0.3'), 'at most 5 open at once per API key or session');
  five[0].close();
  await eventually(async () => {
    const again = await stream(key, '127.0.0.3');
    return again.status === 200;
  }, 5_000, 'the slot back');

  const keys = [await newKey('alpha'), await newKey('alpha'), await newKey('alpha')];
  for (let i = 0; i < STREAM_LIMITS.address; i++) assert.is((await stream(keys[i % 3], '127.0.0.4')).status, 200);
  refused(await stream(keys[2], '127.0.0.4'), 'at most 10 open at once per client address');
  assert.is((await stream(keys[2], '127.0.0.5')).status, 200, 'the same key from another address');
  closeAll();
});

test('200 streams that never read: a workspace gets half the box, the box 200; each refusal names its limit; the API still answers', async () => {
  // Each workspace's streams from keys of five streams and addresses of ten: only the workspace and box limits bind.
  const fill = async (name: string, net: number) => {
    const keys: string[] = [];
    for (let i = 0; i < STREAM_LIMITS.workspace / STREAM_LIMITS.credential; i++) keys.push(await newKey(name));
    for (let i = 0; i < STREAM_LIMITS.workspace; i++) {
      const s = await stream(keys[Math.floor(i / STREAM_LIMITS.credential)], `127.0.${net}.${1 + Math.floor(i / STREAM_LIMITS.address)}`);
      assert.is(s.status, 200, `stream ${i} of ${name}`);
    }
  };
  await fill('alpha', 1);
  refused(await stream(await newKey('alpha'), '127.0.9.1'), 'at most 100 open at once per workspace');
  await fill('beta', 2);
  assert.is(open.length, STREAM_LIMITS.box);
  refused(await stream(ws.gamma.key, '127.0.9.2'), 'at most 200 open at once on this box');
  // The box serves the rest of its API meanwhile.
  const health = await request(`${t.url}/healthz`);
  assert.is(health.status, 200);
  assert.is((await request(`${t.api}/emails/${ws.gamma.email}/events`, { key: ws.gamma.key })).status, 200);
  const metrics = (await request(`${t.url}/metrics`)).body as string;
  assert.match(metrics, /mailwright_event_streams_refused_total\{limit="box"\} 1/);
  closeAll();
  await eventually(async () => (await stream(ws.gamma.key, '127.0.9.2')).status === 200, 5_000, 'slots back once the streams closed');
  closeAll();
});

/**
 * `n` events of alpha's email, in one transaction; their seqs. One statement writes them all: thousands of
 * events at a statement each would hold the write lock for seconds on PostgreSQL.
 */
function events(n: number): Promise<number[]> {
  return t.app.store.write(function* () {
    const before = yield* newestSeq();
    yield* run(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @n)
       INSERT INTO events (id, workspace_id, email_id, type, recipient, data, created_at)
       SELECT '', @ws, @email, 'delivered', 'r' || i || '@dest.example', '{}', CAST(@now AS BIGINT) FROM n ORDER BY i`,
      { n, ws: ws.alpha.id, email: ws.alpha.email, now: t.app.clock.now() },
    );
    return yield* column<number>('SELECT seq FROM events WHERE seq > ? ORDER BY seq', before);
  });
}

test('a client that stops reading is ended with a hint once it leaves too much unread; with its Last-Event-ID it gets the rest, once, in order', async () => {
  const dropped = async () => Number(/^mailwright_event_streams_dropped_total (\d+)/m.exec((await request(`${t.url}/metrics`)).body)?.[1] ?? 0);
  const droppedBefore = await dropped();
  const slow = await openRawStream({ port, key: ws.alpha.key, localAddress: '127.0.0.7' });
  assert.is(slow.status, 200);
  await eventually(() => slow.text().includes(': connected'), 5_000, 'connected');
  slow.pause();
  // More than the socket's buffers in the kernel (a few MB on loopback) and MAX_UNREAD_BYTES beyond them.
  const all: number[] = [];
  for (let round = 0; round < 30 && (await dropped()) === droppedBefore; round++) {
    all.push(...(await events(4000)));
    await new Promise((r) => setTimeout(r, 1_500));
  }
  await eventually(async () => (await dropped()) > droppedBefore, 20_000, 'the slow client dropped');
  slow.resume();
  await eventually(() => slow.ended(), 20_000, 'the response ends once it read what it had');
  const text = slow.text();
  assert.match(text, new RegExp(`\\n: ended: more than ${MAX_UNREAD_BYTES} bytes were left unread; reconnect with Last-Event-ID to go on\\nretry: 1000\\n\\n$`));
  const read = streamMessages<{ type: string }>(text).map((m) => m.id);
  assert.ok(read.length > 0 && read.length < all.length, `${read.length} of ${all.length} read before it was ended`);
  assert.equal(read, all.slice(0, read.length), 'what it got is a prefix, in order');

  const again = await openRawStream({ port, key: ws.alpha.key, localAddress: '127.0.0.7', lastEventId: read.at(-1)! });
  assert.is(again.status, 200);
  await eventually(() => streamMessages(again.text()).length >= all.length - read.length, 30_000, 'the rest');
  assert.equal([...read, ...streamMessages(again.text()).map((m) => m.id)], all, 'every event once, in order');
  again.close();
});

test.run();
