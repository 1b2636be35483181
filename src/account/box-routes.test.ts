// GET /queue and GET /doctor (account/box-routes.ts) over real HTTP: their shapes, that each workspace sees
// only its own queue rows and domains, that doctor names what DNS lacks with the record to publish and is
// satisfied once it is published, and that a resolver that never answers costs the budget, not the request.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { login, request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { doctorFindings } from './box-routes.ts';
import { run } from '../db/query.ts';

const HOST = 'mx.mailwright.test';
let dns: DnsServer;
let t: TestApp;
let a: Awaited<ReturnType<typeof seedWorkspace>>;
let b: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  dns = await startDnsServer();
  t = await startTestApp({ env: { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_RATE_LIMIT: '0' } });
  a = await seedWorkspace(t);
  b = await seedWorkspace(t, { workspace: 'other' });
});
test.after(async () => {
  await t.stop();
  await dns.close();
});

const api = (path: string, key: string) => request(`${t.api}${path}`, { key });

// Queue rows as the queue leaves them, far in the future (or freshly claimed) so the running queue never takes them.
async function queueRow(workspaceId: string, state: string, recipient: string, extra: { firstDeferredAt?: number; lastResponse?: string } = {}) {
  const now = Date.now();
  const id = `em_${Math.random().toString(36).slice(2)}`;
  await t.app.store.write(() => insertQueueRow(id, workspaceId, state, recipient, now, extra));
  return id;
}

function* insertQueueRow(id: string, workspaceId: string, state: string, recipient: string, now: number, extra: { firstDeferredAt?: number; lastResponse?: string }) {
  yield* run("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, created_at) VALUES (?, ?, 'out', 'sent', ?, ?, 'app@a.test', ?)", id, workspaceId, `${id}@a.test`, id, now);
  yield* run(
    `INSERT INTO deliveries (email_id, workspace_id, recipient, domain, state, attempts, next_attempt_at, claimed_at, claimed_by, first_deferred_at, last_response, created_at, updated_at)
     VALUES (?, ?, ?, 'dest.test', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id,
    workspaceId,
    recipient,
    state,
    state === 'deferred' ? 1 : 0,
    state === 'sending' || !['queued', 'deferred'].includes(state) ? null : now + 86_400_000,
    state === 'sending' ? now : null,
    state === 'sending' ? process.pid : null,
    extra.firstDeferredAt ?? null,
    extra.lastResponse ?? null,
    now,
    now,
  );
}

test('GET /queue: zeros and no deferred recipient for an empty queue', async () => {
  const res = await api('/queue', a.key);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body, { counts: { queued: 0, sending: 0, deferred: 0 }, oldestDeferred: null });
});

test("GET /queue: the caller's live recipients by state and its longest-deferred one, never another workspace's", async () => {
  const hour = 3_600_000;
  await queueRow(a.workspace.id, 'queued', 'q1@dest.test');
  await queueRow(a.workspace.id, 'queued', 'q2@dest.test');
  await queueRow(a.workspace.id, 'sending', 's1@dest.test');
  await queueRow(a.workspace.id, 'deferred', 'later@dest.test', { firstDeferredAt: Date.now() - hour, lastResponse: '451 4.7.1 try later' });
  const oldest = await queueRow(a.workspace.id, 'deferred', 'first@dest.test', { firstDeferredAt: Date.now() - 5 * hour, lastResponse: '421 4.4.2 busy' });
  await queueRow(a.workspace.id, 'delivered', 'done@dest.test');
  // The other workspace's queue is larger and deferred longer still.
  for (let i = 0; i < 3; i++) await queueRow(b.workspace.id, 'deferred', `b${i}@dest.test`, { firstDeferredAt: Date.now() - 50 * hour, lastResponse: '450 other' });

  const res = await api('/queue', a.key);
  assert.equal(res.body.counts, { queued: 2, sending: 1, deferred: 2 });
  assert.equal(Object.keys(res.body.oldestDeferred).sort(), ['emailId', 'lastResponse', 'recipient', 'since']);
  assert.equal([res.body.oldestDeferred.emailId, res.body.oldestDeferred.recipient, res.body.oldestDeferred.lastResponse], [oldest, 'first@dest.test', '421 4.4.2 busy']);
  assert.ok(Date.now() - Date.parse(res.body.oldestDeferred.since) >= 5 * hour - 1000);

  const other = await api('/queue', b.key);
  assert.equal(other.body.counts, { queued: 0, sending: 0, deferred: 3 });
  assert.is(other.body.oldestDeferred.lastResponse, '450 other');
  // A session reads it too; no credential is a 401.
  assert.is((await request(`${t.api}/queue`, { cookie: await login(t, a.email) })).status, 200);
  assert.is((await request(`${t.api}/queue`)).status, 401);
});

test("GET /doctor: the box's and the caller's domains' problems with the record to publish; not another workspace's domains", async () => {
  const mine = (await request(`${t.api}/domains`, { body: { name: 'mine.test' }, key: a.key })).body;
  await request(`${t.api}/domains`, { body: { name: 'theirs.test' }, key: b.key });

  const res = await api('/doctor', a.key);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(Object.keys(res.body).sort(), ['checkedAt', 'findings', 'problems']);
  const findings = res.body.findings as Array<Record<string, string | null>>;
  for (const f of findings) assert.equal(Object.keys(f).sort(), ['area', 'check', 'fix', 'message', 'status', 'subject']);
  assert.ok(findings.some((f) => f.area === 'box' && f.check === 'address' && f.status === 'problem' && f.message === `${HOST} has no A or AAAA record`));
  const subjects = new Set(findings.filter((f) => f.area === 'domain').map((f) => f.subject));
  assert.equal([...subjects], ['mine.test']);
  assert.not.ok(JSON.stringify(res.body).includes('theirs.test'));
  const dkim = mine.records.find((r: any) => r.record === 'DKIM');
  assert.ok(findings.some((f) => f.check === 'DKIM' && f.status === 'problem' && f.fix === `publish ${dkim.name} TXT "${dkim.value}"`), JSON.stringify(findings));
  assert.ok(findings.some((f) => f.check === 'MX' && f.fix === `publish bounces.mine.test MX 10 ${HOST}`));
  assert.is(res.body.problems, findings.filter((f) => f.status !== 'ok').length);

  const theirs = (await api('/doctor', b.key)).body.findings as Array<Record<string, string>>;
  assert.equal([...new Set(theirs.filter((f) => f.area === 'domain').map((f) => f.subject))], ['theirs.test']);
});

test('GET /doctor is satisfied once the box has forward-confirmed DNS and every record is published', async () => {
  dns.add(HOST, 'A', '127.0.0.1');
  dns.add('1.0.0.127.in-addr.arpa', 'PTR', HOST);
  const d = (await api('/domains', a.key)).body.data.find((x: any) => x.name === 'mine.test');
  dns.publish((await api(`/domains/${d.id}`, a.key)).body.records);
  const res = await api('/doctor', a.key);
  assert.is(res.body.problems, 0, JSON.stringify(res.body.findings));
  assert.ok(res.body.findings.some((f: any) => f.check === 'ptr' && f.status === 'ok' && f.message === `127.0.0.1 has PTR ${HOST} (forward-confirmed)`));
  assert.equal(res.body.findings.filter((f: any) => f.subject === 'mine.test').map((f: any) => [f.check, f.status]), [
    ['DKIM', 'ok'],
    ['MX', 'ok'],
    ['SPF', 'ok'],
    ['DMARC', 'ok'],
  ]);
});

test('a resolver that never answers: doctor answers within its budget, what did not finish is pending', async () => {
  dns.fail('_dmarc.mine.test', '*', 'timeout');
  try {
    const started = Date.now();
    const findings = await doctorFindings(t.app, a.workspace.id, 300);
    assert.ok(Date.now() - started < 1500, `took ${Date.now() - started} ms`);
    assert.equal(findings.filter((f) => f.subject === 'mine.test').map((f) => [f.check, f.status]), [['records', 'pending']]);
    assert.ok(findings.some((f) => f.area === 'box' && f.status === 'ok'), 'the box checks finished in time');
  } finally {
    dns.unfail();
  }
});

test.run();
