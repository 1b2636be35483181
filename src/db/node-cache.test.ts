// What a node keeps of keys, domains, plans and rules on PostgreSQL (node-cache.ts): never a value read across a
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
import { login, ownStores, request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { freshDatabase } from '../testkit/postgres.ts';
import { eventually, startDestinationDns } from '../testkit/outbound.ts';
import type { DnsServer } from '../testkit/dns-server.ts';

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

ownStores(test)('a change committed on a connection is heard before its COMMIT is answered', async () => {
  const database = await freshDatabase();
  let heard = 0;
  const pool = openPool(database.url, { notices: { channel: SETTINGS_CHANNEL, heard: () => heard++ } });
  try {
    await migratePostgres(pool);
    const commit = new PostgresCommit(pool);
    await commit.run(() => change("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_1', 'one', 0)"));
    assert.is(heard, 0, 'a new workspace changes nothing kept');
    // The node forgets what it kept before it acknowledges the change, whatever its listener hears and when.
    await commit.run(() => change("DELETE FROM workspaces WHERE id = 'ws_1'"));
    assert.is(heard, 1);
  } finally {
    await pool.end();
    await database.drop();
  }
});

let dns: DnsServer;
test.before(async () => {
  dns = await startDestinationDns();
});
test.after(() => dns.close());

/** Two nodes on one fresh PostgreSQL database, a workspace with a key and a verified domain `cache.example`. */
async function twoNodes() {
  const database = await freshDatabase();
  const env = { MAILWRIGHT_DATABASE_URL: database.url, MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_RATE_LIMIT: '0' };
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
    assert.is(answer.settingsChanged, true);
    const after = await n.send(n.one, { subject: 'Another receipt' });
    assert.is(after.status, 200, JSON.stringify(after.body));
    assert.equal((await request(`${n.one.api}/emails/${after.body.id}`, { key: n.key })).body.labels, []);
  } finally {
    await n.close();
  }
});

test.run();
