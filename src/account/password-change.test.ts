// Changing a passphrase over real HTTP and with the CLI as a process: POST /auth/password checks the current
// one as a login does (a wrong one is counted by the login throttle), holds the new one to the box's rule, signs
// out every other session and renews this one; `mailwright user add` and `user passwd` keep the same rule.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request as httpRequest } from 'node:http';
import { login, request, runCli, seedWorkspace, sessionCookie, startTestApp, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { findUserByEmail } from './users.ts';
import { verifyPassword } from './passwords.ts';
import { UNAUTHORIZED_MESSAGE } from '../errors.ts';
import { value } from '../db/query.ts';

let t: TestApp;
let owner: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  owner = await seedWorkspace(t);
});
test.after(() => t.stop());

const NEW = 'velvet orchard quietly 1987';

/** POST /auth/password from a given loopback address (all of 127.0.0.0/8 is this machine). */
function change(cookie: string, body: unknown, ip = '127.0.0.1', headers: Record<string, string> = {}): Promise<{ status: number; body: any; cookie: string | null }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${t.api}/auth/password`,
      { method: 'POST', localAddress: ip, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), cookie, ...headers } },
      (res) => {
        let answer = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (answer += d));
        res.on('end', () => {
          const set = (res.headers['set-cookie'] ?? []).find((c) => c.startsWith('service_session_v2='));
          resolve({ status: res.statusCode!, body: answer ? JSON.parse(answer) : null, cookie: set ? set.split(';')[0] : null });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const profile = (cookie: string) => request(`${t.api}/profile`, { cookie });
const loginStatus = async (email: string, password: string) => (await request(`${t.api}/auth/login`, { body: { email, password } })).status;
const failuresOf = async (ip: string) => (await t.app.store.read(value<number>("SELECT count(*) FROM auth_failures WHERE scope = 'login' AND ip = ?", ip)))!;
const userByEmail = (email: string) => t.app.store.read(findUserByEmail(email));

test('a key is refused (session only), and a cross-site post is refused (CSRF)', async () => {
  const keyed = await request(`${t.api}/auth/password`, { key: owner.key, body: { current_password: TEST_PASSWORD, new_password: NEW } });
  assert.equal([keyed.status, keyed.body.error.code], [403, 'session_required']);
  const cookie = await login(t, owner.email);
  const foreign = await change(cookie, { current_password: TEST_PASSWORD, new_password: NEW }, '127.0.0.1', { origin: 'https://evil.example' });
  assert.equal([foreign.status, foreign.body.error.code], [403, 'invalid_origin']);
  assert.ok(await verifyPassword(TEST_PASSWORD, (await userByEmail(owner.email))!.passwordHash), 'nothing changed');
});

test('a weak new passphrase, the same one again or a missing field is 400 naming new_password; nothing changes', async () => {
  const cookie = await login(t, owner.email);
  const cases: Array<[unknown, string, RegExp]> = [
    [{ current_password: TEST_PASSWORD, new_password: 'abcdefghij' }, 'new_password', /^new_password: must be at least 12 characters/],
    [{ current_password: TEST_PASSWORD, new_password: 'abcdefghijklmnop' }, 'new_password', /^new_password: is a simple sequence$/],
    [{ current_password: TEST_PASSWORD, new_password: 'aaaaaaaaaaaaaaaa' }, 'new_password', /^new_password: repeats too few different characters$/],
    [{ current_password: TEST_PASSWORD, new_password: 'Password2024' }, 'new_password', /^new_password: is a common password with little added$/],
    [{ current_password: TEST_PASSWORD, new_password: `${owner.email} and more` }, 'new_password', /^new_password: must not contain your e-mail address$/],
    [{ current_password: TEST_PASSWORD, new_password: TEST_PASSWORD }, 'new_password', /^new_password: must differ from the current passphrase$/],
    [{ current_password: TEST_PASSWORD }, 'new_password', /^new_password: /],
    [{ new_password: NEW }, 'current_password', /^current_password: /],
  ];
  for (const [body, path, message] of cases) {
    const res = await change(cookie, body);
    assert.equal([res.status, res.body.error.code, res.body.error.errors[0].path], [400, 'validation_error', path], JSON.stringify(body));
    assert.match(res.body.error.message, message);
  }
  assert.is((await profile(cookie)).status, 200, 'the session still works');
  assert.ok(await verifyPassword(TEST_PASSWORD, (await userByEmail(owner.email))!.passwordHash), 'the passphrase is unchanged');
});

test('a wrong current passphrase is 401 invalid_credentials and counted as a failed login of that address', async () => {
  const cookie = await login(t, owner.email);
  const ip = '127.0.0.5';
  const before = await failuresOf(ip);
  const res = await change(cookie, { current_password: 'not the passphrase', new_password: NEW }, ip);
  assert.equal(res.body, { error: { message: 'The current passphrase is not correct', status: 401, code: 'invalid_credentials' } });
  assert.is(res.cookie, null);
  assert.is(await failuresOf(ip), before + 1, 'counted like a failed login');
  assert.is((await profile(cookie)).status, 200, 'a mistyped passphrase does not end the session');
});

test('guessing the current passphrase from a session is throttled like logins: 429 after ten, even with the right one', async () => {
  const cookie = await login(t, owner.email);
  const ip = '127.0.0.6';
  let refused: Awaited<ReturnType<typeof change>> | null = null;
  for (let i = 0; i < 12 && !refused; i++) {
    const res = await change(cookie, { current_password: `guess number ${i}`, new_password: NEW }, ip);
    if (res.status === 429) refused = res;
    else assert.is(res.status, 401);
  }
  assert.ok(refused, 'the address was throttled');
  assert.is(refused!.body.error.code, 'too_many_login_attempts');
  assert.is((await change(cookie, { current_password: TEST_PASSWORD, new_password: NEW }, ip)).status, 429, 'the right one waits out the block too');
  const loginFromThere = await new Promise<number>((resolve, reject) => {
    const body = JSON.stringify({ email: owner.email, password: TEST_PASSWORD });
    const req = httpRequest(`${t.api}/auth/login`, { method: 'POST', localAddress: ip, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (r) => {
      r.resume();
      resolve(r.statusCode!);
    });
    req.on('error', reject);
    req.end(body);
  });
  assert.is(loginFromThere, 429, 'one counter: the address cannot log in either');
  assert.ok(await verifyPassword(TEST_PASSWORD, (await userByEmail(owner.email))!.passwordHash), 'unchanged');
  assert.is((await runCli(['user', 'unlock', owner.email], t.env)).code, 0);
});

test('success: the new hash is stored, every other session ends, this one is renewed; the old passphrase no longer signs in', async () => {
  const others = [await login(t, owner.email), await login(t, owner.email)];
  const mine = await login(t, owner.email);
  const res = await change(mine, { current_password: TEST_PASSWORD, new_password: NEW });
  assert.is(res.status, 200);
  assert.equal(res.body.ok, true);
  // Every live session of the user but this one, the earlier tests' included.
  assert.ok(res.body.sessionsRevoked >= others.length, JSON.stringify(res.body));
  for (const cookie of others) {
    const gone = await profile(cookie);
    assert.equal([gone.status, gone.body.error.message], [401, UNAUTHORIZED_MESSAGE], 'another browser is signed out');
  }
  assert.ok(res.cookie && res.cookie !== mine, 'a fresh session cookie');
  assert.is((await profile(res.cookie!)).status, 200, 'this browser stays signed in with it');
  assert.is((await profile(mine)).status, 401, 'the old cookie of this browser no longer works');
  const sessions = await request(`${t.api}/sessions`, { cookie: res.cookie! });
  assert.equal([sessions.body.count, sessions.body.data[0].current], [1, true], 'only this browser is signed in');

  const stored = (await userByEmail(owner.email))!.passwordHash;
  assert.match(stored, /^scrypt\$/);
  assert.ok(await verifyPassword(NEW, stored));
  assert.is(await loginStatus(owner.email, TEST_PASSWORD), 401, 'the old passphrase fails');
  assert.is(await loginStatus(owner.email, NEW), 200, 'the new one signs in');
  assert.ok(t.logs.some((l) => l.includes('passphrase changed from the dashboard')));
  assert.not.ok(t.logs.some((l) => l.includes(NEW)), 'the passphrase is never logged');
});

test('CLI: user add refuses a weak passphrase with the rule\'s message; the dashboard\'s rule everywhere', async () => {
  for (const [weak, message] of [
    ['abcdefghij', /the passphrase must be at least 12 characters/],
    ['abcdefghijkl', /the passphrase is a simple sequence/],
    ['changeme12345', /the passphrase is a common password with little added/],
  ] as const) {
    const res = await runCli(['user', 'add', '--email', 'weak@default.test', '--password-stdin'], t.env, `${weak}\n`);
    assert.is(res.code, 1, weak);
    assert.match(res.stderr, message);
    assert.is(res.stdout, '');
  }
  assert.is(await userByEmail('weak@default.test'), null, 'no user was made');
  const ok = await runCli(['user', 'add', '--email', 'second@default.test', '--password-stdin'], t.env, 'lantern meadow 4 copper\n');
  assert.is(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^usr_[0-9A-Z]{26}\n$/);
});

test('CLI: user passwd sets a new passphrase beside the running server and signs out every session', async () => {
  const a = await login(t, owner.email, NEW);
  const b = await login(t, owner.email, NEW);
  const next = 'harbour pencil 73 drifting';
  const weak = await runCli(['user', 'passwd', owner.email, '--password-stdin'], t.env, 'short\n');
  assert.equal([weak.code, weak.stdout], [1, '']);
  assert.match(weak.stderr, /^mailwright: the passphrase must be at least 12 characters/);
  assert.is((await profile(a)).status, 200, 'a refused change signs no one out');

  const res = await runCli(['user', 'passwd', owner.email.toUpperCase(), '--password-stdin'], t.env, `${next}\n`);
  assert.is(res.code, 0, res.stderr);
  assert.match(res.stdout, new RegExp(`^set a new passphrase for ${owner.email} and signed out its [2-9] sessions\\n$`));
  for (const cookie of [a, b]) assert.is((await profile(cookie)).status, 401, 'the running server sees the sessions ended');
  assert.is(await loginStatus(owner.email, NEW), 401);
  const fresh = await request(`${t.api}/auth/login`, { body: { email: owner.email, password: next } });
  assert.is(fresh.status, 200, 'the new passphrase signs in');
  assert.is((await profile(sessionCookie(fresh.headers)!)).status, 200);
});

test('CLI: user passwd of an unknown user is exit 1; without --password-stdin or EMAIL a usage error', async () => {
  const unknown = await runCli(['user', 'passwd', 'nobody@nowhere.test', '--password-stdin'], t.env, 'a perfectly fine passphrase\n');
  assert.equal([unknown.code, unknown.stdout], [1, '']);
  assert.match(unknown.stderr, /^mailwright: no user nobody@nowhere\.test\n$/);
  const noStdin = await runCli(['user', 'passwd', owner.email], t.env);
  assert.is(noStdin.code, 2);
  assert.match(noStdin.stderr, /--password-stdin/);
  const noEmail = await runCli(['user', 'passwd', '--password-stdin'], t.env);
  assert.is(noEmail.code, 2);
  assert.match(noEmail.stderr, /exactly one EMAIL/);
  const help = await runCli(['user', 'passwd', '--help'], t.env);
  assert.is(help.code, 0);
  assert.match(help.stdout, /mailwright user passwd EMAIL --password-stdin/);
});

test.run();
