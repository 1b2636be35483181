// What a node keeps of keys, domains, plans, rules and sending states on PostgreSQL (node-cache.ts): never a value read across a
// change it heard, nothing while it cannot hear, and, through the API of two nodes on one database, a change made
// on one node taken at once by that node and within moments by the other.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cached, NodeCache, SETTINGS_CHANNEL } from './node-cache.ts';
import { change, get, runSync } from './query.ts';
import { openPool } from './postgres.ts';
import { PostgresCommit } from './postgres-commit.ts';
import type { Writer } from './writer.ts';
import { migratePostgres } from './postgres-migrate.ts';
import { secretHash } from '../account/secrets.ts';
import { freePort, login, ownStores, request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { migratedDatabase } from '../testkit/postgres.ts';
import { eventually, startDestinationDns } from '../testkit/outbound.ts';
import type { DnsServer } from '../testkit/dns-server.ts';
import { addEvent } from '../emails/events.ts';

/** `cached` run synchronously, counting the statements that reached the "database". */
function reader(cache: NodeCache) {
  let reads = 0;
  let stored = 'first';
  return {
    read: (key = 'k') => runSync(cached(cache, key, get<string>('SELECT v')), () => (reads++, stored)),
    set: (v: string) => (stored = v),
    reads: () => reads,
  };
}

test('kept while heard: read once, then from the cache; forgotten at a notice', () => {
  const cache = new NodeCache(() => true);
  const r = reader(cache);
  assert.is(r.read(), 'first');
  assert.is(r.read(), 'first');
  assert.is(r.reads(), 1);
  r.set('second');
  cache.forget();
  assert.is(r.read(), 'second');
  assert.is(r.reads(), 2);
});

test("a notice naming a scope forgets that scope's entries only", () => {
  const cache = new NodeCache(() => true);
  for (const key of ['sending ws_1 2026-01-01', 'sending ws_12 2026-01-01', 'domain ws_1 a.example']) cache.set(key, true, cache.ticket());
  cache.forget('sending ws_1');
  assert.equal([cache.get('sending ws_1 2026-01-01'), cache.get('sending ws_12 2026-01-01')?.value, cache.get('domain ws_1 a.example')?.value], [undefined, true, true]);
  cache.forget('');
  assert.is(cache.get('domain ws_1 a.example'), undefined);
});

test('nothing is kept while the changes cannot be heard', () => {
  let live = false;
  const cache = new NodeCache(() => live);
  const r = reader(cache);
  r.read();
  r.read();
  assert.is(r.reads(), 2);
  live = true;
  r.read();
  r.read();
  assert.is(r.reads(), 3);
  live = false;
  r.read();
  assert.is(r.reads(), 4, 'a kept entry is not used once the listener is lost');
});

test('a value read across a notice is not kept', () => {
  const cache = new NodeCache(() => true);
  const ticket = cache.ticket();
  cache.forget(); // heard while the read was under way
  cache.set('k', 'stale', ticket);
  assert.is(cache.get('k'), undefined);
  cache.set('k', 'fresh', cache.ticket());
  assert.is(cache.get('k')?.value, 'fresh');
});

test('an entry is read again after a minute, and the oldest go past ten thousand', () => {
  let now = 0;
  const cache = new NodeCache(() => true, () => now);
  cache.set('old', 1, cache.ticket());
  now = 60_001;
  assert.is(cache.get('old'), undefined);
  for (let i = 0; i <= 10_000; i++) cache.set(`k${i}`, i, cache.ticket());
  assert.is(cache.get('k0'), undefined);
  assert.ok(cache.get('k10000'));
});

/** A group commit on a fresh database with workspace ws_1, whose pooled connections note the notices they hear. */
async function onFreshDatabase(body: (commit: PostgresCommit, heard: () => string[]) => Promise<void>): Promise<void> {
  const database = await migratedDatabase();
  const heard: string[] = [];
  const pool = openPool(database.url, { notices: { channel: SETTINGS_CHANNEL, heard: (scope) => heard.push(scope) } });
  try {
    await migratePostgres(pool);
    const commit = new PostgresCommit(pool);
    await commit.run(() => change("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_1', 'one', 0)"));
    assert.equal(heard, [], 'a new workspace changes nothing kept');
    await body(commit, () => heard);
  } finally {
    await pool.end();
    await database.drop();
  }
}

ownStores(test)('a change committed on a connection is heard before its COMMIT is answered', () =>
  onFreshDatabase(async (commit, heard) => {
    // The node forgets what it kept before it acknowledges the change, whatever its listener hears and when.
    await commit.run(() => change("DELETE FROM workspaces WHERE id = 'ws_1'"));
    assert.equal(heard(), ['']);
  }),
);

ownStores(test)('daily counts: a bounce or complaint counted is heard, whether its day had a row or not; mail sent is not', () =>
  onFreshDatabase(async (commit, heard) => {
    const count = (day: string, column: string) =>
      commit.run(() => change(`INSERT INTO daily_stats (workspace_id, day, ${column}) VALUES ('ws_1', ?, 1) ON CONFLICT (workspace_id, day) DO UPDATE SET ${column} = daily_stats.${column} + excluded.${column}`, day));
    await count('2026-01-01', 'sent');
    await count('2026-01-01', 'sent');
    await count('2026-01-01', 'delivered');
    assert.equal(heard(), [], 'mail sent and delivered only lowers the rates');
    await count('2026-01-01', 'bounced');
    assert.equal(heard(), ['sending ws_1'], 'a bounce on a day with a row: only the workspace sending state is forgotten');
    await count('2026-01-02', 'complained');
    assert.equal(heard(), ['sending ws_1', 'sending ws_1'], "a complaint making its day's row");
  }),
);

let dns: DnsServer;
test.before(async () => {
  dns = await startDestinationDns();
});
test.after(() => dns.close());

/** Two nodes on one fresh PostgreSQL database, a workspace with a key and a verified domain `cache.example`. */
async function twoNodes(more: Record<string, string> = {}) {
  const database = await migratedDatabase();
  const env = { MAILWRIGHT_DATABASE_URL: database.url, MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_RATE_LIMIT: '0', ...more };
  const one = await startTestApp({ env });
  const two = await startTestApp({ env });
  const { key, email, workspace } = await seedWorkspace(one);
  const d = (await request(`${one.api}/domains`, { body: { name: 'cache.example' }, key })).body;
  dns.publish(d.records);
  assert.is((await request(`${one.api}/domains/${d.id}/verify`, { method: 'POST', key })).body.status, 'verified');
  // Both nodes listen before anything is kept.
  await eventually(() => listening(one) && listening(two), 10_000, 'both nodes hearing changes');
  const send = (t: TestApp, extra: Record<string, unknown> = {}) =>
    request(`${t.api}/emails`, { key, body: { from: `app@cache.example`, to: ['someone@dest.test'], subject: 'hi', text: 'x', ...extra } });
  return {
    one,
    two,
    key,
    email,
    workspaceId: workspace.id,
    domainId: d.id as string,
    send,
    async close() {
      await two.stop();
      await one.stop();
      await database.drop();
    },
  };
}

/** Whether the node's cache keeps entries now (its listening connection is up). */
function listening(t: TestApp): boolean {
  const cache = t.app.cache!;
  const probe = `probe ${Math.random()}`;
  cache.set(probe, 1, cache.ticket());
  return cache.get(probe) !== undefined;
}

ownStores(test)('a key revoked through one node is refused by it at the next request, and by the other once it hears', async () => {
  const n = await twoNodes();
  try {
    const keys = await request(`${n.one.api}/keys`, { key: n.key });
    const id = keys.body.data[0].id as string;
    for (const t of [n.one, n.two]) for (let i = 0; i < 2; i++) assert.is((await request(`${t.api}/domains`, { key: n.key })).status, 200);
    const entry = `key ${secretHash(n.key).toString('base64')}`;
    assert.ok(n.one.app.cache!.get(entry) && n.two.app.cache!.get(entry), 'both nodes keep the key');
    const cookie = await login(n.one, n.email);
    assert.is((await request(`${n.one.api}/keys/${id}`, { method: 'DELETE', cookie })).status, 200);
    assert.is((await request(`${n.one.api}/domains`, { key: n.key })).status, 401, 'the node that revoked it');
    await eventually(async () => (await request(`${n.two.api}/domains`, { key: n.key })).status === 401, 2000, 'the other node refusing the key');
  } finally {
    await n.close();
  }
});

ownStores(test)('marketing switched off, a label rule made and its label deleted: the next send through that node sees each change', async () => {
  const n = await twoNodes();
  try {
    const on = await request(`${n.one.api}/domains/${n.domainId}`, { method: 'PATCH', key: n.key, body: { marketing: true } });
    assert.is(on.status, 200);
    for (const t of [n.one, n.two]) assert.is((await n.send(t, { message_class: 'marketing' })).status, 200);
    for (const t of [n.one, n.two]) assert.ok(t.app.cache!.get(`domain ${n.workspaceId} cache.example`), 'both nodes keep the domain');
    assert.is((await request(`${n.two.api}/domains/${n.domainId}`, { method: 'PATCH', key: n.key, body: { marketing: false } })).status, 200);
    const refused = await n.send(n.two, { message_class: 'marketing' });
    assert.equal([refused.status, refused.body.error?.code], [403, 'marketing_not_enabled'], 'the node that switched it off');
    await eventually(async () => (await n.send(n.one, { message_class: 'marketing' })).status === 403, 2000, 'the other node refusing marketing mail');

    // A rule, then its label deleted (the writer thread's job): each taken by the very next send.
    const label = (await request(`${n.one.api}/labels`, { key: n.key, body: { name: 'Receipts' } })).body;
    assert.ok(label.id, JSON.stringify(label));
    assert.is((await n.send(n.one)).status, 200); // the node keeps the workspace's (empty) rules
    const rule = await request(`${n.one.api}/labels/${label.id}/rules`, { key: n.key, body: { subject: 'receipt' } });
    assert.is(rule.status, 201, JSON.stringify(rule.body));
    const labelled = (await n.send(n.one, { subject: 'Your receipt' })).body.id as string;
    assert.ok((await request(`${n.one.api}/emails/${labelled}`, { key: n.key })).body.labels.some((l: { id: string }) => l.id === label.id), 'the rule made the moment before');
    // The label is deleted by the writer thread, whose answer says that it changed settings (its rules went with it).
    const writer = n.one.app.writer as Writer;
    await writer.run({ steps: [{ kind: 'search.index', payload: { all: false } }], now: Date.now() }); // takes any notice heard before
    const answer = await writer.run({ steps: [{ kind: 'labels.delete', payload: { workspaceId: n.workspaceId, labelId: label.id } }], now: Date.now() });
    // Other scopes may be said with it (the sending state that the sends before changed, heard late).
    assert.ok(answer.settingsChanged?.includes(''), JSON.stringify(answer.settingsChanged));
    const after = await n.send(n.one, { subject: 'Another receipt' });
    assert.is(after.status, 200, JSON.stringify(after.body));
    assert.equal((await request(`${n.one.api}/emails/${after.body.id}`, { key: n.key })).body.labels, []);
  } finally {
    await n.close();
  }
});

/**
 * Rates judged from the second recipient on, so the sending state is kept from the third send; and deliveries that
 * wait (nothing listens on the MX's port) rather than bounce, so the bounces are only those the test counts.
 */
async function judgedEarly(): Promise<Record<string, string>> {
  return { MAILWRIGHT_REPUTATION_MIN_SENT: '2', MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true', MAILWRIGHT_MTA_PORT: String(await freePort()) };
}

/** The key under which `t` keeps the workspace's sending state today (account/reputation.ts). */
function sendingKey(t: TestApp, workspaceId: string): string {
  const c = t.app.config;
  const firstDay = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
  return `sending ${workspaceId} ${firstDay} ${c.reputationMinSent} ${c.reputationBouncePause} ${c.reputationComplaintPause}`;
}

ownStores(test)('the sending state: kept once there is enough mail to judge, forgotten when another node counts bounces', async () => {
  const n = await twoNodes(await judgedEarly());
  try {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const sent = await n.send(n.one);
      assert.is(sent.status, 200, JSON.stringify(sent.body));
      ids.push(sent.body.id);
      if (i === 0) assert.is(n.one.app.cache!.get(sendingKey(n.one, n.workspaceId)), undefined, 'not kept below reputation_min_sent');
    }
    assert.ok(n.one.app.cache!.get(sendingKey(n.one, n.workspaceId)), 'kept with two recipients sent');
    // Three bounces counted through the other node, as bounce handling counts them: 100 % of what was sent.
    await n.two.app.store.write(function* () {
      for (const id of ids) yield* addEvent({ now: Date.now }, { workspaceId: n.workspaceId, emailId: id, type: 'bounced', recipient: 'someone@dest.test', counted: true });
    });
    await eventually(async () => (await n.send(n.one)).body.error?.code === 'sending_paused', 2000, 'the node that kept the state pausing the workspace');
  } finally {
    await n.close();
  }
});

ownStores(test)('the sending state: forgotten when another node pauses the workspace', async () => {
  const n = await twoNodes(await judgedEarly());
  try {
    for (let i = 0; i < 3; i++) assert.is((await n.send(n.one)).status, 200);
    assert.ok(n.one.app.cache!.get(sendingKey(n.one, n.workspaceId)), 'kept');
    // A node whose thresholds are stricter judges the rates past them and writes the pause.
    await n.two.app.store.write(() => change('UPDATE workspaces SET sending_paused_at = ?, sending_pause_reason = ? WHERE id = ?', Date.now(), 'stricter thresholds', n.workspaceId));
    await eventually(async () => (await n.send(n.one)).body.error?.code === 'sending_paused', 2000, 'the node that kept the state refusing to send');
  } finally {
    await n.close();
  }
});

test.run();
