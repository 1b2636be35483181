// resolveMxRoute against the test kit's real DNS server: RFC 5321 5.1 ordering and implicit MX, RFC 7505 null
// MX, which DNS failures are permanent and which temporary (catalogue DUR-17), and API-10c private addresses.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Resolver } from 'node:dns/promises';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { createResolver } from './resolver.ts';
import { isPrivateAddress, resolveMxRoute, type MxRoute } from './mx.ts';

let dns: DnsServer;
let resolver: Resolver;
const lab = { allowPrivate: true };
const strict = { allowPrivate: false };

test.before(async () => {
  dns = await startDnsServer();
  resolver = createResolver([dns.address], { timeoutMs: 300, tries: 1 });
  dns.addZone('mx.test');
});

test.after(async () => {
  await dns.close();
});

test.before.each(() => {
  dns.clear().unfail().addZone('mx.test');
});

function hostsOf(route: MxRoute): Array<{ host: string; preference: number; addresses: string[] }> {
  if (route.kind !== 'hosts') throw new Error(`expected hosts, got ${JSON.stringify(route)}`);
  return route.hosts;
}

test('MX hosts come lowest preference first, each with its A and AAAA addresses', async () => {
  dns.add('ordered.mx.test', 'MX', { preference: 20, exchange: 'b.mx.test' });
  dns.add('ordered.mx.test', 'MX', { preference: 10, exchange: 'a.mx.test' });
  dns.add('ordered.mx.test', 'MX', { preference: 30, exchange: 'c.mx.test' });
  dns.add('a.mx.test', 'A', '203.0.113.1');
  dns.add('a.mx.test', 'AAAA', '2001:db8::1');
  dns.add('b.mx.test', 'A', '203.0.113.2');
  dns.add('c.mx.test', 'A', '203.0.113.3');
  const hosts = hostsOf(await resolveMxRoute(resolver, 'Ordered.MX.test.', strict));
  assert.equal(hosts, [
    { host: 'a.mx.test', preference: 10, addresses: ['203.0.113.1', '2001:db8::1'] },
    { host: 'b.mx.test', preference: 20, addresses: ['203.0.113.2'] },
    { host: 'c.mx.test', preference: 30, addresses: ['203.0.113.3'] },
  ]);
});

test('equal preferences are shuffled (RFC 5321 5.1) and both hosts are always kept', async () => {
  dns.add('tied.mx.test', 'MX', { preference: 10, exchange: 'x.mx.test' });
  dns.add('tied.mx.test', 'MX', { preference: 10, exchange: 'y.mx.test' });
  dns.add('tied.mx.test', 'MX', { preference: 5, exchange: 'first.mx.test' });
  dns.add('x.mx.test', 'A', '203.0.113.10');
  dns.add('y.mx.test', 'A', '203.0.113.11');
  dns.add('first.mx.test', 'A', '203.0.113.12');
  const orders = new Set<string>();
  for (let i = 0; i < 40 && orders.size < 2; i++) {
    const hosts = hostsOf(await resolveMxRoute(resolver, 'tied.mx.test', strict)).map((h) => h.host);
    assert.is(hosts.length, 3);
    assert.is(hosts[0], 'first.mx.test');
    assert.equal([...hosts.slice(1)].sort(), ['x.mx.test', 'y.mx.test']);
    orders.add(hosts.join(','));
  }
  // Two orders with equal odds: one order 40 times in a row would be a 1-in-2^39 accident.
  assert.is(orders.size, 2);
});

test('a null MX (RFC 7505) is a permanent 5.1.10 without looking up any address', async () => {
  dns.add('nullmx.mx.test', 'MX', { preference: 0, exchange: '.' });
  dns.add('nullmx.mx.test', 'A', '203.0.113.20');
  dns.resetQueries();
  const route = await resolveMxRoute(resolver, 'nullmx.mx.test', strict);
  assert.is(route.kind, 'permanent');
  assert.is(route.kind !== 'hosts' && route.code, '5.1.10');
  assert.ok(route.kind !== 'hosts' && route.reason.includes('null MX'));
  assert.equal(dns.queries.map((q) => q.type), ['MX']);
});

test('NXDOMAIN of the domain is permanent', async () => {
  const route = await resolveMxRoute(resolver, 'nowhere.mx.test', strict);
  assert.equal(route, { kind: 'permanent', code: '5.1.2', reason: 'domain nowhere.mx.test does not exist (NXDOMAIN)' });
});

test('SERVFAIL, REFUSED and a timeout of the MX lookup are temporary', async () => {
  dns.add('flaky.mx.test', 'A', '203.0.113.30');
  for (const mode of ['SERVFAIL', 'REFUSED', 'timeout'] as const) {
    dns.unfail().fail('flaky.mx.test', 'MX', mode);
    const route = await resolveMxRoute(resolver, 'flaky.mx.test', strict);
    assert.is(route.kind, 'temporary', mode);
    assert.is(route.kind === 'temporary' && route.code, '4.4.3');
  }
});

test('no MX records: the domain itself is the implicit MX (RFC 5321 5.1)', async () => {
  dns.add('aonly.mx.test', 'A', '203.0.113.40');
  dns.add('aonly.mx.test', 'AAAA', '2001:db8::40');
  assert.equal(hostsOf(await resolveMxRoute(resolver, 'aonly.mx.test', strict)), [
    { host: 'aonly.mx.test', preference: 0, addresses: ['203.0.113.40', '2001:db8::40'] },
  ]);
});

test('no MX and no address is permanent; no MX and a failing A lookup is temporary', async () => {
  dns.add('txtonly.mx.test', 'TXT', 'v=spf1 -all');
  const none = await resolveMxRoute(resolver, 'txtonly.mx.test', strict);
  assert.equal(none, { kind: 'permanent', code: '5.4.4', reason: 'txtonly.mx.test has no MX and no A/AAAA records' });
  dns.fail('txtonly.mx.test', 'A', 'SERVFAIL');
  assert.is((await resolveMxRoute(resolver, 'txtonly.mx.test', strict)).kind, 'temporary');
});

test('private addresses are dropped unless allowPrivate', async () => {
  dns.add('mixed.mx.test', 'MX', { preference: 10, exchange: 'mixedhost.mx.test' });
  dns.add('mixedhost.mx.test', 'A', '10.0.0.7');
  dns.add('mixedhost.mx.test', 'A', '203.0.113.50');
  dns.add('mixedhost.mx.test', 'AAAA', '::ffff:127.0.0.1');
  assert.equal(hostsOf(await resolveMxRoute(resolver, 'mixed.mx.test', strict))[0]!.addresses, ['203.0.113.50']);
  assert.equal(hostsOf(await resolveMxRoute(resolver, 'mixed.mx.test', lab))[0]!.addresses.sort(), ['10.0.0.7', '203.0.113.50', '::ffff:127.0.0.1']);
});

test('an MX that resolves only to private addresses is permanent (catalogue API-10c), allowed in lab mode', async () => {
  dns.add('inside.mx.test', 'MX', { preference: 10, exchange: 'lan.mx.test' });
  dns.add('inside.mx.test', 'MX', { preference: 20, exchange: 'loop.mx.test' });
  dns.add('lan.mx.test', 'A', '192.168.1.25');
  dns.add('loop.mx.test', 'A', '127.0.0.1');
  dns.add('loop.mx.test', 'AAAA', '::1');
  const route = await resolveMxRoute(resolver, 'inside.mx.test', strict);
  assert.equal(route, { kind: 'permanent', code: '5.4.4', reason: 'MX of inside.mx.test resolves only to private addresses' });
  assert.equal(hostsOf(await resolveMxRoute(resolver, 'inside.mx.test', lab)).map((h) => h.host), ['lan.mx.test', 'loop.mx.test']);
});

test('an MX host that does not resolve is skipped', async () => {
  dns.add('ghosted.mx.test', 'MX', { preference: 10, exchange: 'ghost.mx.test' });
  dns.add('ghosted.mx.test', 'MX', { preference: 20, exchange: 'real.mx.test' });
  dns.add('real.mx.test', 'A', '203.0.113.60');
  assert.equal(hostsOf(await resolveMxRoute(resolver, 'ghosted.mx.test', strict)), [
    { host: 'real.mx.test', preference: 20, addresses: ['203.0.113.60'] },
  ]);
});

test('no MX host resolves: temporary if any lookup failed, else permanent', async () => {
  dns.add('broken.mx.test', 'MX', { preference: 10, exchange: 'ghost.mx.test' });
  dns.add('broken.mx.test', 'MX', { preference: 20, exchange: 'sick.mx.test' });
  dns.add('sick.mx.test', 'A', '203.0.113.70');
  dns.fail('sick.mx.test', '*', 'SERVFAIL');
  const route = await resolveMxRoute(resolver, 'broken.mx.test', strict);
  assert.is(route.kind, 'temporary');
  assert.ok(route.kind === 'temporary' && route.reason.includes('sick.mx.test'));
  dns.unfail();
  dns.remove('sick.mx.test');
  const gone = await resolveMxRoute(resolver, 'broken.mx.test', strict);
  assert.equal(gone, { kind: 'permanent', code: '5.4.4', reason: 'no MX host of broken.mx.test resolves to an address' });
});

test('isPrivateAddress covers loopback, RFC 1918, link-local, CGNAT, ULA, 0/8, multicast and IPv4-mapped forms', () => {
  const inside = ['127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.254', '192.168.0.1', '169.254.169.254', '100.64.0.1',
    '0.1.2.3', '224.0.0.251', 'fd00::1', 'fc00::5', 'fe80::1', '::', '::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:7f00:1'];
  for (const ip of inside) assert.ok(isPrivateAddress(ip), ip);
  const outside = ['8.8.8.8', '172.32.0.1', '100.128.0.1', '203.0.113.9', '2001:4860:4860::8888', '::ffff:8.8.8.8'];
  for (const ip of outside) assert.not.ok(isPrivateAddress(ip), ip);
});

test.run();
