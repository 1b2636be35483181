// Credentials over real HTTP against the real app: every failure is the same 401, keys and sessions reach
// what they may and nothing else, and no secret is kept or logged in the clear.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApp, seedWorkspace, login, request, TEST_PASSWORD, TEST_STORE, type TestApp } from '../testkit/app.ts';
import { all, column } from '../db/query.ts';
import { UNAUTHORIZED_MESSAGE } from '../errors.ts';

let t: TestApp;
let a: Awaited<ReturnType<typeof seedWorkspace>>;
let b: Awaited<ReturnType<typeof seedWorkspace>>;
let cookieA: string;
let cookieB: string;

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  a = await seedWorkspace(t);
  b = await seedWorkspace(t, { workspace: 'acme' });
  cookieA = await login(t, a.email);
  cookieB = await login(t, b.email);
});
test.after(() => t.stop());

const origin = () => ({ origin: t.url });

const is401 = (res: { status: number; body: any; headers: Headers }, label: string) => {
  assert.is(res.status, 401, label);
  assert.equal(res.body, { error: { message: UNAUTHORIZED_MESSAGE, status: 401, code: 'unauthorized' } }, label);
};

test('the exact 401 for every missing, malformed or unknown credential', async () => {
  const keys = `${t.api}/keys`;
  is401(await request(keys), 'no credential');
  is401(await request(keys, { headers: { authorization: 'Bearer' } }), 'Bearer without a value');
  is401(await request(keys, { headers: { authorization: 'Bearer ' } }), 'Bearer and a space');
  is401(await request(keys, { headers: { authorization: `Basic ${Buffer.from('x:' + a.key).toString('base64')}` } }), 'Basic scheme');
  is401(await request(keys, { headers: { authorization: a.key } }), 'key without a scheme');
  is401(await request(keys, { key: 'sk_live_0123456789abcdef0123456789abcdef' }), 'wrong prefix');
  is401(await request(keys, { key: 're_' + 'A'.repeat(32) }), 'unknown key');
  is401(await request(keys, { key: a.key + 'x' }), 'key with a byte added');
  is401(await request(keys, { key: 're_' + 'x'.repeat(6000) }), 'oversized key');
  is401(await request(keys, { cookie: 'service_session_v2=' + 'A'.repeat(43) }), 'unknown session');
  is401(await request(keys, { cookie: 'service_session_v2=not-a-token' }), 'malformed session');
});

test('a key in the query string is not accepted', async () => {
  for (const name of ['key', 'api_key', 'access_token', 'token']) is401(await request(`${t.api}/keys?${name}=${a.key}`), name);
});

test('two Authorization headers are refused even if one is valid', async () => {
  const res = await new Promise<number>((resolve, reject) => {
    import('node:http').then(({ request: raw }) => {
      const url = new URL(`${t.api}/keys`);
      const req = raw({ host: url.hostname, port: url.port, path: url.pathname, headers: [['host', url.host], ['authorization', `Bearer ${a.key}`], ['authorization', 'Bearer re_' + 'B'.repeat(32)]] as any }, (r) => {
        r.resume();
        resolve(r.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
  });
  assert.is(res, 401);
});

test('a revoked key stops working at once', async () => {
  const created = await request(`${t.api}/keys`, { body: { name: 'short-lived' }, cookie: cookieA, headers: origin() });
  assert.is(created.status, 201);
  assert.is((await request(`${t.api}/keys`, { key: created.body.key })).status, 200);
  const revoked = await request(`${t.api}/keys/${created.body.id}`, { method: 'DELETE', cookie: cookieA, headers: origin() });
  assert.equal([revoked.status, revoked.body], [200, { ok: true }]);
  is401(await request(`${t.api}/keys`, { key: created.body.key }), 'revoked key');
  const again = await request(`${t.api}/keys/${created.body.id}`, { method: 'DELETE', cookie: cookieA, headers: origin() });
  assert.is(again.status, 404);
});

test('a bearer key gets 403 session_required on session-only operations', async () => {
  const cases = [
    await request(`${t.api}/keys`, { body: { name: 'x' }, key: a.key }),
    await request(`${t.api}/keys/key_01ARZ3NDEKTSV4RRFFQ69G5FAV`, { method: 'DELETE', key: a.key }),
    await request(`${t.api}/profile`, { key: a.key }),
  ];
  for (const res of cases) {
    assert.is(res.status, 403);
    assert.is(res.body.error.code, 'session_required');
    assert.is(res.body.error.status, 403);
  }
});

test('with a session: create a key (201, full key once), list without secrets, profile', async () => {
  const created = await request(`${t.api}/keys`, { body: { name: 'Production' }, cookie: cookieA, headers: origin() });
  assert.is(created.status, 201);
  assert.match(created.body.key, /^re_[A-Za-z0-9_-]{32}$/);
  assert.match(created.body.id, /^key_[0-9A-Z]{26}$/);
  assert.is(created.body.name, 'Production');
  assert.ok(created.body.key.startsWith(created.body.prefix) && created.body.prefix.length < created.body.key.length);

  for (const auth of [{ key: a.key }, { cookie: cookieA }]) {
    const list = await request(`${t.api}/keys`, auth);
    assert.is(list.status, 200);
    assert.is(list.body.count, list.body.data.length);
    const row = list.body.data.find((k: any) => k.id === created.body.id);
    assert.equal(Object.keys(row).sort(), ['createdAt', 'domainId', 'id', 'inboxIds', 'lastUsedAt', 'name', 'permission', 'prefix']);
    assert.equal([row.permission, row.domainId, row.inboxIds], ['full_access', null, null], 'a key made without a permission has full access');
    assert.not.ok(JSON.stringify(list.body).includes(created.body.key), 'the list never shows a full key');
    assert.not.ok(JSON.stringify(list.body).includes(a.key), 'the list never shows a full key');
  }

  const profile = await request(`${t.api}/profile`, { cookie: cookieA });
  assert.is(profile.status, 200);
  assert.equal(profile.body.user.email, a.email);
  assert.equal(profile.body.workspace, { id: a.workspace.id, name: 'default', createdAt: profile.body.workspace.createdAt });
});

test('lastUsedAt is recorded when a key is used', async () => {
  const created = await request(`${t.api}/keys`, { body: { name: 'tracked' }, cookie: cookieA, headers: origin() });
  const before = (await request(`${t.api}/keys`, { cookie: cookieA })).body.data.find((k: any) => k.id === created.body.id);
  assert.is(before.lastUsedAt, null);
  await request(`${t.api}/keys`, { key: created.body.key });
  const after = (await request(`${t.api}/keys`, { cookie: cookieA })).body.data.find((k: any) => k.id === created.body.id);
  assert.match(after.lastUsedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('workspaces are isolated: B cannot see or delete A keys', async () => {
  const aKeys = (await request(`${t.api}/keys`, { key: a.key })).body.data.map((k: any) => k.id);
  const bKeys = (await request(`${t.api}/keys`, { key: b.key })).body.data.map((k: any) => k.id);
  assert.ok(aKeys.length > 0 && bKeys.length > 0);
  assert.not.ok(bKeys.some((id: string) => aKeys.includes(id)), 'B lists none of A keys');
  const del = await request(`${t.api}/keys/${aKeys[0]}`, { method: 'DELETE', cookie: cookieB, headers: origin() });
  assert.is(del.status, 404);
  assert.is(del.body.error.code, 'not_found');
  assert.ok((await request(`${t.api}/keys`, { key: a.key })).body.data.some((k: any) => k.id === aKeys[0]), 'A key survives');
  assert.is((await request(`${t.api}/profile`, { cookie: cookieB })).body.workspace.name, 'acme');
});

test('a cookie-authenticated write from a foreign Origin is refused and changes nothing', async () => {
  const count = async () => (await request(`${t.api}/keys`, { cookie: cookieA })).body.count;
  const before = await count();
  const refused: Array<Record<string, string>> = [
    { origin: 'https://evil.example' },
    { origin: 'null' },
    { 'sec-fetch-site': 'cross-site' },
    { 'sec-fetch-site': 'same-site', origin: t.url },
    // Sec-Fetch-Site decides when present: a same-origin Origin does not outvote it.
    { 'sec-fetch-site': 'cross-site', origin: t.url },
  ];
  for (const headers of refused) {
    const res = await request(`${t.api}/keys`, { body: { name: 'csrf' }, cookie: cookieA, headers });
    assert.is(res.status, 403, JSON.stringify(headers));
    assert.is(res.body.error.code, 'invalid_origin');
  }
  assert.is(await count(), before);
  const ok = await request(`${t.api}/keys`, { body: { name: 'same-origin' }, cookie: cookieA, headers: { origin: t.url } });
  assert.is(ok.status, 201);
  const viaPublicUrl = await request(`${t.api}/keys`, { body: { name: 'public-url' }, cookie: cookieA, headers: { origin: 'http://localhost:8080' } });
  assert.is(viaPublicUrl.status, 201, 'the configured public URL is our origin too');
  const fetchMetadata = await request(`${t.api}/keys`, { body: { name: 'sec-fetch' }, cookie: cookieA, headers: { 'sec-fetch-site': 'same-origin' } });
  assert.is(fetchMetadata.status, 201, 'a browser saying same-origin is our page');
  // DESIGN.md: neither header means no browser (curl with the cookie); Referer alone is no browser's signal.
  for (const headers of [{}, { referer: 'https://evil.example/page' }] as Array<Record<string, string>>) {
    const res = await request(`${t.api}/keys`, { body: { name: 'not-a-browser' }, cookie: cookieA, headers });
    assert.is(res.status, 201, JSON.stringify(headers));
  }
  // A bearer key is not a browser credential: no Origin rule applies.
  assert.is((await request(`${t.api}/keys`, { key: a.key, headers: { origin: 'https://evil.example' } })).status, 200);
});

test('the full key, passwords and session tokens appear nowhere in the data directory or the logs', async () => {
  const created = await request(`${t.api}/keys`, { body: { name: 'secret-check' }, cookie: cookieA, headers: origin() });
  const secret = created.body.key as string;
  await request(`${t.api}/keys`, { key: secret });
  const files = (dir: string): string[] => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));
  const paths = files(t.dataDir);
  // On SQLite the database is in the data directory, its WAL too; on PostgreSQL its rows are searched instead.
  if (TEST_STORE === 'sqlite') assert.ok(paths.some((p) => p.endsWith('mailwright.db-wal')), 'the WAL is among the files searched');
  else for (const needle of [secret.slice(3), TEST_PASSWORD, cookieA.split('=')[1]!]) assert.is(await tableHolding(needle), null, 'a table holds a secret');
  for (const path of paths) {
    const bytes = readFileSync(path);
    assert.is(bytes.indexOf(secret), -1, `${path} contains the key`);
    assert.is(bytes.indexOf(secret.slice(3)), -1, `${path} contains the key body`);
    assert.is(bytes.indexOf(TEST_PASSWORD), -1, `${path} contains a password`);
    assert.is(bytes.indexOf(cookieA.split('=')[1]), -1, `${path} contains a session token`);
  }
  const logs = t.logs.join('\n');
  assert.not.ok(logs.includes(secret.slice(3)), 'logs contain the key');
  assert.not.ok(logs.includes(cookieA.split('=')[1]), 'logs contain a session token');
});

test.run();

/** The first PostgreSQL table with a row holding `needle` in any column (text or bytes), or null. */
async function tableHolding(needle: string): Promise<string | null> {
  const tables = await t.app.store.read(column<string>("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"));
  for (const table of tables) {
    const rows = await t.app.store.read(all<Record<string, unknown>>(`SELECT * FROM "${table}"`));
    const holds = (v: unknown) => (Buffer.isBuffer(v) ? v.indexOf(needle) >= 0 : v != null && String(v).includes(needle));
    if (rows.some((row) => Object.values(row).some(holds))) return table;
  }
  return null;
}
