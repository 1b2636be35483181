// DNS blocklists against the test DNS server: the names asked (RFC 5782, IPv4 and IPv6), what answers mean
// (a listing, NXDOMAIN, Spamhaus's 127.255.255.x refusals, answers outside 127.0.0.0/8), timeouts and failures
// that never count as listed, the TTL cache (one query for a second client, asked again after the TTL, never
// keeping a failure, bounded in size), the TXT reason, and the counts handed to the metrics.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Blocklists, meaning, queryName, reversedAddress, type Outcome } from './blocklist.ts';
import { createResolver } from './resolver.ts';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';

let dns: DnsServer;
test.before(async () => {
  dns = await startDnsServer();
  dns.addZone('bl.test');
});
test.after(() => dns.close());

const asked = (name: string) => dns.queries.filter((q) => q.name === name).length;

function blocklists(opts: { now?: () => number; maxEntries?: number; timeoutMs?: number } = {}) {
  const observed: Array<[string, string, Outcome]> = [];
  const warnings: string[] = [];
  const timeoutMs = opts.timeoutMs ?? 1500;
  const lists = new Blocklists(createResolver([dns.address], { timeoutMs, tries: 1 }), {
    timeoutMs,
    now: opts.now,
    maxEntries: opts.maxEntries,
    observe: (kind, zone, outcome) => observed.push([kind, zone, outcome]),
    warn: (message) => warnings.push(message),
  });
  return { lists, observed, warnings };
}

test('an address is asked with its octets reversed, an IPv6 address nibble by nibble (RFC 5782 2.1, 2.4)', () => {
  assert.is(reversedAddress('192.0.2.99'), '99.2.0.192');
  assert.is(reversedAddress('::ffff:192.0.2.99'), '99.2.0.192', 'an IPv4-mapped address is the IPv4 address');
  // RFC 5782 2.4's example.
  assert.is(reversedAddress('2001:db8:1:2:3:4:567:89ab'), 'b.a.9.8.7.6.5.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0.8.b.d.0.1.0.0.2');
  assert.is(reversedAddress('2001:DB8::1'), '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2');
  assert.is(queryName('dnsbl', 'zen.example', '127.0.0.2'), '2.0.0.127.zen.example');
  assert.is(queryName('uribl', 'dbl.example', 'Spam.Example.'), 'spam.example.dbl.example');
});

test('what an answer means: 127.0.0.0/8 lists, but never 127.0.0.1, Spamhaus error codes or outside addresses', () => {
  assert.equal(meaning([]), { outcome: 'clear', codes: [] });
  assert.equal(meaning(['127.0.0.2']), { outcome: 'listed', codes: ['127.0.0.2'] });
  assert.equal(meaning(['127.0.0.4', '127.0.0.10']), { outcome: 'listed', codes: ['127.0.0.4', '127.0.0.10'] });
  for (const code of ['127.255.255.252', '127.255.255.254', '127.255.255.255', '127.0.0.1', '127.0.1.255', '192.0.2.1', '10.0.0.2']) {
    assert.is(meaning([code]).outcome, 'unusable', `${code} is no listing`);
  }
  assert.equal(meaning(['127.255.255.254', '127.0.0.3']), { outcome: 'listed', codes: ['127.0.0.3'] });
});

test('a listed address, a clean one, and a refused query (127.255.255.254) warned about once', async () => {
  const { lists, observed, warnings } = blocklists();
  dns.set('2.0.0.127.bl.test', 'A', ['127.0.0.2']);
  dns.set('4.0.0.127.bl.test', 'A', ['127.255.255.254']);
  dns.set('5.0.0.127.bl.test', 'A', ['127.255.255.254']);
  dns.set('6.0.0.127.bl.test', 'A', ['203.0.113.9']);
  assert.equal(await lists.lookup('dnsbl', 'bl.test', '127.0.0.2'), { zone: 'bl.test', subject: '127.0.0.2', outcome: 'listed', codes: ['127.0.0.2'] });
  assert.equal(await lists.lookup('dnsbl', 'bl.test', '127.0.0.3'), { zone: 'bl.test', subject: '127.0.0.3', outcome: 'clear', codes: [] });
  assert.is((await lists.lookup('dnsbl', 'bl.test', '127.0.0.4')).outcome, 'unusable');
  assert.is((await lists.lookup('dnsbl', 'bl.test', '127.0.0.5')).outcome, 'unusable');
  assert.is((await lists.lookup('dnsbl', 'bl.test', '127.0.0.6')).outcome, 'unusable');
  assert.is(warnings.length, 2, 'one warning for 127.255.255.254, one for the answer outside 127/8');
  assert.match(warnings[0], /bl\.test refused the query \(127\.255\.255\.254\).*public or shared resolvers.*counted as not listed/);
  assert.match(warnings[1], /bl\.test gave an answer that is no listing \(203\.0\.113\.9\)/);
  assert.equal(observed.map((o) => o[2]), ['listed', 'clear', 'unusable', 'unusable', 'unusable']);
  assert.ok(observed.every(([kind, zone]) => kind === 'dnsbl' && zone === 'bl.test'));
});

test('an answer is kept for its TTL: a second client asks nothing, a later one asks again', async () => {
  let now = 0;
  const { lists, observed } = blocklists({ now: () => now });
  dns.set('7.0.0.127.bl.test', 'A', ['127.0.0.2'], 60);
  await lists.lookup('dnsbl', 'bl.test', '127.0.0.7');
  now = 59_000;
  assert.is((await Promise.all([lists.lookup('dnsbl', 'bl.test', '127.0.0.7'), lists.lookup('dnsbl', 'bl.test', '127.0.0.7')]))[0].outcome, 'listed');
  assert.is(asked('7.0.0.127.bl.test'), 1);
  assert.is(observed.length, 1, 'an answer from the cache is no lookup');
  now = 61_000;
  dns.remove('7.0.0.127.bl.test');
  assert.is((await lists.lookup('dnsbl', 'bl.test', '127.0.0.7')).outcome, 'clear', 'delisted once the TTL passed');
  assert.is(asked('7.0.0.127.bl.test'), 2);
  // "Not listed" is kept too (for a minute: resolvers give no negative TTL).
  now = 100_000;
  await lists.lookup('dnsbl', 'bl.test', '127.0.0.7');
  assert.is(asked('7.0.0.127.bl.test'), 2);
});

test('a timeout or a failure counts as not listed, is counted, and is not kept', async () => {
  const { lists, observed } = blocklists({ timeoutMs: 300 });
  dns.set('8.0.0.127.bl.test', 'A', ['127.0.0.2']).fail('8.0.0.127.bl.test', '*', 'timeout');
  dns.set('9.0.0.127.bl.test', 'A', ['127.0.0.2']).fail('9.0.0.127.bl.test', '*', 'SERVFAIL');
  assert.is((await lists.lookup('dnsbl', 'bl.test', '127.0.0.8')).outcome, 'timeout');
  assert.is((await lists.lookup('dnsbl', 'bl.test', '127.0.0.9')).outcome, 'error');
  assert.equal(observed.map((o) => o[2]), ['timeout', 'error']);
  dns.unfail('8.0.0.127.bl.test').unfail('9.0.0.127.bl.test');
  assert.is((await lists.lookup('dnsbl', 'bl.test', '127.0.0.8')).outcome, 'listed', 'asked again after the timeout');
  assert.is((await lists.lookup('dnsbl', 'bl.test', '127.0.0.9')).outcome, 'listed', 'asked again after the failure');
});

test('the cache holds at most maxEntries names, the oldest leaving first', async () => {
  const { lists } = blocklists({ maxEntries: 2 });
  for (const ip of ['127.0.1.1', '127.0.1.2', '127.0.1.3']) await lists.lookup('dnsbl', 'bl.test', ip);
  await lists.lookup('dnsbl', 'bl.test', '127.0.1.3');
  await lists.lookup('dnsbl', 'bl.test', '127.0.1.1');
  assert.is(asked('3.1.0.127.bl.test'), 1, 'a recent name is kept');
  assert.is(asked('1.1.0.127.bl.test'), 2, 'the oldest was dropped and asked again');
});

test("a listing's TXT reason, printable and short; none when the zone has none", async () => {
  const { lists } = blocklists();
  dns.set('2.0.0.127.bl.test', 'TXT', ['Listed: see https://bl.test/query/127.0.0.2\u0007']);
  assert.is(await lists.reason('dnsbl', 'bl.test', '127.0.0.2'), 'Listed: see https://bl.test/query/127.0.0.2');
  assert.is(await lists.reason('dnsbl', 'bl.test', '127.0.0.3'), null);
});

test('a domain is asked as itself in a URI blocklist (RFC 5782 2.3)', async () => {
  const { lists, observed } = blocklists();
  dns.addZone('uribl.test');
  dns.set('spam.example.uribl.test', 'A', ['127.0.1.2']);
  assert.equal(await lists.lookup('uribl', 'uribl.test', 'spam.example'), { zone: 'uribl.test', subject: 'spam.example', outcome: 'listed', codes: ['127.0.1.2'] });
  assert.is((await lists.lookup('uribl', 'uribl.test', 'ham.example')).outcome, 'clear');
  assert.equal(observed, [['uribl', 'uribl.test', 'listed'], ['uribl', 'uribl.test', 'clear']]);
});

test.run();
