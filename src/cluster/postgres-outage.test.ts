// PostgreSQL out of reach under load (a restart, a failover): while the connections are cut and refused, the API
// answers 503 service_unavailable with retry-after and SMTP 451, never a 250 or a 200 for what it did not
// store and never a 5xx from SMTP; once the server answers again the box recovers by itself, and every message
// it acknowledged is there: received mail stored, sends delivered.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ownStores, request, TEST_STORE } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { migratedDatabase } from '../testkit/postgres.ts';
import { openPool } from '../db/postgres.ts';
import { startTcpRelay, type TcpRelay } from '../testkit/tcp-relay.ts';
import { eventually } from '../testkit/outbound.ts';

let s: InboundScene;
let relay: TcpRelay;
let database: { url: string; drop: () => Promise<void> };

test.before(async () => {
  if (TEST_STORE === 'postgres') return; // a database of its own behind the relay: ownStores
  database = await migratedDatabase();
  const direct = new URL(database.url);
  relay = await startTcpRelay({ host: direct.hostname, port: Number(direct.port) });
  const through = new URL(database.url);
  through.port = String(relay.port);
  s = await startInboundScene({ env: { MAILWRIGHT_DATABASE_URL: through.toString(), MAILWRIGHT_RATE_LIMIT: '0' } });
  s.routeTo('dest.test');
});
test.after(async () => {
  await relay?.restore().catch(() => {});
  await s?.stop();
  await relay?.close();
  await database?.drop();
});

const letter = (n: number) =>
  `From: Ann <ann@sender.example>\r\nTo: ${s.inbox.address}\r\nSubject: letter ${n}\r\nMessage-ID: <letter-${n}@sender.example>\r\nDate: Mon, 1 Jun 2026 10:00:00 +0000\r\n\r\nLetter number ${n}.\r\n`;

ownStores(test)('the connections cut for three seconds under load: 503 and 451 meanwhile, nothing acknowledged is lost, and it recovers by itself', async () => {
  const sent = new Map<number, { status: number; code?: string; retryAfter?: string }>();
  const received = new Map<number, number>();
  const started = Date.now();
  const until = started + 9000;
  const sending = (async () => {
    for (let n = 0; Date.now() < until; n++) {
      const r = await request(`${s.t.api}/emails`, { key: s.key, body: { from: `app@${s.domain.name}`, to: [`reader${n}@dest.test`], subject: `send ${n}`, text: `Send number ${n}` } });
      sent.set(n, { status: r.status, code: r.body?.error?.code, retryAfter: r.headers.get('retry-after') ?? undefined });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const receiving = (async () => {
    for (let n = 0; Date.now() < until; n++) {
      const reply = await s.deliver(letter(n), { from: 'ann@sender.example', to: [s.inbox.address] }).catch(() => ({ code: 0 }));
      received.set(n, reply.code);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 2500));
  await relay.cut();
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await relay.restore();
  await Promise.all([sending, receiving]);

  const statuses = [...sent.values()];
  assert.ok(statuses.every((r) => r.status === 200 || r.status === 503), JSON.stringify(statuses.filter((r) => r.status !== 200 && r.status !== 503)));
  const refused = statuses.filter((r) => r.status === 503);
  assert.ok(refused.length > 0, 'the outage was seen by the API');
  assert.ok(refused.every((r) => r.code === 'service_unavailable' && r.retryAfter === '5'));
  const codes = [...received.values()];
  assert.ok(codes.every((c) => c === 250 || (c >= 400 && c < 500)), JSON.stringify(codes));
  assert.ok(codes.some((c) => c >= 400 && c < 500), 'the outage was seen by SMTP');
  // Recovered by itself: the last requests of each kind were taken again.
  assert.is(statuses.at(-1)!.status, 200);
  assert.is(codes.at(-1), 250);

  // Every 250 is stored, every 200 delivered.
  const acknowledged = [...received].filter(([, c]) => c === 250).map(([n]) => `letter ${n}`);
  const stored = new Set((await s.stored()).map((e) => e.subject));
  assert.equal(acknowledged.filter((subject) => !stored.has(subject)), [], 'received mail acknowledged and not stored');
  const accepted = [...sent].filter(([, r]) => r.status === 200).map(([n]) => `reader${n}@dest.test`);
  await eventually(() => accepted.every((to) => s.sink.messages.some((m) => m.rcptTo.includes(to))), 30_000, 'every accepted send delivered');
});

ownStores(test)('a claim that committed while its answer was lost is queued again once the store answers, not after the lease', async () => {
  const to = 'lost-claim@dest.test';
  const copies = () => s.sink.messages.filter((m) => m.rcptTo.includes(to)).length;
  const r = await request(`${s.t.api}/emails`, { key: s.key, body: { from: `app@${s.domain.name}`, to: [to], subject: 'Lost claim', text: 'Claimed unheard.' } });
  assert.is(r.status, 200);
  await eventually(() => copies() === 1, 15_000, 'delivered');
  // What a claim's commit leaves when its answer never comes back: the row taken by this node, which never heard.
  const direct = openPool(database.url, { max: 1 });
  try {
    const taken = await direct.query("UPDATE deliveries SET state = 'sending', claimed_by = (SELECT max(id) FROM nodes), claimed_at = $1 WHERE recipient = $2", [Date.now(), to]);
    assert.is(taken.rowCount, 1);
  } finally {
    await direct.end();
  }
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.is(copies(), 1, 'a claim the node holds is left alone while its pumps succeed');
  // The store out of reach: a pump fails, and its claim might have gone through unheard.
  await relay.cut();
  await new Promise((resolve) => setTimeout(resolve, 2500));
  await relay.restore();
  await eventually(() => copies() === 2, 20_000, 'the unheard claim put back and delivered (the lease is 30 minutes)');
});

test.run();
