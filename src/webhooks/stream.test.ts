// The live stream's catch-up (webhooks/stream.ts) on a real database, without HTTP: a client back after a long
// absence gets every event of its workspace from the last 24 hours after its Last-Event-ID, in commit order,
// once each, across many slices of the sequence and between another workspace's events; then live events.
// A client that does not read holds back the catch-up instead of growing its buffer. (webhooks.test.ts covers
// the stream over HTTP.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PassThrough } from 'node:stream';
import type { App } from '../context.ts';
import { openDatabase, type Db } from '../db/open.ts';
import { migrate } from '../db/migrate.ts';
import { addEvent, newestSeq } from '../emails/events.ts';
import { EventStream, FEED_RETENTION_MS } from './stream.ts';

const DAY = FEED_RETENTION_MS;
let t = Date.UTC(2026, 10, 26, 12, 0, 0);
const clock = { now: () => t };

function box(): { db: Db; stream: EventStream } {
  const db = openDatabase(mkdtempSync(join(tmpdir(), 'mw-stream-')));
  migrate(db);
  for (const ws of ['ws_a', 'ws_b']) {
    db.prepare('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)').run(ws, ws, t);
    db.prepare("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, subject, created_at) VALUES (?, ?, 'out', 'sent', ?, ?, 'a@x.example', ?, ?)").run(
      `em_${ws}`, ws, `${ws}@x.example`, `em_${ws}`, `mail of ${ws}`, t,
    );
  }
  const errors: unknown[] = [];
  const app = { db, clock, config: { publicUrl: 'http://box.example' }, log: { error: (_: string, f: unknown) => errors.push(f) } } as unknown as App;
  const stream = new EventStream(app);
  stream.start();
  return { db, stream };
}

/** `n` events, each workspace in turn (`ws_a` first), one a second; returns ws_a's seqs. */
function events(db: Db, n: number): number[] {
  const mine: number[] = [];
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      t += 1000;
      const ws = i % 3 === 0 ? 'ws_a' : 'ws_b';
      addEvent(db, clock, { workspaceId: ws, emailId: `em_${ws}`, type: 'delivered', recipient: `r${i}@dest.example` });
      if (ws === 'ws_a') mine.push(newestSeq(db));
    }
  })();
  return mine;
}

function reader(out: PassThrough) {
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const messages = () =>
    text
      .split('\n\n')
      .filter((m) => m.includes('data: '))
      .map((m) => ({ id: Number(/^id: (\d+)$/m.exec(m)![1]), data: JSON.parse(/^data: (.*)$/m.exec(m)![1]) as { type: string; data: { email: { id: string }; event: { recipient: string } } } }));
  return { messages };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), what);
}

test('back after a long absence: every event of its workspace in the last day, in order, once, then live ones', async () => {
  const { db, stream } = box();
  const old = events(db, 600);
  // When the next 18,000 (several slices of the sequence) are in, the first 450 seconds are more than a day old.
  t += DAY - 18_150 * 1000;
  const mine = events(db, 18_000);
  const last = old[100];
  const out = stream.open({ workspaceId: 'ws_a', types: null, inboxId: null }, last);
  const r = reader(out);
  const inWindow = old.filter((seq) => seq > last && Number(db.prepare('SELECT created_at FROM events WHERE seq = ?').pluck().get(seq)) >= t - DAY);
  assert.ok(inWindow.length > 0 && inWindow.length < old.length - 100, 'some of the old events are still within the day');
  const expected = [...inWindow, ...mine];
  await until(() => r.messages().length >= expected.length, 'the catch-up');
  assert.equal(r.messages().map((m) => m.id), expected);
  assert.ok(r.messages().every((m) => m.data.type === 'email.delivered' && m.data.data.email.id === 'em_ws_a'));
  const [live] = events(db, 1);
  await until(() => r.messages().length === expected.length + 1, 'the live event');
  assert.is(r.messages().at(-1)!.id, live);
  stream.stop();
});

test('a client that does not read holds the catch-up back; it goes on when the client reads', async () => {
  const { db, stream } = box();
  const mine = events(db, 15_000);
  const out = stream.open({ workspaceId: 'ws_a', types: null, inboxId: null }, 0);
  await new Promise((r) => setTimeout(r, 300));
  const held = out.readableLength + out.writableLength;
  assert.ok(held < 64 * 1024, `${held} bytes buffered for a client that reads nothing`);
  const r = reader(out);
  await until(() => r.messages().length >= mine.length, 'the rest once it reads');
  assert.equal(r.messages().map((m) => m.id), mine);
  stream.stop();
});

test('a Last-Event-ID from the future, or no events in the day: nothing replayed, live events arrive', async () => {
  const { db, stream } = box();
  events(db, 30);
  t += 2 * DAY;
  const ahead = reader(stream.open({ workspaceId: 'ws_a', types: null, inboxId: null }, 1e12));
  const quiet = reader(stream.open({ workspaceId: 'ws_a', types: null, inboxId: null }, 1));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal([ahead.messages().length, quiet.messages().length], [0, 0]);
  const [live] = events(db, 1);
  await until(() => ahead.messages().length === 1 && quiet.messages().length === 1, 'the live event on both');
  assert.equal([ahead.messages()[0].id, quiet.messages()[0].id], [live, live]);
  stream.stop();
});

test.run();
