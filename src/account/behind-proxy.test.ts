// Catalogue AUTH-14 end to end: the box behind a reverse proxy on the same host (testkit/reverse-proxy.ts, as
// nginx's $proxy_add_x_forwarded_for does it). With trusted_proxies naming it, each visitor is judged by its
// own address: guesses at made-up accounts lock out the guesser, never the owner, and a header a visitor
// writes itself changes nothing. Without it every visitor is the proxy, and `mailwright user unlock` is what
// lets the owner back in.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request as httpRequest } from 'node:http';
import { runCli, seedWorkspace, startTestApp, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { startReverseProxy, type ReverseProxy } from '../testkit/reverse-proxy.ts';

const apps: TestApp[] = [];
const proxies: ReverseProxy[] = [];
test.after(async () => {
  for (const p of proxies) await p.close();
  for (const a of apps) await a.stop();
});

async function boxBehindProxy(env: Record<string, string>, header?: 'forwarded') {
  const t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0', ...env } });
  apps.push(t);
  const owner = await seedWorkspace(t);
  const proxy = await startReverseProxy(t.url, { header });
  proxies.push(proxy);
  return { t, owner, proxy };
}

/** POST /auth/login to `base` from a given loopback address (all of 127.0.0.0/8 is this machine). */
function loginFrom(base: string, ip: string, email: string, password: string, headers: Record<string, string> = {}): Promise<number> {
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/api/v1/auth/login`, { method: 'POST', localAddress: ip, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Twelve wrong passwords for made-up accounts from `ip`, all at once: attempts in flight count, so those past
 * the address's ten are refused at once and the rest wait out their slowing side by side. The statuses, sorted.
 */
async function guessUntilRefused(base: string, ip: string, headers: Record<string, string> = {}): Promise<number[]> {
  const guesses = Array.from({ length: 12 }, (_, i) => loginFrom(base, ip, `made-up-${i}@nowhere.test`, `guess number ${i}`, headers));
  return (await Promise.all(guesses)).sort();
}

test('trusted_proxies set: guesses at made-up accounts lock out the guesser, and the owner still signs in through the proxy', async () => {
  const { owner, proxy } = await boxBehindProxy({ MAILWRIGHT_TRUSTED_PROXIES: '127.0.0.1' });
  const statuses = await guessUntilRefused(proxy.url, '127.0.0.66');
  assert.is(statuses.at(-1), 429, `the guesser is refused: ${statuses}`);
  assert.ok(statuses.every((s) => s === 401 || s === 429), String(statuses));
  assert.is(await loginFrom(proxy.url, '127.0.0.66', owner.email, TEST_PASSWORD), 429, 'the guesser stays refused');
  assert.is(await loginFrom(proxy.url, '127.0.0.77', owner.email, TEST_PASSWORD), 200, 'the owner, from another address behind the same proxy, signs in');
  // A visitor that writes X-Forwarded-For itself: the proxy appends the real address, which is what counts.
  assert.is(await loginFrom(proxy.url, '127.0.0.66', owner.email, TEST_PASSWORD, { 'x-forwarded-for': '127.0.0.77' }), 429, 'a forged header is ignored');
});

test('the same with a proxy that writes Forwarded (RFC 7239)', async () => {
  const { owner, proxy } = await boxBehindProxy({ MAILWRIGHT_TRUSTED_PROXIES: '127.0.0.0/30' }, 'forwarded');
  assert.is((await guessUntilRefused(proxy.url, '127.0.0.68')).at(-1), 429);
  assert.is(await loginFrom(proxy.url, '127.0.0.78', owner.email, TEST_PASSWORD), 200);
});

test('a peer that is not a trusted proxy is judged by its own address, whatever X-Forwarded-For says', async () => {
  const { t, owner } = await boxBehindProxy({ MAILWRIGHT_TRUSTED_PROXIES: '127.0.0.1' });
  const statuses = await Promise.all(Array.from({ length: 12 }, (_, i) => loginFrom(t.url, '127.0.0.90', `made-up-${i}@nowhere.test`, 'a wrong guess here', { 'x-forwarded-for': `127.0.9.${i + 1}` })));
  assert.ok(statuses.includes(429), `a new forged address each time does not make a new client: ${statuses}`);
  assert.is(await loginFrom(t.url, '127.0.0.91', owner.email, TEST_PASSWORD, { 'x-forwarded-for': '127.0.0.90' }), 200);
});

test('the account lock refuses only addresses that failed against that account', async () => {
  const { owner, proxy } = await boxBehindProxy({ MAILWRIGHT_TRUSTED_PROXIES: '127.0.0.1' });
  // A few guesses at other accounts from .120: under the per-address limit.
  for (let i = 0; i < 3; i++) assert.is(await loginFrom(proxy.url, '127.0.0.120', `someone-${i}@nowhere.test`, 'a wrong guess here'), 401);
  // 30 failures against the owner's account, from addresses with fewer than ten each.
  let locked = false;
  for (let host = 130; host < 140 && !locked; host++) {
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => loginFrom(proxy.url, `127.0.0.${host}`, owner.email, `spread ${i}`)));
    locked = results.includes(429);
  }
  assert.ok(locked, 'the account locked for the addresses that failed against it');
  assert.is(await loginFrom(proxy.url, '127.0.0.120', owner.email, TEST_PASSWORD), 200, 'an address whose failures were at other accounts signs in');
});

test('no trusted_proxies: every visitor is the proxy; guesses lock the owner out until `user unlock`', async () => {
  const { t, owner, proxy } = await boxBehindProxy({});
  assert.is((await guessUntilRefused(proxy.url, '127.0.0.66')).at(-1), 429);
  assert.is(await loginFrom(proxy.url, '127.0.0.77', owner.email, TEST_PASSWORD), 429, 'the owner is the proxy too, and refused');
  const unlocked = await runCli(['user', 'unlock', owner.email], t.env);
  assert.is(unlocked.code, 0, unlocked.stderr);
  assert.match(unlocked.stdout, /cleared \d+ failed login attempts/);
  assert.is(await loginFrom(proxy.url, '127.0.0.77', owner.email, TEST_PASSWORD), 200, 'unlock cleared what stopped the owner, though no failure was against the account');
});

test.run();
