// Webhook slots shared fairly (catalogue RES-16): workspace A's four endpoints answer only after 6 s (inside
// webhook_timeout) with a backlog of 48 deliveries, then A's fast endpoint and workspace B's fast endpoint get
// theirs. Before the shares, A's slow endpoints held all 16 slots and the others waited behind nearly all of
// A's backlog (B's last arrived after 44 of A's 48); now B's and A's fast deliveries all arrive while A's slow
// endpoints are still on their first round.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';

const SLOW_MS = 6_000;
const SLOW = ['/a/slow1', '/a/slow2', '/a/slow3', '/a/slow4'];
const PER_SLOW = 12;

let t: TestApp;
let receiver: Server;
let base = '';
/** webhook-ids as they arrive, per path. */
const arrived = new Map<string, string[]>();
const inFlight = new Map<string, number>();
const mostInFlight = new Map<string, number>();
let slowInFlight = 0;
let mostSlowInFlight = 0;
const timers = new Set<NodeJS.Timeout>();
const count = (path: string) => arrived.get(path)?.length ?? 0;

test.before(async () => {
  receiver = createServer((req, res) => {
    const path = req.url!;
    req.resume().on('end', () => {
      arrived.set(path, [...(arrived.get(path) ?? []), String(req.headers['webhook-id'])]);
      const slow = SLOW.includes(path);
      if (!slow) return void res.writeHead(200).end('ok');
      inFlight.set(path, (inFlight.get(path) ?? 0) + 1);
      mostInFlight.set(path, Math.max(mostInFlight.get(path) ?? 0, inFlight.get(path)!));
      mostSlowInFlight = Math.max(mostSlowInFlight, ++slowInFlight);
      const timer = setTimeout(() => res.writeHead(200).end('slow ok'), SLOW_MS);
      timers.add(timer);
      res.on('close', () => {
        clearTimeout(timer);
        timers.delete(timer);
        inFlight.set(path, inFlight.get(path)! - 1);
        slowInFlight--;
      });
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  t = await startTestApp({ env: { MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_WEBHOOK_TIMEOUT: '20s', MAILWRIGHT_RATE_LIMIT: '0' } });
});

test.after(async () => {
  for (const timer of timers) clearTimeout(timer);
  receiver.closeAllConnections();
  receiver.close();
  await t.stop();
});

async function endpoint(key: string, path: string): Promise<string> {
  const res = await request(`${t.api}/webhooks`, { key, body: { url: `${base}${path}`, events: ['*'] } });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.id as string;
}

/** `n` webhook.test deliveries to one endpoint; their ids. */
async function queue(key: string, webhookId: string, n: number): Promise<string[]> {
  const made = await Promise.all(Array.from({ length: n }, () => request(`${t.api}/webhooks/${webhookId}/test`, { key, method: 'POST' })));
  for (const res of made) assert.is(res.status, 201, JSON.stringify(res.body));
  return made.map((res) => res.body.id as string);
}

test('two workspaces, one with slow endpoints: the other workspace and the fast endpoint are not held up', async () => {
  const a = await seedWorkspace(t, { workspace: 'slowco', email: 'owner@slowco.test' });
  const b = await seedWorkspace(t, { workspace: 'fastco', email: 'owner@fastco.test' });
  const slow = await Promise.all(SLOW.map((path) => endpoint(a.key, path)));
  const aFast = await endpoint(a.key, '/a/fast');
  const bFast = await endpoint(b.key, '/b/fast');
  // A's backlog first, so it is due before anything else.
  await Promise.all(slow.map((id) => queue(a.key, id, PER_SLOW)));
  await eventually(() => slowInFlight > 0, 10_000, 'A\'s slow endpoints holding deliveries');
  const aFastIds = await queue(a.key, aFast, 5);
  const bIds = await queue(b.key, bFast, 10);

  // Each of the two waits for all of its own; meanwhile A's slow endpoints take at most 14 at a time, 6 s each.
  const slowSent = () => SLOW.reduce((sum, path) => sum + count(path), 0);
  const whenB = await eventually(() => bIds.every((id) => arrived.get('/b/fast')?.includes(id)) && [slowSent()], 40_000, 'every delivery of B');
  const whenAFast = await eventually(() => aFastIds.every((id) => arrived.get('/a/fast')?.includes(id)) && [slowSent()], 40_000, 'every delivery of A\'s fast endpoint');
  const half = (SLOW.length * PER_SLOW) / 2;
  assert.ok(whenB[0] < half, `B's deliveries all arrived before half of A's slow backlog was sent (${whenB[0]} of ${SLOW.length * PER_SLOW})`);
  assert.ok(whenAFast[0] < half, `so did those of A's fast endpoint (${whenAFast[0]} of ${SLOW.length * PER_SLOW})`);
  assert.is(count('/b/fast'), 10, 'each of B\'s deliveries once');
  // The shares: 4 at once to one endpoint; past its share of 4 a workspace always leaves 2 of the 16 slots free.
  for (const path of SLOW) assert.ok((mostInFlight.get(path) ?? 0) <= 4, `${path}: at most 4 at once (saw ${mostInFlight.get(path)})`);
  assert.ok(mostSlowInFlight <= 14, `A's slow endpoints held at most 14 slots (saw ${mostSlowInFlight})`);
  // What B's owner sees: every delivery delivered, answered 200 on the first attempt.
  const listed = await eventually(async () => {
    const res = await request(`${t.api}/webhooks/${bFast}/deliveries?status=delivered&limit=100`, { key: b.key });
    return res.body.count === 10 && res.body.data;
  }, 10_000, 'B\'s deliveries recorded');
  assert.equal(
    listed.map((d: { attempts: number; lastStatusCode: number }) => [d.attempts, d.lastStatusCode]),
    Array.from({ length: 10 }, () => [1, 200]),
  );
});

test.run();
