// Zone apex discovery, NS sets and relative hosts, through Node's real c-ares Resolver against the test kit's
// authoritative server over loopback: what c-ares makes of each answer is the contract, so nothing is mocked.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Resolver } from 'node:dns/promises';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { createResolver } from './resolver.ts';
import { DnsLookupError, findZone, nameserversOf, relativeHost } from './zone.ts';

let server: DnsServer;
let resolver: Resolver;

test.before(async () => {
  server = await startDnsServer();
  resolver = createResolver([server.address], { timeoutMs: 500, tries: 1 });
});
test.after(async () => {
  await server.close();
});
test.before.each(() => {
  server.clear().unfail().resetQueries();
});

const publishZone = (zone: string, ns: string[] = [`ns1.${zone}`]) => server.addZone(zone, ns);

async function lookupError(promise: Promise<unknown>): Promise<DnsLookupError> {
  try {
    await promise;
  } catch (err) {
    assert.instance(err, DnsLookupError);
    return err as DnsLookupError;
  }
  assert.unreachable('expected a DnsLookupError');
  throw new Error('unreachable');
}

test('findZone: the apex is its own zone, with its SOA', async () => {
  publishZone('example.test');
  assert.equal(await findZone(resolver, 'example.test'), {
    zone: 'example.test',
    soa: { nsname: 'ns1.example.test', hostmaster: 'hostmaster.example.test' },
  });
});

test('findZone: a subdomain that exists (NODATA for SOA) belongs to its parent', async () => {
  publishZone('example.test');
  server.add('mail.example.test', 'A', '192.0.2.1');
  const found = await findZone(resolver, 'mail.example.test');
  assert.is(found?.zone, 'example.test');
  assert.equal(
    server.queries.filter((q) => q.type === 'SOA').map((q) => q.name),
    ['mail.example.test', 'example.test'],
    'asked the name itself first, then its parent',
  );
});

test('findZone: case and a trailing dot in the input are ignored', async () => {
  publishZone('example.test');
  server.add('mail.example.test', 'A', '192.0.2.1');
  assert.is((await findZone(resolver, 'Mail.EXAMPLE.test.'))?.zone, 'example.test');
});

test('findZone: walks up through names that do not exist (NXDOMAIN)', async () => {
  publishZone('example.test');
  const found = await findZone(resolver, 'a.b.c.example.test');
  assert.is(found?.zone, 'example.test');
  assert.equal(
    server.queries.filter((q) => q.type === 'SOA').map((q) => q.name),
    ['a.b.c.example.test', 'b.c.example.test', 'c.example.test', 'example.test'],
  );
});

test('findZone: a delegated sub-zone with its own SOA is the zone of names below it', async () => {
  publishZone('example.test');
  publishZone('sub.example.test');
  server.add('mail.sub.example.test', 'A', '192.0.2.2');
  assert.equal(await findZone(resolver, 'mail.sub.example.test'), {
    zone: 'sub.example.test',
    soa: { nsname: 'ns1.sub.example.test', hostmaster: 'hostmaster.sub.example.test' },
  });
  assert.is((await findZone(resolver, 'sub.example.test'))?.zone, 'sub.example.test');
  assert.is((await findZone(resolver, 'other.example.test'))?.zone, 'example.test');
});

test('findZone: null when no name up the tree owns an SOA, and the root is never asked', async () => {
  server.add('host.nosoa.test', 'A', '192.0.2.3');
  assert.is(await findZone(resolver, 'host.nosoa.test'), null);
  const asked = server.queries.map((q) => q.name);
  assert.equal(asked, ['host.nosoa.test', 'nosoa.test', 'test']);
});

test('findZone: a single-label name is a zone only if it owns an SOA', async () => {
  publishZone('lab');
  server.add('box.lab', 'A', '192.0.2.4');
  assert.is((await findZone(resolver, 'box.lab'))?.zone, 'lab');
  assert.is(await findZone(resolver, 'box.nothing'), null);
});

test('findZone: a CNAME owner is never an apex, even though c-ares hands back its target zone SOA', async () => {
  publishZone('example.test');
  publishZone('host.other');
  server.add('www.example.test', 'CNAME', 'host.other');
  // Proof of the quirk being guarded against: the SOA answer is the target's.
  assert.is((await resolver.resolveSoa('www.example.test')).nsname, 'ns1.host.other');
  assert.equal(await findZone(resolver, 'www.example.test'), {
    zone: 'example.test',
    soa: { nsname: 'ns1.example.test', hostmaster: 'hostmaster.example.test' },
  });
});

test('findZone: a CNAME to a name without an SOA (c-ares EBADRESP) is walked past, not an error', async () => {
  publishZone('example.test');
  server.add('mail.example.test', 'A', '192.0.2.1');
  server.add('www.example.test', 'CNAME', 'mail.example.test');
  assert.is((await findZone(resolver, 'www.example.test'))?.zone, 'example.test');
});

test('findZone: SERVFAIL on the way up is a DnsLookupError naming the failed name', async () => {
  publishZone('example.test');
  server.fail('b.example.test', 'SOA', 'SERVFAIL');
  const err = await lookupError(findZone(resolver, 'a.b.example.test'));
  assert.is(err.code, 'ESERVFAIL');
  assert.is(err.hostname, 'b.example.test');
  assert.is(err.message, 'DNS lookup of b.example.test failed: ESERVFAIL');
  assert.not.ok(server.queries.some((q) => q.name === 'example.test'), 'stopped at the failure instead of guessing');
});

test('findZone: REFUSED is a DnsLookupError', async () => {
  publishZone('example.test');
  server.fail('example.test', '*', 'REFUSED');
  assert.is((await lookupError(findZone(resolver, 'example.test'))).code, 'EREFUSED');
});

test('findZone: a timeout is a DnsLookupError', async () => {
  publishZone('example.test');
  server.fail('mail.example.test', '*', 'timeout');
  const err = await lookupError(findZone(resolver, 'mail.example.test'));
  assert.is(err.code, 'ETIMEOUT');
  assert.is(err.hostname, 'mail.example.test');
});

test('findZone: a failing CNAME check after a found SOA is a DnsLookupError, not a guess', async () => {
  publishZone('example.test');
  server.fail('example.test', 'CNAME', 'SERVFAIL');
  assert.is((await lookupError(findZone(resolver, 'example.test'))).code, 'ESERVFAIL');
});

test('nameserversOf: lower case, no trailing dot, sorted, duplicates once', async () => {
  publishZone('example.test', ['NS2.Provider.Example.', 'ns1.provider.example', 'ns1.PROVIDER.example']);
  assert.equal(await nameserversOf(resolver, 'Example.Test.'), ['ns1.provider.example', 'ns2.provider.example']);
});

test('nameserversOf: [] for a name with no NS (NODATA) and for one that does not exist (NXDOMAIN)', async () => {
  server.add('example.test', 'SOA', { mname: 'ns1.example.test', rname: 'hostmaster.example.test' });
  assert.equal(await nameserversOf(resolver, 'example.test'), []);
  assert.equal(await nameserversOf(resolver, 'missing.example.test'), []);
});

test('nameserversOf: SERVFAIL and timeout are DnsLookupErrors', async () => {
  publishZone('example.test');
  server.fail('example.test', 'NS', 'SERVFAIL');
  const servfail = await lookupError(nameserversOf(resolver, 'example.test'));
  assert.equal([servfail.code, servfail.hostname], ['ESERVFAIL', 'example.test']);
  server.fail('example.test', 'NS', 'timeout');
  assert.is((await lookupError(nameserversOf(resolver, 'example.test'))).code, 'ETIMEOUT');
});

test('relativeHost: the apex is @', () => {
  assert.is(relativeHost('example.test', 'example.test'), '@');
  assert.is(relativeHost('Example.Test.', 'example.test'), '@');
  assert.is(relativeHost('example.test', 'EXAMPLE.test.'), '@');
});

test('relativeHost: a name inside the zone loses the zone suffix', () => {
  assert.is(relativeHost('sel._domainkey.mail.example.test', 'example.test'), 'sel._domainkey.mail');
  assert.is(relativeHost('_dmarc.example.test.', 'example.test'), '_dmarc');
  assert.is(relativeHost('Bounce.Mail.EXAMPLE.TEST', 'example.test.'), 'Bounce.Mail');
  assert.is(relativeHost('mail.sub.example.test', 'sub.example.test'), 'mail');
});

test('relativeHost: a name outside the zone is returned unchanged', () => {
  assert.is(relativeHost('mail.other.test', 'example.test'), 'mail.other.test');
  assert.is(relativeHost('mail.badexample.test', 'example.test'), 'mail.badexample.test', 'suffix match is per label');
  assert.is(relativeHost('example.test', 'sub.example.test'), 'example.test');
  assert.is(relativeHost('mail.example.test', ''), 'mail.example.test');
});

test.run();
