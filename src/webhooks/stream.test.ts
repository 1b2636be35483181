// The live stream's catch-up (webhooks/stream.ts, GET /events/stream) on the running app: a client back after
// a long absence gets every event of its workspace from the last 24 hours after its Last-Event-ID, in commit
// order, once each, across many slices of the sequence and between another workspace's events; then live
// events. A client that does not read holds the catch-up back instead of growing its buffer, and a live client
// that leaves MAX_UNREAD_BYTES unread is ended, to reconnect with what it read and lose nothing. The events are
// written straight into the box's database (the stream's subject is events, not mail: webhooks.test.ts streams
// real mail).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PassThrough } from 'node:stream';
import { newestSeq } from '../emails/events.ts';
import { all, column, run } from '../db/query.ts';
import { seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { openEventStream, streamMessages } from '../testkit/event-stream.ts';
import { eventually } from '../testkit/outbound.ts';
import { EventStream, fitted, MAX_MESSAGE_BYTES, REPLAY_WINDOW_MS, MAX_UNREAD_BYTES } from './stream.ts';

const DAY = REPLAY_WINDOW_MS;
let offset = 0;
const clock = { now: () => Date.now() + offset };
let t: TestApp;
const key: Record<'a' | 'b', string> = { a: '', b: '' };
const ws: Record<'a' | 'b', string> = { a: '', b: '' };

test.before(async () => {
  t = await startTestApp({ clock });
  for (const [name, id] of [['a', 'alpha'], ['b', 'beta']] as const) {
    const seeded = await seedWorkspace(t, { workspace: id, email: `owner@${id}.test` });
    key[name] = seeded.key;
    ws[name] = seeded.workspace.id;
    await t.app.store.write(() =>
      run(
        "INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, subject, created_at) VALUES (?, ?, 'out', 'sent', ?, ?, 'a@x.example', ?, ?)",
        `em_${id}`, ws[name], `${id}@x.example`, `em_${id}`, `mail of ${id}`, clock.now(),
      ),
    );
  }
});

test.after(() => t.stop());

/**
 * `n` events in one transaction, alpha's every third and beta's between, `stepMs` apart ending now; returns
 * alpha's seqs. One statement writes them all: thousands of events at a statement each would hold the write lock
 * for many seconds on PostgreSQL.
 */
function events(n: number, stepMs = 1000): Promise<number[]> {
  return t.app.store.write(function* () {
    const before = yield* newestSeq();
    yield* run(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @n)
       INSERT INTO events (id, workspace_id, email_id, type, recipient, data, created_at)
       SELECT '', CASE WHEN i % 3 = 0 THEN @a ELSE @b END, CASE WHEN i % 3 = 0 THEN 'em_alpha' ELSE 'em_beta' END, 'delivered',
              'r' || i || '@dest.example', '{}', CAST(@end AS BIGINT) - (@n - 1 - i) * @step
       FROM n ORDER BY i`,
      { n, a: ws.a, b: ws.b, end: clock.now(), step: stepMs },
    );
    return yield* column<number>('SELECT seq FROM events WHERE workspace_id = ? AND seq > ? ORDER BY seq', ws.a, before);
  });
}

type Payload = { type: string; data: { email: { id: string }; event: { recipient: string } } };
const parse = (text: string) => streamMessages<Payload>(text);

async function connect(who: 'a' | 'b', lastEventId?: number) {
  const stream = await openEventStream<Payload>(`${t.api}/events/stream`, key[who], lastEventId);
  assert.is(stream.res.status, 200);
  return stream;
}

test('back after a long absence: every event of its workspace in the last day, in order, once, then live ones', async () => {
  // 18,600 events a second apart up to 18,149 s after a day ago (several slices of the sequence): the first
  // 450 are more than a day old now.
  offset = -DAY + 18_149 * 1000;
  const mine = await events(18_600);
  offset = 0;
  const last = mine[100];
  const rows = await t.app.store.read(all<{ seq: number; created_at: number }>('SELECT seq, created_at FROM events WHERE seq > ?', last));
  const created = new Map(rows.map((r) => [r.seq, r.created_at]));
  const expected = mine.filter((seq) => seq > last && created.get(seq)! >= clock.now() - DAY);
  assert.ok(expected[0] > mine[101], 'some events after its Last-Event-ID are more than a day old');
  const back = await connect('a', last);
  await eventually(() => back.messages().length >= expected.length, 20_000, 'the catch-up');
  assert.equal(back.messages().map((m) => m.id), expected);
  assert.ok(back.messages().every((m) => m.data.type === 'email.delivered' && m.data.data.email.id === 'em_alpha'), 'only its own workspace');
  const [live] = await events(1);
  await eventually(() => back.messages().length === expected.length + 1, 5_000, 'the live event');
  assert.is(back.messages().at(-1)!.id, live);
  back.close();
});

test('a Last-Event-ID from the future, or no events of its own in the day: nothing replayed, live events arrive', async () => {
  offset += 2 * DAY;
  const ahead = await connect('a', 1e12);
  const quiet = await connect('a', 1);
  await eventually(() => ahead.connected() && quiet.connected(), 5_000, 'both streams open');
  await new Promise((r) => setTimeout(r, 600));
  assert.equal([ahead.messages().length, quiet.messages().length], [0, 0]);
  const [live] = await events(1);
  await eventually(() => ahead.messages().length === 1 && quiet.messages().length === 1, 5_000, 'the live event on both');
  assert.equal([ahead.messages()[0].id, quiet.messages()[0].id], [live, live]);
  ahead.close();
  quiet.close();
});

test('a client that does not read holds the catch-up back; it goes on when the client reads', async () => {
  const mine = await events(15_000, 1);
  // The box's own stream, on its own PassThrough: what a socket that takes nothing leaves in it.
  const stream = new EventStream(t.app);
  await stream.start();
  const out: PassThrough = await stream.open({ workspaceId: ws.a, types: null, inboxId: null }, mine[0] - 1);
  await new Promise((r) => setTimeout(r, 300));
  const held = out.readableLength + out.writableLength;
  assert.ok(held < 64 * 1024, `${held} bytes buffered for a client that reads nothing`);
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  await eventually(() => parse(text).length >= mine.length, 20_000, 'the rest once it reads');
  assert.equal(parse(text).map((m) => m.id), mine);
  stream.stop();
});

test('a live client that stops reading is ended once MAX_UNREAD_BYTES wait; reconnecting, it gets the rest', async () => {
  const stream = new EventStream(t.app);
  await stream.start();
  const out: PassThrough = await stream.open({ workspaceId: ws.a, types: null, inboxId: null }, null);
  const mine = await events(9_000, 1);
  await eventually(() => out.writableEnded, 10_000, 'the stream ended');
  const held = out.readableLength + out.writableLength;
  assert.ok(held > MAX_UNREAD_BYTES && held < MAX_UNREAD_BYTES + 1024 * 1024, `${held} bytes held for it`);
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  await new Promise((r) => out.once('end', r));
  const read = parse(text).map((m) => m.id);
  assert.ok(read.length > 0 && read.length < mine.length, `${read.length} of ${mine.length} before it was ended`);
  assert.equal(read, mine.slice(0, read.length), 'what it got is a prefix, in order');
  const again = await stream.open({ workspaceId: ws.a, types: null, inboxId: null }, read.at(-1)!);
  let rest = '';
  again.on('data', (chunk: Buffer) => (rest += chunk.toString('utf8')));
  await eventually(() => read.length + parse(rest).length >= mine.length, 20_000, 'the rest');
  assert.equal([...read, ...parse(rest).map((m) => m.id)], mine);
  stream.stop();
});

test('a message is cut to MAX_MESSAGE_BYTES: whole when it fits, else without the text, else the ids and links alone', () => {
  const event = { id: 'evt_1', emailId: 'em_1', type: 'received', recipient: 'a@b.example', createdAt: '2026-01-01T00:00:00.000Z', data: {} };
  const email = { id: 'em_1', direction: 'in', subject: 'Hi', text: 'short', attachments: [], links: { self: 'https://box.example/api/v1/emails/em_1' } };
  const small = { type: 'email.received', created_at: event.createdAt, data: { email, event } };
  assert.equal(JSON.parse(fitted(small)), small);
  const long = { ...small, data: { email: { ...email, text: 'é'.repeat(MAX_MESSAGE_BYTES) }, event } };
  const cut = JSON.parse(fitted(long));
  assert.equal(cut.data.email, { id: 'em_1', direction: 'in', subject: 'Hi', links: email.links, truncated: true });
  assert.equal(cut.data.event, event);
  const huge = { ...small, data: { email: { ...email, subject: 'x'.repeat(MAX_MESSAGE_BYTES) }, event: { ...event, data: { diagnostic: 'y'.repeat(MAX_MESSAGE_BYTES) } } } };
  const least = fitted(huge);
  assert.ok(Buffer.byteLength(least) < 1024, `${Buffer.byteLength(least)} bytes`);
  assert.equal(JSON.parse(least).data, { email: { id: 'em_1', direction: 'in', links: email.links, truncated: true }, event: { ...event, data: {}, truncated: true } });
});

test.run();
