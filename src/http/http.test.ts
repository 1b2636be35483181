// The API core over real HTTP: the error envelope for every kind of bad request (never a 500, never a
// stack), security headers, the per-workspace rate limit and list pagination.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestApp, seedWorkspace, request, type TestApp } from '../testkit/app.ts';

let t: TestApp;
let owner: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  owner = await seedWorkspace(t);
});
test.after(() => t.stop());

const envelope = (res: { status: number; body: any }, status: number, code: string) => {
  assert.is(res.status, status, JSON.stringify(res.body));
  assert.is(res.body.error.status, status);
  assert.is(res.body.error.code, code);
  assert.type(res.body.error.message, 'string');
  assert.not.ok(/at .*\.(ts|js):\d+/.test(JSON.stringify(res.body)), 'no stack trace');
};

test('healthz answers 200 {ok: true} once up, without credentials', async () => {
  const res = await request(`${t.url}/healthz`);
  assert.equal([res.status, res.body], [200, { ok: true }]);
});

test('malformed JSON is 400 invalid_json; non-JSON bodies are 415; huge bodies 413', async () => {
  const login = `${t.api}/auth/login`;
  envelope(await request(login, { body: '{"email": "a@b.c", ' }), 400, 'invalid_json');
  envelope(await request(login, { body: '"just a string"' }), 400, 'invalid_json');
  envelope(await request(login, { body: 'email=a&password=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type');
  envelope(await request(login, { body: '{}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  envelope(await request(login, { body: JSON.stringify({ email: 'x'.repeat(2 * 1024 * 1024), password: 'y' }) }), 413, 'payload_too_large');
  // 4,000 levels: deep, yet within the 8 KiB a stranger's body may have (body.ts SMALL_BODY_BYTES).
  envelope(await request(login, { body: '['.repeat(4000) + ']'.repeat(4000) }), 400, 'invalid_json');
  // 10,000 levels to a route of a known caller, whose body the general parser reads.
  envelope(await request(`${t.api}/emails`, { key: owner.key, body: '['.repeat(10_000) + ']'.repeat(10_000) }), 400, 'invalid_json');
});

test('wrong types and missing fields are 400 validation_error naming the field', async () => {
  const cases: Array<[unknown, string]> = [
    [{ email: 42, password: 'x' }, 'email'],
    [{ email: 'a@b.c' }, 'password'],
    [{ email: 'a@b.c', password: ['x'] }, 'password'],
  ];
  for (const [body, field] of cases) {
    const res = await request(`${t.api}/auth/login`, { body });
    envelope(res, 400, 'validation_error');
    assert.ok(res.body.error.message.startsWith(`${field}:`), res.body.error.message);
    assert.equal(res.body.error.errors[0].path, field);
  }
  const proto = await request(`${t.api}/auth/login`, { body: '{"__proto__": {"admin": true}, "email": "a@b.c"}' });
  envelope(proto, 400, 'invalid_json');
  assert.is(({} as any).admin, undefined, 'no prototype pollution');
});

test('unknown routes are 404 and wrong methods 405, in the envelope', async () => {
  envelope(await request(`${t.api}/nope`, { key: owner.key }), 404, 'not_found');
  envelope(await request(`${t.url}/nope`), 404, 'not_found');
  envelope(await request(`${t.api}/keys`, { method: 'PUT', body: {}, key: owner.key }), 405, 'method_not_allowed');
  // Requests are routed on their first segment (server.ts bySegment): every router serving it answers.
  const wrong = await request(`${t.api}/emails`, { method: 'PUT', body: {}, key: owner.key });
  envelope(wrong, 405, 'method_not_allowed');
  assert.equal(wrong.headers.get('allow')?.split(/,\s*/).filter((m) => m === 'GET' || m === 'POST').sort(), ['GET', 'POST'], 'the list and the send, two routers');
  for (const path of ['', '/', '/keys/x/y', '/k%20eys', '/keys.json', '/..', '/%2e%2e/keys']) envelope(await request(`${t.api}${path}`, { key: owner.key }), 404, 'not_found');
  for (const path of ['/keys', '/KEYS', '/Keys/', '/emails', '/domains']) assert.is((await request(`${t.api}${path}`, { key: owner.key })).status, 200, path);
});

test('pagination: limit and offset are validated by name and hasMore tells the rest', async () => {
  for (const q of ['limit=0', 'limit=101', 'limit=abc', 'offset=-1', 'limit=1.5']) {
    const res = await request(`${t.api}/keys?${q}`, { key: owner.key });
    envelope(res, 400, 'validation_error');
    assert.ok(res.body.error.message.startsWith(q.split('=')[0] + ':'), res.body.error.message);
  }
  const cookie = (await request(`${t.api}/auth/login`, { body: { email: owner.email, password: 'correct horse battery staple' } })).headers.getSetCookie()[0].split(';')[0];
  for (let i = 0; i < 3; i++) await request(`${t.api}/keys`, { body: { name: `k${i}` }, cookie, headers: { origin: t.url } });
  const all = (await request(`${t.api}/keys`, { key: owner.key })).body;
  assert.is(all.count, 4);
  assert.is(all.hasMore, false);
  const first = (await request(`${t.api}/keys?limit=3`, { key: owner.key })).body;
  assert.equal([first.count, first.hasMore], [3, true]);
  const rest = (await request(`${t.api}/keys?limit=3&offset=3`, { key: owner.key })).body;
  assert.equal([rest.count, rest.hasMore], [1, false]);
  assert.equal([...first.data, ...rest.data].map((k: any) => k.id), all.data.map((k: any) => k.id));
  assert.equal(all.data.map((k: any) => k.name), ['k2', 'k1', 'k0', 'seed key'], 'newest first');
});

test('security headers on every response, success or error', async () => {
  for (const res of [await request(`${t.url}/healthz`), await request(`${t.api}/keys`), await request(`${t.api}/keys`, { key: owner.key })]) {
    assert.is(res.headers.get('x-content-type-options'), 'nosniff');
    assert.is(res.headers.get('x-frame-options'), 'DENY');
    assert.is(res.headers.get('referrer-policy'), 'no-referrer');
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.is(res.headers.get('cache-control'), 'no-store');
    assert.ok(res.headers.get('x-request-id'));
  }
});

test('rate limit: burst of twice the rate, then 429 with retry-after; headers on every response; per workspace', async () => {
  const limited = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '5' } });
  try {
    const w1 = await seedWorkspace(limited);
    const w2 = await seedWorkspace(limited, { workspace: 'other' });
    const responses = [];
    for (let i = 0; i < 12; i++) responses.push(await request(`${limited.api}/keys`, { key: w1.key }));
    const statuses = responses.map((r) => r.status);
    assert.ok(statuses.slice(0, 10).every((s) => s === 200), `burst of 10 allowed: ${statuses}`);
    assert.is(statuses[11], 429);
    const refused = responses[11];
    envelope(refused, 429, 'rate_limit_exceeded');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    for (const r of responses) {
      assert.is(r.headers.get('ratelimit-limit'), '5');
      assert.ok(r.headers.get('ratelimit-remaining') !== null && r.headers.get('ratelimit-reset') !== null);
    }
    assert.is(responses[0].headers.get('ratelimit-remaining'), '9');
    assert.is((await request(`${limited.api}/keys`, { key: w2.key })).status, 200, 'another workspace has its own bucket');
  } finally {
    await limited.stop();
  }
});

test.run();
