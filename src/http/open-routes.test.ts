// The routes a stranger may call, login and setup (catalogue API-21): their bodies are a few KB, refused
// from Content-Length or cut off at the cap, read only after the per-address checks and within a time bound,
// so 200 bodies of 1 MiB from one address leave /healthz and SMTP answering.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect } from 'node:net';
import { request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { SMALL_BODY_BYTES, SMALL_BODY_TIMEOUT_MS } from './body.ts';
import { run } from '../db/query.ts';

let t: TestApp;

// The default rate limit stays on: it is one of the per-address checks that come before a body is read.
test.before(async () => {
  t = await startTestApp();
});
test.after(() => t.stop());

interface RawAnswer {
  status: number | null;
  code: string | null;
  /** The server closed the connection (instead of waiting for the rest of the body). */
  closed: boolean;
}

/**
 * Writes a request head and then `body` (or nothing) over a raw socket from `ip`, and reads the answer until
 * the server closes or `ms` pass. Errors writing the rest of a refused body are expected and ignored.
 */
function rawPost(path: string, opts: { ip: string; headers: Record<string, string | number>; body?: Buffer | ((write: (b: Buffer) => void) => void); ms?: number }): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect({ port: Number(new URL(t.url).port), host: '127.0.0.1', localAddress: opts.ip });
    let text = '';
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1];
      resolve({ status: status ? Number(status) : null, code: /"code":"([a-z_]+)"/.exec(text)?.[1] ?? null, closed });
    };
    const timer = setTimeout(() => finish(false), opts.ms ?? 20_000);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('close', () => finish(true));
    socket.on('error', () => {});
    const head = Object.entries(opts.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${head}\r\n`);
    if (Buffer.isBuffer(opts.body)) socket.write(opts.body);
    else opts.body?.((b) => socket.writable && socket.write(b));
  });
}

/** A valid JSON login body of exactly `bytes` bytes. */
const loginBody = (bytes: number) => {
  const start = '{"email":"owner@default.test","password":"';
  return Buffer.from(`${start}${'x'.repeat(bytes - start.length - 2)}"}`);
};

const chunked = (body: Buffer) => (write: (b: Buffer) => void) => {
  for (let at = 0; at < body.length; at += 64 * 1024) {
    const piece = body.subarray(at, at + 64 * 1024);
    write(Buffer.from(`${piece.length.toString(16)}\r\n`));
    write(piece);
    write(Buffer.from('\r\n'));
  }
  write(Buffer.from('0\r\n\r\n'));
};

test('200 login and setup requests with 1 MiB bodies from one address at once: 413 or 429, never a 5xx; /healthz and SMTP keep answering', async () => {
  const mib = loginBody(1024 * 1024);
  let settled = false;
  const flood = Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      rawPost(i % 2 ? '/api/v1/auth/login' : '/api/v1/setup', {
        ip: '127.0.0.5',
        // One in four without Content-Length, so only counting the bytes as they come can stop it.
        headers: i % 4 === 3 ? { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } : { 'content-type': 'application/json', 'content-length': mib.length },
        body: i % 4 === 3 ? chunked(mib) : mib,
      }),
    ),
  ).finally(() => (settled = true));

  // While the flood is answered: /healthz within 3 s each time, and an SMTP greeting and EHLO within 5 s.
  const healthz: Array<number | string> = [];
  const checkHealth = (async () => {
    do {
      try {
        const res = await fetch(`${t.url}/healthz`, { signal: AbortSignal.timeout(3_000) });
        healthz.push(res.status);
        await res.body?.cancel();
      } catch (err) {
        healthz.push((err as Error).name);
      }
    } while (!settled);
  })();
  const smtp = await RawSmtp.open(t.smtpPort);
  try {
    assert.is((await smtp.read(5_000)).code, 220);
    assert.is((await smtp.command('EHLO client.example', 5_000)).code, 250);
  } finally {
    smtp.close();
  }
  const answers = await flood;
  await checkHealth;

  assert.ok(healthz.length > 0 && healthz.every((s) => s === 200), `healthz: ${healthz}`);
  const tally: Record<string, number> = {};
  for (const a of answers) tally[`${a.status} ${a.code}`] = (tally[`${a.status} ${a.code}`] ?? 0) + 1;
  assert.ok(
    answers.every((a) => (a.status === 413 && a.code === 'payload_too_large') || (a.status === 429 && a.code === 'rate_limit_exceeded')),
    `every request refused as too large or too many: ${JSON.stringify(tally)}`,
  );
  assert.ok(answers.every((a) => a.closed), 'each connection closed rather than the body drained');
});

test('a body over the cap is refused from Content-Length before it is sent; one within it is read', async () => {
  for (const path of ['/api/v1/auth/login', '/api/v1/setup']) {
    const over = await rawPost(path, { ip: '127.0.0.6', headers: { 'content-type': 'application/json', 'content-length': SMALL_BODY_BYTES + 1 } });
    assert.equal([over.status, over.code, over.closed], [413, 'payload_too_large', true], path);
  }
  // At the cap exactly: read and judged (a wrong login, counted against 127.0.0.7 only).
  const at = await rawPost('/api/v1/auth/login', { ip: '127.0.0.7', headers: { 'content-type': 'application/json', 'content-length': SMALL_BODY_BYTES, connection: 'close' }, body: loginBody(SMALL_BODY_BYTES) });
  assert.equal([at.status, at.code], [400, 'validation_error'], 'a password of 8 KiB is read, and refused as longer than any password');
});

test('a body that drips in is cut off with 408 after the time bound, and the connection closed', async () => {
  const body = loginBody(2000);
  let timer: NodeJS.Timeout | undefined;
  const answer = await rawPost('/api/v1/auth/login', {
    ip: '127.0.0.8',
    headers: { 'content-type': 'application/json', 'content-length': body.length },
    // One byte every 200 ms: the whole body would take 400 s.
    body: (write) => {
      let at = 0;
      timer = setInterval(() => (at < body.length ? write(body.subarray(at, ++at)) : clearInterval(timer)), 200);
    },
    ms: SMALL_BODY_TIMEOUT_MS + 15_000,
  });
  clearInterval(timer);
  assert.equal([answer.status, answer.code, answer.closed], [408, 'request_timeout', true]);
});

test('an address past its failure limit is refused 429 before its body is read', async () => {
  await seedWorkspace(t);
  // Ten failures of 127.0.0.9 within the window, as ten wrong passwords would leave them.
  await t.app.store.write(function* () {
    for (let i = 0; i < 10; i++) yield* run("INSERT INTO auth_failures (scope, ip, account, at) VALUES ('login', '127.0.0.9', ?, ?)", `made-up-${i}@nowhere.test`, t.app.clock.now());
  });
  // The head announces a body that never comes: the answer cannot have waited for it.
  const refused = await rawPost('/api/v1/auth/login', { ip: '127.0.0.9', headers: { 'content-type': 'application/json', 'content-length': 100 }, ms: 5_000 });
  assert.equal([refused.status, refused.code, refused.closed], [429, 'too_many_login_attempts', true]);
});

test('setup once the box has an owner: 403 from the headers alone, the body never read', async () => {
  assert.equal((await request(`${t.api}/setup`)).body, { needed: false });
  const refused = await rawPost('/api/v1/setup', { ip: '127.0.0.10', headers: { 'content-type': 'application/json', 'content-length': 300 }, ms: 5_000 });
  assert.equal([refused.status, refused.code, refused.closed], [403, 'invalid_setup_token', true]);
});

test('bodies of open routes: JSON only, no __proto__, no compression; an empty one names the missing fields', async () => {
  const login = `${t.api}/auth/login`;
  const envelope = (res: { status: number; body: any }, status: number, code: string) => assert.equal([res.status, res.body.error.code, res.body.error.status], [status, code, status]);
  envelope(await request(login, { body: '{"email": "a@b.c", "password": "x", "nested": {"__proto__": {"admin": true}}}' }), 400, 'invalid_json');
  envelope(await request(login, { body: '{"email":"a@b.c","password":"x"}', headers: { 'content-encoding': 'gzip' } }), 415, 'unsupported_media_type');
  envelope(await request(login, { body: '{}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  envelope(await request(login, { body: '  ' }), 400, 'validation_error');
  envelope(await request(login, { body: '[' + '['.repeat(40) + ']'.repeat(40) + ']' }), 400, 'invalid_json');
});

test.run();
