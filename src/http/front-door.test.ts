// What a stranger meets before any route (catalogue API-19, API-20, DESIGN.md section 2): a credential is
// checked from the headers before a byte of the body is read, unknown paths are 401 to strangers, unusual
// methods are 501, and a Host the box does not answer to is 421.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect } from 'node:net';
import { request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { UNAUTHORIZED_MESSAGE } from '../errors.ts';

let t: TestApp;
let owner: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0', MAILWRIGHT_PUBLIC_URL: 'https://mail.example.test', MAILWRIGHT_HTTP_ALLOWED_HOSTS: 'mx.example.test' } });
  owner = await seedWorkspace(t);
});
test.after(() => t.stop());

/** Sends only a request head over a raw socket and reads what comes back until the server closes or `ms` pass. */
function headOnly(head: string, ms = 5000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(t.app.config.httpPort || Number(new URL(t.url).port), '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, ms);
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.on('error', reject);
    socket.write(head);
  });
}

const head = (path: string, headers: Record<string, string>) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

test('a 20 MB body announced without a key gets 401 before it is sent, and the connection closes', async () => {
  const { text, closed } = await headOnly(head('/api/v1/emails', { 'content-type': 'application/json', 'content-length': '20000000' }));
  assert.match(text, /^HTTP\/1\.1 401 /);
  assert.ok(text.includes(UNAUTHORIZED_MESSAGE), text);
  assert.match(text, /\r\nconnection: close\r\n/i);
  assert.ok(closed, 'the server closed instead of waiting for 20 MB');
});

test('Expect: 100-continue without a key is 401 with no 100 Continue; with a key the body is invited', async () => {
  const stranger = await headOnly(head('/api/v1/emails/batch', { 'content-type': 'application/json', 'content-length': '50000000', expect: '100-continue' }));
  assert.match(stranger.text, /^HTTP\/1\.1 401 /, 'no 100 Continue first');
  const known = await headOnly(head('/api/v1/emails', { 'content-type': 'application/json', 'content-length': '2', expect: '100-continue', authorization: `Bearer ${owner.key}` }), 1500);
  assert.match(known.text, /^HTTP\/1\.1 100 Continue\r\n/);
});

test('eight unauthenticated 20 MB uploads at once do not stall /healthz', async () => {
  const uploads = Array.from({ length: 8 }, () => headOnly(head('/api/v1/emails', { 'content-type': 'application/json', 'content-length': '20000000' })));
  const health = await request(`${t.url}/healthz`);
  assert.is(health.status, 200);
  for (const u of await Promise.all(uploads)) assert.match(u.text, /^HTTP\/1\.1 401 /);
});

test('authentication before routing: no credential is 401 on any API path; with one, unknown paths are 404', async () => {
  for (const [method, path] of [['GET', '/api/v1/nope'], ['POST', '/api/v1/keys'], ['PUT', '/api/v1/keys'], ['DELETE', '/api/v1/emails/em_x'], ['POST', '/api/v1/auth/logout']]) {
    const res = await request(`${t.url}${path}`, { method, body: method === 'GET' ? undefined : {} });
    assert.equal([res.status, res.body.error.message], [401, UNAUTHORIZED_MESSAGE], `${method} ${path}`);
  }
  const known = await request(`${t.api}/nope`, { key: owner.key });
  assert.equal([known.status, known.body.error.code], [404, 'not_found']);
  assert.is((await request(`${t.api}/auth/login`, { body: { email: owner.email, password: 'wrong password' } })).status, 401, 'login itself needs no credential');
});

test('unauthenticated requests are rate-limited per address before anything else', async () => {
  const limited = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '2' } });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await request(`${limited.api}/emails`, { body: { x: 1 } })).status);
    assert.equal(statuses.slice(0, 4), [401, 401, 401, 401], String(statuses));
    assert.ok(statuses.slice(4).includes(429), String(statuses));
  } finally {
    await limited.stop();
  }
});

test('PROPFIND, MKCOL, LOCK, COPY, PURGE are 501 in the envelope on any path, and no error is logged', async () => {
  const errorsBefore = t.logs.filter((l) => l.includes('"level":"error"')).length;
  for (const method of ['PROPFIND', 'MKCOL', 'LOCK', 'COPY', 'PURGE', 'UNLOCK', 'PROPPATCH']) {
    for (const path of ['/api/v1/emails', '/api/v1/nope', '/', '/healthz']) {
      const res = await fetch(`${t.url}${path}`, { method, headers: { authorization: `Bearer ${owner.key}` } });
      const body = (await res.json()) as { error: { status: number; code: string } };
      assert.equal([res.status, body.error.status, body.error.code], [501, 501, 'not_implemented'], `${method} ${path}`);
    }
  }
  assert.is(t.logs.filter((l) => l.includes('"level":"error"')).length, errorsBefore);
  const wrong = await request(`${t.api}/keys`, { method: 'PUT', body: {}, key: owner.key });
  assert.equal([wrong.status, wrong.body.error.code], [405, 'method_not_allowed']);
  assert.match(wrong.headers.get('allow') ?? '', /GET/);
});

test('a Host the box does not answer to is 421 (DNS rebinding); its own names and IP addresses are served', async () => {
  const port = new URL(t.url).port;
  const withHost = (host: string) => headOnly(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  for (const host of ['attacker.example', `attacker.example:${port}`, 'mail.example.test.attacker.example', 'localhost.attacker.example']) {
    const { text } = await withHost(host);
    assert.match(text, /^HTTP\/1\.1 421 /, host);
    assert.match(text, /"code":"misdirected_request"/);
  }
  for (const host of ['mail.example.test', 'MAIL.EXAMPLE.TEST.', 'mx.example.test', `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, '10.1.2.3']) {
    assert.match((await withHost(host)).text, /^HTTP\/1\.1 200 /, host);
  }
});

test.run();
