// fetchJson and safeRequest against the test kit's real DNS server and real HTTPS (and, lab mode, plain HTTP)
// servers on loopback: catalogue API-10 (SSRF) refusals happen before any connection, and what is allowed goes
// to the vetted address only, carrying exactly the headers and body it was given.
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startDomainConnectProvider, type DomainConnectProvider } from '../testkit/domain-connect-provider.ts';
import { startStripe, type LocalStripe } from '../testkit/stripe.ts';
import { createResolver } from './resolver.ts';
import { blockedReason, fetchJson, FetchFailed, FetchRefused, safeRequest, type FetchPolicy } from './safe-fetch.ts';

let dns: DnsServer;
let provider: DomainConnectProvider;
// The Stripe stand-in records raw request bodies, which the Domain Connect provider does not.
let recorder: LocalStripe;
let plain: http.Server;
const plainSeen: Array<{ method: string; path: string; headers: IncomingHttpHeaders }> = [];
let lab: FetchPolicy;
let strict: FetchPolicy;

test.before(async () => {
  dns = await startDnsServer();
  provider = await startDomainConnectProvider({ hostname: 'dc.provider.test' });
  recorder = await startStripe({ hostname: 'hooks.receiver.test' });
  plain = http.createServer((req, res) => {
    plainSeen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '5' });
    res.end('plain');
  });
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  const resolver = createResolver([dns.address], { timeoutMs: 500, tries: 1 });
  lab = { resolver, allowPrivate: true, ca: provider.ca, timeoutMs: 3000 };
  strict = { resolver, allowPrivate: false, ca: provider.ca, timeoutMs: 3000 };
  dns.add('dc.provider.test', 'A', '127.0.0.1');
  dns.add('other.provider.test', 'A', '127.0.0.1');
  dns.add('ten.evil.test', 'A', '10.1.2.3');
  dns.add('metadata.evil.test', 'A', '169.254.169.254');
  dns.add('v6loop.evil.test', 'AAAA', '::1');
  dns.add('mapped.evil.test', 'AAAA', '::ffff:127.0.0.1');
  // Teredo whose client field (inverted) is 127.0.0.1, and 6to4 around the metadata address (SEC-02).
  dns.add('teredo.evil.test', 'AAAA', '2001:0:4136:e378:8000:63bf:80ff:fffe');
  dns.add('sixtofour.evil.test', 'AAAA', '2002:a9fe:a9fe::1');
  dns.add('mixed.evil.test', 'A', '203.0.113.7');
  dns.add('mixed.evil.test', 'A', '192.168.1.1');
  dns.add('public.test', 'A', '203.0.113.10');
  dns.add('hooks.receiver.test', 'A', '127.0.0.1');
  dns.add('plain.lab.test', 'A', '127.0.0.1');
});

test.after(async () => {
  plain.closeAllConnections();
  await new Promise<void>((resolve) => plain.close(() => resolve()));
  await recorder.close();
  await provider.close();
  await dns.close();
});

test.before.each(() => {
  provider.reset();
  recorder.reset();
  plainSeen.length = 0;
  dns.resetQueries();
});

async function refusal(url: string, policy: FetchPolicy): Promise<FetchRefused> {
  try {
    await fetchJson(url, policy);
  } catch (err) {
    if (err instanceof FetchRefused) return err;
    throw new Error(`expected FetchRefused for ${url}, got ${String(err)}`);
  }
  throw new Error(`expected FetchRefused for ${url}, got an answer`);
}

async function failure(url: string, policy: FetchPolicy): Promise<FetchFailed> {
  try {
    await fetchJson(url, policy);
  } catch (err) {
    if (err instanceof FetchFailed) return err;
    throw new Error(`expected FetchFailed for ${url}, got ${String(err)}`);
  }
  throw new Error(`expected FetchFailed for ${url}, got an answer`);
}

async function refusedBy(work: Promise<unknown>): Promise<FetchRefused> {
  try {
    await work;
  } catch (err) {
    if (err instanceof FetchRefused) return err;
    throw new Error(`expected FetchRefused, got ${String(err)}`);
  }
  throw new Error('expected FetchRefused, got an answer');
}

test('fetches JSON by host name in lab mode, trusting the test CA', async () => {
  const { status, body } = await fetchJson(`${provider.url}/v2/example.test/settings`, lab);
  assert.is(status, 200);
  assert.equal(body, provider.defaultSettings('example.test'));
  assert.is(provider.requests.length, 1);
  assert.is(provider.requests[0]!.path, '/v2/example.test/settings');
});

test('connects to the address it vetted: one lookup per family, never the system resolver', async () => {
  // getaddrinfo has never heard of .test; reaching the server at all means the pinned lookup was used.
  await fetchJson(`${provider.url}/v2/example.test/settings`, lab);
  const asked = dns.queries.filter((q) => q.name === 'dc.provider.test');
  assert.equal(asked.map((q) => q.type).sort(), ['A', 'AAAA']);
});

test('keeps the URL host name for SNI and Host, and sends no credentials', async () => {
  await fetchJson(`${provider.url}/v2/example.test/settings`, lab);
  const seen = provider.requests[0]!;
  assert.is(seen.servername, 'dc.provider.test');
  assert.is(seen.headers.host, `dc.provider.test:${provider.port}`);
  assert.is(seen.headers.accept, 'application/json');
  assert.is(seen.headers['user-agent'], 'Mailwright');
  assert.is(seen.headers.cookie, undefined);
  assert.is(seen.headers.authorization, undefined);
});

test('TLS fails without the test CA', async () => {
  const err = await failure(`${provider.url}/v2/example.test/settings`, { ...lab, ca: undefined });
  assert.match(err.code, /SELF_SIGNED|UNABLE_TO_VERIFY/);
  assert.is(provider.requests.length, 0);
});

test('TLS verifies the URL name, not the pinned address: a name the certificate lacks fails', async () => {
  const err = await failure(`https://other.provider.test:${provider.port}/v2/example.test/settings`, lab);
  assert.is(err.code, 'ERR_TLS_CERT_ALTNAME_INVALID');
  assert.is(provider.requests.length, 0);
});

test('an IP-literal URL is fetched directly in lab mode (certificate IP SAN)', async () => {
  const { status } = await fetchJson(`https://127.0.0.1:${provider.port}/v2/example.test/settings`, lab);
  assert.is(status, 200);
  assert.is(provider.requests[0]!.servername, null);
  assert.is(dns.queries.length, 0);
});

test('refuses http:, file:, gopher: and URLs with user info, without a lookup or a request', async () => {
  assert.is((await refusal(`http://dc.provider.test:${provider.port}/`, lab)).reason, 'scheme');
  assert.is((await refusal('file:///etc/passwd', lab)).reason, 'scheme');
  assert.is((await refusal('gopher://dc.provider.test:70/', lab)).reason, 'scheme');
  const userinfo = await refusal(`https://user:hunter2@dc.provider.test:${provider.port}/`, lab);
  assert.is(userinfo.reason, 'userinfo');
  assert.not.match(userinfo.message, /hunter2/);
  assert.is((await refusal('not a url', lab)).reason, 'url');
  assert.is(dns.queries.length, 0);
  assert.is(provider.requests.length, 0);
});

test('refuses host names resolving to loopback, private, metadata, ::1 and mapped loopback', async () => {
  const cases: Array<[string, RegExp]> = [
    ['dc.provider.test', /127\.0\.0\.1 \(a loopback address\)/],
    ['ten.evil.test', /10\.1\.2\.3 \(a private address\)/],
    ['metadata.evil.test', /169\.254\.169\.254 \(a link-local address\)/],
    ['v6loop.evil.test', /::1 \(a loopback address\)/],
    ['mapped.evil.test', /a loopback address \(127\.0\.0\.1\) embedded in IPv6 as IPv4-mapped/],
    ['teredo.evil.test', /a loopback address \(127\.0\.0\.1\) embedded in IPv6 as Teredo/],
    ['sixtofour.evil.test', /a link-local address \(169\.254\.169\.254\) embedded in IPv6 as 6to4/],
    ['mixed.evil.test', /192\.168\.1\.1 \(a private address\)/],
  ];
  for (const [host, why] of cases) {
    // The provider's own port: had the check let it through, the provider would have recorded the request.
    const err = await refusal(`https://${host}:${provider.port}/v2/example.test/settings`, strict);
    assert.is(err.reason, 'address', host);
    assert.match(err.message, why);
  }
  assert.is(provider.requests.length, 0);
});

test('refuses IP literals however they are spelled', async () => {
  for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '0177.0.0.1', '127.1', '0', '[::1]', '[::ffff:127.0.0.1]', '[::]', '10.0.0.1', '169.254.169.254', '100.64.0.1', '[fd00::1]', '[fe80::1]', '[64:ff9b::a9fe:a9fe]', '[2002:a00:1::]', '[2001:0:a00:1::]', '[::ffff:0:a00:1]', '[64:ff9b:1::808:808]']) {
    const err = await refusal(`https://${host}:${provider.port}/`, strict);
    assert.is(err.reason, 'address', host);
  }
  assert.is(dns.queries.length, 0);
  assert.is(provider.requests.length, 0);
});

test('refuses ports other than 443 outside lab mode, before connecting', async () => {
  const err = await refusal('https://public.test:8443/', strict);
  assert.is(err.reason, 'port');
  assert.match(err.message, /8443/);
});

test('does not follow a redirect; the refusal names the Location', async () => {
  provider.redirectTo('https://169.254.169.254/latest/meta-data/');
  const err = await refusal(`${provider.url}/v2/example.test/settings`, lab);
  assert.is(err.reason, 'redirect');
  assert.match(err.message, /169\.254\.169\.254\/latest\/meta-data/);
  assert.is(provider.requests.length, 1);
});

test('caps the body: a streamed 1 MB answer is cut off and refused', async () => {
  provider.sendHugeBody(1024 * 1024);
  const err = await refusal(`${provider.url}/v2/example.test/settings`, lab);
  assert.is(err.reason, 'size');
  assert.match(err.message, /65536/);
});

test('caps the body: a declared Content-Length over the cap is refused without reading it', async () => {
  provider.sendHugeBody(1024 * 1024, true);
  const err = await refusal(`${provider.url}/v2/example.test/settings`, { ...lab, maxBytes: 1000 });
  assert.is(err.reason, 'size');
  assert.match(err.message, /1048576 bytes exceeds 1000/);
});

test('a body just under the cap is read', async () => {
  provider.setStatus(200, JSON.stringify({ pad: 'x'.repeat(900) }));
  const { body } = await fetchJson(`${provider.url}/x`, { ...lab, maxBytes: 1000 });
  assert.is((body as { pad: string }).pad.length, 900);
});

test('a stalled server times out within the whole-request limit', async () => {
  provider.stall();
  const started = Date.now();
  const err = await failure(`${provider.url}/v2/example.test/settings`, { ...lab, timeoutMs: 300 });
  const elapsed = Date.now() - started;
  assert.is(err.code, 'ETIMEDOUT');
  assert.ok(elapsed >= 250 && elapsed < 2000, `took ${elapsed} ms`);
});

test('a DNS lookup that never answers counts against the same limit', async () => {
  dns.fail('slow.provider.test', '*', 'timeout');
  try {
    const err = await failure(`https://slow.provider.test:${provider.port}/`, { ...lab, timeoutMs: 200 });
    assert.is(err.code, 'ETIMEDOUT');
  } finally {
    dns.unfail('slow.provider.test');
  }
});

test('a 2xx body that is not JSON fails; an empty one is null', async () => {
  provider.setStatus(200, '<html>hello</html>', 'text/html');
  const err = await failure(`${provider.url}/x`, lab);
  assert.is(err.code, 'EBADJSON');
  provider.setStatus(200, '');
  assert.equal(await fetchJson(`${provider.url}/x`, lab), { status: 200, body: null });
});

test('an error status is returned with its body, HTML bodies as null', async () => {
  provider.setStatus(404, '<html>Not Found</html>', 'text/html');
  assert.equal(await fetchJson(`${provider.url}/x`, lab), { status: 404, body: null });
  provider.setStatus(500, '{"error":"boom"}');
  assert.equal(await fetchJson(`${provider.url}/x`, lab), { status: 500, body: { error: 'boom' } });
});

test('a name with no addresses fails without a request', async () => {
  const err = await failure(`https://nowhere.test:${provider.port}/`, lab);
  assert.is(err.code, 'ENOTFOUND');
});

test('safeRequest: a POST arrives with exactly its body and headers, nothing of ours added', async () => {
  const body = Buffer.from(JSON.stringify({ event: 'message.delivered', id: 'evt_1' }));
  recorder.answerWith(202, { ok: true });
  const res = await safeRequest(
    `${recorder.namedUrl}/hooks/in?x=1`,
    { method: 'POST', headers: { 'content-type': 'application/json', 'x-mailwright-signature': 't=1,v1=abc', 'user-agent': 'Mailwright-Webhooks/1' }, body },
    { ...lab, ca: recorder.ca },
  );
  assert.is(res.status, 202);
  assert.equal(JSON.parse(res.body.toString()), { ok: true });
  assert.is(res.truncated, false);
  assert.is(typeof res.durationMs, 'number');
  assert.ok(res.durationMs >= 0);
  assert.is(recorder.requests.length, 1);
  const seen = recorder.requests[0]!;
  assert.is(seen.method, 'POST');
  assert.is(seen.path, '/hooks/in');
  assert.is(seen.raw, body.toString());
  assert.equal(Object.keys(seen.headers).sort(), ['connection', 'content-length', 'content-type', 'host', 'user-agent', 'x-mailwright-signature']);
  assert.is(seen.headers['content-length'], String(body.length));
  assert.is(seen.headers['content-type'], 'application/json');
  assert.is(seen.headers['x-mailwright-signature'], 't=1,v1=abc');
  assert.is(seen.headers['user-agent'], 'Mailwright-Webhooks/1');
  assert.is(seen.headers.host, `hooks.receiver.test:${recorder.port}`);
});

test('safeRequest: http: is refused outside lab mode, before any lookup or connection', async () => {
  const port = (plain.address() as AddressInfo).port;
  const err = await refusedBy(safeRequest(`http://plain.lab.test:${port}/x`, { method: 'GET', headers: {} }, strict));
  assert.is(err.reason, 'scheme');
  assert.is(dns.queries.length, 0);
  assert.is(plainSeen.length, 0);
});

test('safeRequest: http: works in lab mode over node:http, still through the pinned lookup', async () => {
  const port = (plain.address() as AddressInfo).port;
  const res = await safeRequest(`http://plain.lab.test:${port}/x?y=2`, { method: 'GET', headers: { accept: 'text/plain' } }, lab);
  assert.equal([res.status, res.body.toString(), res.truncated], [200, 'plain', false]);
  assert.ok(res.durationMs >= 0);
  assert.is(plainSeen.length, 1);
  assert.is(plainSeen[0]!.path, '/x?y=2');
  assert.is(plainSeen[0]!.headers.host, `plain.lab.test:${port}`);
  assert.ok(dns.queries.some((q) => q.name === 'plain.lab.test'));
});

test('safeRequest: truncate cuts an over-long body at maxBytes; without it the body is refused', async () => {
  for (const declareLength of [false, true]) {
    provider.sendHugeBody(1024 * 1024, declareLength);
    const res = await safeRequest(`${provider.url}/x`, { method: 'GET', headers: {} }, { ...lab, maxBytes: 1000, truncate: true });
    assert.is(res.status, 200);
    assert.is(res.truncated, true, `declared: ${declareLength}`);
    assert.is(res.body.length, 1000, `declared: ${declareLength}`);
    const err = await refusedBy(safeRequest(`${provider.url}/x`, { method: 'GET', headers: {} }, { ...lab, maxBytes: 1000 }));
    assert.is(err.reason, 'size');
  }
  provider.setStatus(200, 'x'.repeat(1000), 'text/plain');
  const exact = await safeRequest(`${provider.url}/x`, { method: 'GET', headers: {} }, { ...lab, maxBytes: 1000, truncate: true });
  assert.equal([exact.body.length, exact.truncated], [1000, false]);
});

test('safeRequest: a redirect is refused, for a POST too', async () => {
  provider.redirectTo('https://169.254.169.254/latest/meta-data/', 307);
  const err = await refusedBy(safeRequest(`${provider.url}/hook`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: Buffer.from('hi') }, lab));
  assert.is(err.reason, 'redirect');
  assert.match(err.message, /169\.254\.169\.254/);
  assert.is(provider.requests.length, 1);
});

test('blockedReason: public addresses pass, the catalogue ranges do not', () => {
  for (const ip of ['8.8.8.8', '203.0.113.10', '2001:4860:4860::8888', '::ffff:8.8.8.8', '172.32.0.1', '100.128.0.1']) {
    assert.is(blockedReason(ip), null, ip);
  }
  for (const ip of ['0.0.0.0', '172.16.0.1', '172.31.255.255', '192.168.0.1', '224.0.0.1', '255.255.255.255', '::', '::1', 'fc00::1', 'febf::1', 'ff02::1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe']) {
    assert.ok(blockedReason(ip), ip);
  }
});

test('blockedReason: IPv6 transition prefixes are refused for the private IPv4 they embed, named (SEC-02)', () => {
  const refused: Array<[string, RegExp]> = [
    // 6to4, RFC 3056: the IPv4 address in bits 16-47, however the IPv6 address is spelled.
    ['2002:7f00:1::1', /^a loopback address \(127\.0\.0\.1\) embedded in IPv6 as 6to4/],
    ['2002:0A00:0001:0000::', /^a private address \(10\.0\.0\.1\) embedded in IPv6 as 6to4/],
    ['2002:c0a8:101:1:2:3:4:5', /\(192\.168\.1\.1\) embedded in IPv6 as 6to4/],
    ['2002:a9fe:a9fe::', /^a link-local address \(169\.254\.169\.254\)/],
    // Teredo, RFC 4380: the server in bits 32-63; the client in the last 32, inverted.
    ['2001:0:a00:1:8000:63bf:3fff:fdd2', /^a private address \(10\.0\.0\.1\) embedded in IPv6 as Teredo/],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', /^a loopback address \(127\.0\.0\.1\) embedded in IPv6 as Teredo/],
    ['2001::4136:e378:0:0:3f57:fefe', /^a private address \(192\.168\.1\.1\)/],
    // NAT64, RFC 6052, in hex and in the dotted spelling.
    ['64:ff9b::a9fe:a9fe', /^a link-local address \(169\.254\.169\.254\) embedded in IPv6 as NAT64/],
    ['64:ff9b::10.1.2.3', /^a private address \(10\.1\.2\.3\) embedded in IPv6 as NAT64/],
    // The local-use NAT64 prefix, RFC 8215: refused whatever it embeds.
    ['64:ff9b:1::808:808', /^a local-use NAT64 address/],
    ['64:ff9b:1:ffff::1', /^a local-use NAT64 address/],
    // SIIT IPv4-translated (RFC 2765), IPv4-mapped and IPv4-compatible.
    ['::ffff:0:10.0.0.1', /^a private address \(10\.0\.0\.1\) embedded in IPv6 as SIIT/],
    ['::ffff:0:7f00:1', /^a loopback address \(127\.0\.0\.1\) embedded in IPv6 as SIIT/],
    ['::ffff:192.168.0.1', /^a private address \(192\.168\.0\.1\) embedded in IPv6 as IPv4-mapped/],
    ['::10.0.0.1', /^a private address \(10\.0\.0\.1\) embedded in IPv6 as IPv4-compatible/],
    ['::a9fe:a9fe', /^a link-local address \(169\.254\.169\.254\) embedded in IPv6 as IPv4-compatible/],
  ];
  for (const [ip, why] of refused) assert.match(String(blockedReason(ip)), why, ip);
  // The same mechanisms around public IPv4 addresses are not refused for the embedding alone.
  const allowed = [
    '2002:808:808::1', // 6to4 of 8.8.8.8
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // RFC 4380's example: server 65.54.227.120, client 192.0.2.45
    '64:ff9b::808:808',
    '64:ff9b::8.8.4.4',
    '::ffff:0:8.8.8.8',
    '::8.8.8.8',
    '2001:db8::1', // 2001:db8::/32 is not Teredo's 2001:0::/32
    '2001:4860:4860::8888',
  ];
  for (const ip of allowed) assert.is(blockedReason(ip), null, ip);
});

test('refuses an IP-literal URL whose IPv6 embeds a private IPv4, naming it, before any request', async () => {
  const err = await refusal(`https://[2002:7f00:1::]:${provider.port}/`, strict);
  assert.is(err.reason, 'address');
  assert.match(err.message, /2002:7f00:1:: is a loopback address \(127\.0\.0\.1\) embedded in IPv6 as 6to4 \(RFC 3056\)/);
  assert.is(provider.requests.length, 0);
});

test.run();
