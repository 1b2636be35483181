// The dashboard session over real HTTP: cookie attributes, a fresh id at every login, logout and expiry
// revoke it, wrong passwords are refused alike and then throttled.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestApp, seedWorkspace, request, sessionCookie, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { UNAUTHORIZED_MESSAGE } from '../errors.ts';

const clock = { at: Date.now(), now() { return this.at; } };
let t: TestApp;
let owner: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  t = await startTestApp({ clock, env: { MAILWRIGHT_SESSION_TTL_HOURS: '2', MAILWRIGHT_RATE_LIMIT: '0' } });
  owner = await seedWorkspace(t);
});
test.after(() => t.stop());

const loginAs = (email: string, password: string, headers: Record<string, string> = {}) => request(`${t.api}/auth/login`, { body: { email, password }, headers });
const profile = (cookie: string) => request(`${t.api}/profile`, { cookie });

test('login sets an HttpOnly, SameSite=Lax session cookie with an expiry and answers who signed in', async () => {
  const res = await loginAs(owner.email.toUpperCase(), TEST_PASSWORD);
  assert.is(res.status, 200);
  assert.equal(res.body.user, { id: owner.user.id, email: owner.email });
  assert.equal(res.body.workspace, { id: owner.workspace.id, name: 'default' });
  assert.is(res.body.expiresAt, new Date(clock.at + 2 * 3600_000).toISOString());
  const set = res.headers.getSetCookie().find((c) => c.startsWith('service_session_v2='))!;
  assert.match(set, /^service_session_v2=[A-Za-z0-9_-]{43}; /);
  assert.match(set, /; HttpOnly/);
  assert.match(set, /; SameSite=Lax/);
  assert.match(set, /; Path=\//);
  assert.match(set, /; Max-Age=7200/);
  assert.not.match(set, /Secure/, 'no Secure flag while the public URL is http');
  assert.is((await profile(sessionCookie(res.headers)!)).status, 200);
});

test('each login gets a fresh session id and revokes the one the browser held', async () => {
  const first = sessionCookie((await loginAs(owner.email, TEST_PASSWORD)).headers)!;
  const second = sessionCookie((await loginAs(owner.email, TEST_PASSWORD, { cookie: first })).headers)!;
  assert.is.not(first, second);
  assert.is((await profile(second)).status, 200);
  assert.is((await profile(first)).status, 401, 'the session presented at login no longer works');
});

test('logout revokes the session at once and clears the cookie', async () => {
  const cookie = sessionCookie((await loginAs(owner.email, TEST_PASSWORD)).headers)!;
  const out = await request(`${t.api}/auth/logout`, { method: 'POST', cookie, headers: { origin: t.url } });
  assert.equal([out.status, out.body], [200, { ok: true }]);
  assert.match(out.headers.getSetCookie()[0], /^service_session_v2=; .*Max-Age=0/);
  const res = await profile(cookie);
  assert.is(res.status, 401);
  assert.is(res.body.error.message, UNAUTHORIZED_MESSAGE);
});

test('an expired session gets the exact 401', async () => {
  const cookie = sessionCookie((await loginAs(owner.email, TEST_PASSWORD)).headers)!;
  clock.at += 2 * 3600_000 - 1000;
  assert.is((await profile(cookie)).status, 200, 'still valid just before expiry');
  clock.at += 1000;
  const res = await profile(cookie);
  assert.equal([res.status, res.body.error.message], [401, UNAUTHORIZED_MESSAGE]);
});

test('wrong password and unknown address are refused alike; bad bodies are 400', async () => {
  for (const [email, password] of [[owner.email, 'wrong password!'], ['nobody@nowhere.test', TEST_PASSWORD]]) {
    const res = await loginAs(email, password, { 'x-test': 'alike' });
    assert.is(res.status, 401);
    assert.equal(res.body, { error: { message: 'Invalid email or password', status: 401, code: 'invalid_credentials' } });
    assert.is(sessionCookie(res.headers), null);
  }
  const missing = await request(`${t.api}/auth/login`, { body: { email: owner.email } });
  assert.equal([missing.status, missing.body.error.code], [400, 'validation_error']);
  assert.match(missing.body.error.message, /^password: /);
});

test('a login posted from a foreign page is refused (login CSRF)', async () => {
  const res = await loginAs(owner.email, TEST_PASSWORD, { origin: 'https://evil.example' });
  assert.is(res.status, 403);
  assert.is(sessionCookie(res.headers), null);
});

test('repeated failures from one address are slowed, then refused with 429 and retry-after', async () => {
  let refused: Awaited<ReturnType<typeof loginAs>> | null = null;
  for (let i = 0; i < 12 && !refused; i++) {
    const res = await loginAs(owner.email, `guess ${i}`);
    if (res.status === 429) refused = res;
    else assert.is(res.status, 401);
  }
  assert.ok(refused, 'the address was throttled');
  assert.is(refused!.body.error.code, 'too_many_login_attempts');
  assert.ok(Number(refused!.headers.get('retry-after')) > 0);
  const right = await loginAs(owner.email, TEST_PASSWORD);
  assert.is(right.status, 429, 'even the right password waits out the block');
  clock.at += 16 * 60_000;
  assert.is((await loginAs(owner.email, TEST_PASSWORD)).status, 200, 'the block ends with its window');
});

test('with an https public URL the cookie is Secure', async () => {
  const https = await startTestApp({ env: { MAILWRIGHT_PUBLIC_URL: 'https://mail.example.test' } });
  try {
    const o = await seedWorkspace(https);
    const res = await request(`${https.api}/auth/login`, { body: { email: o.email, password: TEST_PASSWORD } });
    assert.match(res.headers.getSetCookie()[0], /; Secure/);
    assert.match(res.headers.get('strict-transport-security') ?? '', /max-age=/);
  } finally {
    await https.stop();
  }
});

test.run();
