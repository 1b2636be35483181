// Several nodes of one box (on PostgreSQL: several `serve` processes, each with its own data directory, on one
// database; on SQLite: several processes on one data directory): which nodes count as stopped, periodic jobs
// taken once, idempotency keys, rate limits and failed logins counted across nodes, and `kill -9` of a node
// under inbound and outbound load: every message it acknowledged is kept, another node takes its claims back,
// every queued recipient is delivered, and twice only what the dead node had handed over without learning it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostname } from 'node:os';
import { rmSync } from 'node:fs';
import { ownStores, request, runCli, seedWorkspace, startAppProcess, type AppProcess, startTestApp, tempDir, TEST_PASSWORD, testEnv, testStoreEnv, type TestApp } from '../testkit/app.ts';
import type { DnsServer } from '../testkit/dns-server.ts';
import { startSmtpSink } from '../testkit/smtp-sink.ts';
import { BOX, eventually, startDestinationDns } from '../testkit/outbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { bothStores, migratedDatabase, readBox } from '../testkit/postgres.ts';
import { createWorkspace } from '../account/workspaces.ts';
import { Idempotency } from '../db/idempotency.ts';
import type { ApiError } from '../errors.ts';
import { all, value } from '../db/query.ts';
import { NODE_LEASE_MS, stoppedNodes, type NodeRecord } from './nodes.ts';
import { takeRun } from './once.ts';

test('a node is stopped when silent past the lease, or on this host with its process gone; never oneself', () => {
  const now = 10_000_000;
  const here = hostname();
  const nodes: NodeRecord[] = [
    { id: 1, host: here, pid: process.pid, seen_at: now },
    { id: 2, host: 'elsewhere', pid: 1234, seen_at: now - 5_000 },
    { id: 3, host: 'elsewhere', pid: 1234, seen_at: now - NODE_LEASE_MS - 1 },
    { id: 4, host: here, pid: 2 ** 22 + 7, seen_at: now },
    { id: 5, host: here, pid: process.pid, seen_at: now - 1000 },
  ];
  // 1 is this process; 5 had this process's pid before it (a previous life); 4's process does not exist.
  assert.equal(stoppedNodes(nodes, 1, now), [3, 4, 5]);
  assert.equal(stoppedNodes(nodes, 2, now, 'another-host'), [3]);
});

let t: TestApp;
test('a periodic job is taken by one node per occurrence', async () => {
  t = await startTestApp();
  const { store } = t.app;
  const now = Date.now();
  const [first, second] = await Promise.all([store.write(() => takeRun('recheck', now, 30_000, 1)), store.write(() => takeRun('recheck', now + 5, 30_000, 2))]);
  assert.equal([first, second].sort(), [false, true], 'two nodes at the same minute: one runs it');
  assert.is(await store.write(() => takeRun('recheck', now + 20_000, 30_000, 2)), false, 'a run that ended quickly is not taken again');
  assert.is(await store.write(() => takeRun('recheck', now + 60_000, 30_000, 2)), true, 'the next occurrence');
  assert.is(await store.write(() => takeRun('housekeeping', now + 60_000, 30_000, 1)), true, 'jobs apart');
  assert.is(await store.read(value<number>("SELECT node_id FROM job_runs WHERE name = 'recheck'")), 2);
  // The app itself is a node on record.
  assert.equal(await store.read(all('SELECT id, pid FROM nodes')), [{ id: t.app.node.id, pid: process.pid }]);
  await t.stop();
});

const refusal = (p: Promise<unknown>) => p.then(() => 'none', (e: ApiError) => e.code);

ownStores(test)('an Idempotency-Key under way on one node is concurrent on the others (PostgreSQL), and let go when it ends', async () => {
  const { stores, close } = await bothStores();
  const store = stores.find((x) => x.dialect === 'postgres')!;
  const clock = { at: Date.now(), now() { return this.at; } };
  try {
    const ws = (await store.write(() => createWorkspace(clock, 'nodes'))).id;
    const [one, two] = [new Idempotency(store, clock), new Idempotency(store, clock)];
    const begun = await one.begin(ws, 'POST /emails', 'k1', { to: 'a' });
    assert.ok('claim' in begun);
    assert.is(await refusal(two.begin(ws, 'POST /emails', 'k1', { to: 'a' })), 'concurrent_idempotent_requests');
    assert.is(await refusal(two.begin(ws, 'POST /emails', 'k1', { to: 'b' })), 'invalid_idempotent_request');
    await begun.claim.complete(200, { id: 'em_1' });
    begun.release();
    assert.equal(await two.begin(ws, 'POST /emails', 'k1', { to: 'a' }), { replay: { status: 200, body: { id: 'em_1' } } });

    // Ended without an answer to keep (a 4xx): the key is free again on every node.
    const failed = await one.begin(ws, 'POST /emails', 'k2', { to: 'a' });
    assert.ok('claim' in failed);
    failed.release();
    await eventually(async () => 'claim' in (await two.begin(ws, 'POST /emails', 'k2', { to: 'a' }).catch(() => ({}))), 5000, 'k2 let go');

    // Held by a node that stopped: free once the hold lapses.
    assert.ok('claim' in (await one.begin(ws, 'POST /emails', 'k3', { to: 'a' })));
    assert.is(await refusal(two.begin(ws, 'POST /emails', 'k3', { to: 'a' })), 'concurrent_idempotent_requests');
    clock.at += 2 * 60_000 + 1;
    assert.ok('claim' in (await two.begin(ws, 'POST /emails', 'k3', { to: 'a' })));
  } finally {
    await close();
  }
});

ownStores(test)('the API rate limit holds across nodes sharing PostgreSQL: one budget for a key spread over two', async () => {
  const fresh = await migratedDatabase();
  const env = { MAILWRIGHT_DATABASE_URL: fresh.url, MAILWRIGHT_RATE_LIMIT: '2' }; // 2 a second, burst 4
  const one = await startTestApp({ env });
  const two = await startTestApp({ env });
  try {
    const { key } = await seedWorkspace(one);
    let allowed = 0;
    let refused = 0;
    const started = Date.now();
    for (let i = 0; Date.now() - started < 5000; i++) {
      const r = await request(`${(i % 2 ? one : two).api}/domains`, { key });
      if (r.status === 200) allowed++;
      else if (r.status === 429) refused++;
      else assert.unreachable(`${r.status} ${JSON.stringify(r.body)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    // Alone, each node would let 4 + 2 x 5 through (28 in all); shared, the budget is one: 4 + 10, plus the
    // burst each node grants a key before its first sync and what slips between syncs.
    assert.ok(allowed >= 10 && allowed <= 20, `${allowed} allowed, ${refused} refused`);
  } finally {
    await two.stop();
    await one.stop();
    await fresh.drop();
  }
});

ownStores(test)('failed logins count on every node sharing PostgreSQL: ten through two nodes lock the address out of both', async () => {
  const fresh = await migratedDatabase();
  const env = { MAILWRIGHT_DATABASE_URL: fresh.url, MAILWRIGHT_RATE_LIMIT: '0' };
  const one = await startTestApp({ env });
  const two = await startTestApp({ env });
  try {
    const { email } = await seedWorkspace(one);
    // Five wrong passwords through each: alone, each node would still let this address try its owner's password.
    for (let i = 0; i < 10; i++) {
      const r = await request(`${(i % 2 ? one : two).api}/auth/login`, { body: { email, password: `guess ${i}` } });
      assert.is(r.status, 401, `guess ${i}: ${JSON.stringify(r.body)}`);
    }
    for (const node of [one, two]) assert.is((await request(`${node.api}/auth/login`, { body: { email, password: TEST_PASSWORD } })).status, 429, 'refused on both nodes');
  } finally {
    await two.stop();
    await one.stop();
    await fresh.drop();
  }
});

/**
 * Letters to an SMTP port, one session after another, until stopped or the node stops answering: the ids of
 * those it acknowledged with 250. A failure while the node answers fails the test.
 */
function keepReceiving(port: number, to: string) {
  const acknowledged: string[] = [];
  let stopping = false;
  const done = (async () => {
    for (let i = 0; !stopping; i++) {
      const c = await RawSmtp.open(port).catch(() => null);
      if (!c) return; // the node is gone
      try {
        await c.read(10_000);
        await c.command('EHLO client.sender.example', 10_000);
        await c.command('MAIL FROM:<ann@sender.example>', 10_000);
        assert.is((await c.command(`RCPT TO:<${to}>`, 10_000)).code, 250);
        await c.command('DATA', 10_000);
        c.write(`From: Ann <ann@sender.example>\r\nTo: ${to}\r\nSubject: letter ${i}\r\nMessage-ID: <letter-${i}-${port}@sender.example>\r\n\r\nLetter ${i}.\r\n.\r\n`);
        const reply = await c.read(10_000);
        assert.is(reply.code, 250, reply.text);
        acknowledged.push(/queued as (em_\w+)/.exec(reply.text)![1]!);
      } catch (err) {
        if (c.closed) return;
        throw err;
      } finally {
        c.close();
      }
    }
  })();
  return { acknowledged, stop: () => ((stopping = true), done) };
}

let dns: DnsServer;
test.before(async () => {
  dns = await startDestinationDns();
});
test.after(() => dns.close());

test('kill -9 of a node receiving and delivering: what it acknowledged is kept; another takes its claims back; each recipient delivered, twice only what was handed over unanswered', async () => {
  // A 250 that comes seconds after the message: a node killed meanwhile handed it over without knowing.
  const sink = await startSmtpSink({ host: '127.0.0.2', dataDelayMs: 3000 });
  const store = await testStoreEnv();
  const shared = { ...store.env, MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_MTA_PORT: String(sink.port), MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true', MAILWRIGHT_RATE_LIMIT: '0' };
  const dirA = tempDir();
  // Nodes on PostgreSQL keep nothing of the box in their data directories; on SQLite the file is the box.
  const dirB = store.env.MAILWRIGHT_DATABASE_URL ? tempDir() : dirA;
  const [envA, envB] = [testEnv(dirA, shared), testEnv(dirB, shared)];
  const a = await startAppProcess(envA);
  let b: AppProcess | null = null;
  try {
    const key = (await runCli(['key', 'create', '--name', 'test'], envA)).stdout.trim();
    const d = (await request(`${a.url}/api/v1/domains`, { key, body: { name: 'nodes.test' } })).body;
    dns.publish(d.records);
    assert.is((await request(`${a.url}/api/v1/domains/${d.id}/verify`, { method: 'POST', key })).body.status, 'verified');
    await request(`${a.url}/api/v1/domains/${d.id}/inbound/setup`, { method: 'POST', key });
    dns.set('nodes.test', 'MX', [{ preference: 10, exchange: BOX }]);
    assert.is((await request(`${a.url}/api/v1/domains/${d.id}/inbound/verify`, { method: 'POST', key })).body.status, 'ready');
    const inbox = (await request(`${a.url}/api/v1/inboxes`, { key, body: { domain_id: d.id, local_part: 'hello', name: 'hello' } })).body.address as string;
    const receiving = keepReceiving(a.smtpPort, inbox);

    // Sent through node A, which claims them as they come; node B joins while A works, and finds nothing due.
    const N = 40;
    const accepted = await Promise.all(
      Array.from({ length: N }, (_, i) => request(`${a.url}/api/v1/emails`, { key, body: { from: 'app@nodes.test', to: [`user${i}@dest.test`], subject: `message ${i}`, text: `body ${i}` } })),
    );
    assert.ok(accepted.every((r) => r.status === 200));
    const nodeA = await readBox(envA, value<number>('SELECT id FROM nodes WHERE pid = ?', a.child.pid!));
    assert.ok(nodeA, 'node A is on record');
    await eventually(async () => ((await readBox(envA, value<number>("SELECT count(*) FROM deliveries WHERE state = 'sending' AND claimed_by = ?", nodeA))) ?? 0) > 0, 20_000, 'node A holding claims');
    b = await startAppProcess(envB);
    await eventually(() => receiving.acknowledged.length >= 3, 20_000, 'node A receiving mail');
    await a.stop('SIGKILL');
    await receiving.stop();
    for (const id of receiving.acknowledged) assert.is((await request(`${b.url}/api/v1/emails/${id}`, { key })).status, 200, `${id}, acknowledged by node A, read through node B`);

    await eventually(async () => (await readBox(envB, value<number>("SELECT count(*) FROM deliveries WHERE state <> 'delivered'"))) === 0, 60_000, 'every recipient delivered');
    const takenBack = b.output().split('\n').filter((l) => l.includes('left in flight by a node that stopped')).map((l) => JSON.parse(l) as { count: number; nodes: number[] });
    assert.is(takenBack.length, 1, b.output());
    assert.equal(takenBack[0]!.nodes, [nodeA]);
    const times = new Map<string, number>();
    for (const m of sink.messages) for (const r of m.rcptTo) times.set(r, (times.get(r) ?? 0) + 1);
    assert.is(times.size, N, 'every recipient delivered');
    const twice = [...times].filter(([, n]) => n > 1);
    assert.ok(twice.every(([, n]) => n === 2), 'none more than twice');
    assert.ok(twice.length <= takenBack[0]!.count, `${twice.length} delivered twice, of ${takenBack[0]!.count} node A held`);
    assert.equal(await readBox(envB, all('SELECT id FROM nodes')), [{ id: (await readBox(envB, value<number>('SELECT id FROM nodes WHERE pid = ?', b.child.pid!)))! }], 'node A is off the record');
  } finally {
    await a.stop('SIGKILL');
    await b?.stop('SIGKILL');
    await sink.close();
    rmSync(dirA, { recursive: true, force: true });
    rmSync(dirB, { recursive: true, force: true });
    await store.drop();
  }
});

test.run();
