// Property-based fuzzing of the doors a stranger reaches without a credential (docs/security.md): sign-in and
// setup, the pages and pixels of links in mail, Stripe's webhook, /metrics, /healthz and the API's gate, with
// any method, body, Content-Type and X-Forwarded-For or Forwarded header, behind a trusted proxy on loopback.
// For every request: never a 5xx, the error envelope on every API refusal, and nothing the box keeps changed
// (but the failed-login counts such requests are meant to leave). FUZZ_RUNS=N runs N cases per property.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tableDigests } from '../testkit/table-digest.ts';
import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { trackedCases } from '../testkit/fuzz-cases.ts';

const RUNS = Number(process.env.FUZZ_RUNS) || 150;
const TIME_LIMIT_MS = 8_000;
const cases = trackedCases();

let t: TestApp;

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0', MAILWRIGHT_TRUSTED_PROXIES: '127.0.0.1' } });
  await seedWorkspace(t);
});
test.after(() => t.stop());

/**
 * Everything the box keeps, hashed, but what a stranger's request may touch by design (failed-login counts) and
 * what the box writes on its own clock (this node's heartbeat, the periodic jobs' last runs).
 */
async function digest(): Promise<string> {
  return JSON.stringify(await tableDigests(t.app.store, ['auth_failures', 'nodes', 'job_runs']));
}

interface Raw {
  status: number;
  type: string;
  body: string;
}

/** One request exactly as given (headers and body bytes), from a loopback address; the answer read whole. */
function send(path: string, method: string, headers: Record<string, string>, body: Buffer | null, localAddress: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${t.url}${path}`, { method, headers, localAddress, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      // An event stream that was let in never ends: its first bytes are answer enough.
      if (String(res.headers['content-type']).startsWith('text/event-stream')) return resolve({ status: res.statusCode!, type: 'text/event-stream', body: '' }), req.destroy();
      res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type'] ?? ''), body: text }));
    });
    // The box may close a connection whose body it refused to read; the answer came first.
    req.on('error', (err) => reject(err));
    req.end(body ?? undefined);
  });
}

const token = fc.oneof(fc.string({ maxLength: 60 }), fc.stringMatching(/^[A-Za-z0-9_-]{10,80}$/), fc.constantFrom('', '..', '%2e%2e', '%00', 'x'.repeat(3000), '😀'));
const path = fc.oneof(
  fc.constantFrom('/api/v1/auth/login', '/api/v1/setup', '/api/v1/auth/logout', '/api/v1/billing/stripe/webhook', '/api/v1/events/stream', '/api/v1/emails', '/api/v1/', '/metrics', '/healthz', '/'),
  token.map((x) => `/open/${encodeURIComponent(x)}`),
  token.map((x) => `/click/${encodeURIComponent(x)}`),
  token.map((x) => `/unsubscribe/${encodeURIComponent(x)}`),
  token.map((x) => `/forwarding/confirm/${encodeURIComponent(x)}`),
  token.map((x) => `/billing/checkout/${encodeURIComponent(x)}`),
);
const address = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('unknown', '_hidden', '[::1]:80', '127.0.0.1:99999', '999.1.1.1', '', ' , ', 'x'.repeat(500)));
const forwardedFor = fc.array(address, { maxLength: 6 }).map((hops) => hops.join(', '));
const forwarded = fc.array(fc.oneof(address.map((a) => `for=${a}`), address.map((a) => `for="[${a}]:1"`), fc.string({ maxLength: 30 })), { maxLength: 4 }).map((parts) => parts.join(', '));
const json = fc.oneof(
  fc.record({ email: fc.oneof(fc.emailAddress(), fc.string({ maxLength: 40 })), password: fc.string({ maxLength: 60 }), token: fc.string({ maxLength: 60 }) }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 4 }),
);
const body = fc.oneof(
  fc.constant(null),
  json.map((v) => Buffer.from(JSON.stringify(v))),
  fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
  fc.uint8Array({ maxLength: 200 }).map((u) => Buffer.from(u)),
  fc.constantFrom(Buffer.alloc(9000, 0x20), Buffer.from('{"__proto__":{"x":1}}'), Buffer.from('['.repeat(60))),
);
const headers = fc.record(
  {
    'content-type': fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', ''),
    'content-encoding': fc.constantFrom('gzip', 'identity', 'br'),
    'x-forwarded-for': forwardedFor,
    forwarded,
    'last-event-id': fc.oneof(fc.string({ maxLength: 20 }), fc.nat().map(String)),
    authorization: fc.oneof(fc.constant('Bearer re_notakey'), fc.string({ maxLength: 40 })),
    origin: fc.constantFrom('http://evil.example', 'null'),
  },
  { requiredKeys: [] },
);

test('the doors open to strangers: any method, body and forwarding header is answered below 500, in the envelope under /api/v1, and changes nothing', async () => {
  const before = await digest();
  let n = 0;
  await fc.assert(
    fc.asyncProperty(path, fc.constantFrom('GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PROPFIND'), headers, body, cases.track(async (p, method, h, b) => {
      const sent = { ...h } as Record<string, string>;
      if (b === null || method === 'GET' || method === 'HEAD') delete sent['content-type'];
      // Half the cases from the trusted proxy, whose forwarding headers are read; the rest from other loopback
      // addresses, whose headers are not, each case its own so one case's failed logins do not decide the next's.
      const from = ++n % 2 ? '127.0.0.1' : `127.0.${1 + (n % 200)}.${1 + (n % 250)}`;
      const payload = method === 'GET' || method === 'HEAD' ? null : b;
      // Framed, so each case is one request: node's client sends a DELETE's or OPTIONS's body unframed otherwise,
      // and node's server answers the stray bytes 400 as it parses them, before the box sees a request.
      if (payload) sent['content-length'] = String(payload.length);
      const res = await send(p, method, sent, payload, from);
      const label = `${method} ${p.slice(0, 80)} ${JSON.stringify(sent).slice(0, 300)} ${b?.subarray(0, 80).toString('latin1') ?? ''}`;
      // 501 is DESIGN.md's answer to a method no route serves (PROPFIND), and only that.
      const designed = res.status === 501 && method === 'PROPFIND';
      if ((res.status >= 500 && !designed) || res.status < 100) throw new Error(`${label}: ${res.status} ${res.body.slice(0, 300)}`);
      if (p.startsWith('/api/v1') && res.status >= 400 && method !== 'HEAD') {
        let parsed: { error?: { status?: number; code?: unknown } } = {};
        try {
          parsed = JSON.parse(res.body);
        } catch {}
        if (parsed.error?.status !== res.status || typeof parsed.error.code !== 'string') throw new Error(`${label}: ${res.status} ${res.type} not the envelope: ${res.body.slice(0, 300)}`);
      }
    })),
    { numRuns: RUNS * 3, interruptAfterTimeLimit: TIME_LIMIT_MS * 2, includeErrorInReport: true },
  );
  await cases.settled();
  assert.is(await digest(), before, 'nothing the box keeps changed');
  const health = await send('/healthz', 'GET', {}, null, '127.0.0.1');
  assert.is(health.status, 200, 'still up and healthy');
});

test.run();
