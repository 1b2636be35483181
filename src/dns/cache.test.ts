// The answer cache of received-mail authentication, against the test DNS server: answers and "no such
// record" are kept for their time, concurrent lookups share one query, failures are asked again.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cachingLookup } from './cache.ts';
import { createResolver } from './resolver.ts';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';

let dns: DnsServer;
test.before(async () => {
  dns = await startDnsServer();
});
test.after(() => dns.close());

const asked = (name: string) => dns.queries.filter((q) => q.name === name).length;

test('an answer is kept for its time, then asked again', async () => {
  let now = 0;
  const lookup = cachingLookup(createResolver([dns.address]), { ttlMs: 1000, now: () => now });
  dns.set('a.cache.test', 'TXT', ['v=spf1 -all']);
  assert.equal(await lookup.resolve('a.cache.test', 'TXT'), [['v=spf1 -all']]);
  assert.equal(await Promise.all([lookup.resolve('A.cache.test', 'TXT'), lookup.resolve('a.cache.test', 'TXT')]), [[['v=spf1 -all']], [['v=spf1 -all']]]);
  assert.is(asked('a.cache.test'), 1);
  now = 1001;
  dns.set('a.cache.test', 'TXT', ['v=spf1 ip4:192.0.2.1 -all']);
  assert.equal(await lookup.resolve('a.cache.test', 'TXT'), [['v=spf1 ip4:192.0.2.1 -all']]);
  assert.is(asked('a.cache.test'), 2);
});

test('concurrent lookups of one name share one query; "no such name" is kept too', async () => {
  const lookup = cachingLookup(createResolver([dns.address]));
  const outcomes = await Promise.allSettled([1, 2, 3].map(() => lookup.resolve('_dmarc.none.cache.test', 'TXT')));
  assert.ok(outcomes.every((o) => o.status === 'rejected' && (o.reason as { code: string }).code === 'ENOTFOUND'));
  await lookup.resolve('_dmarc.none.cache.test', 'TXT').catch(() => undefined);
  assert.is(asked('_dmarc.none.cache.test'), 1);
});

test('a failure (SERVFAIL) is not kept: the next lookup asks again', async () => {
  const lookup = cachingLookup(createResolver([dns.address], { tries: 1 }));
  dns.set('flaky.cache.test', 'TXT', ['ok']).fail('flaky.cache.test', '*', 'SERVFAIL');
  await lookup.resolve('flaky.cache.test', 'TXT').then(
    () => assert.unreachable('SERVFAIL answered'),
    (err: { code: string }) => assert.is(err.code, 'ESERVFAIL'),
  );
  dns.unfail('flaky.cache.test');
  assert.equal(await lookup.resolve('flaky.cache.test', 'TXT'), [['ok']]);
});

test.run();
