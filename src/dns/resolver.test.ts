// The box's resolver asks exactly the servers configured in MAILWRIGHT_DNS_SERVERS: here the test kit's
// authoritative server, over UDP and TCP, so every later lookup (MX, SPF, DKIM, PTR) can be staged.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startTestApp, type TestApp } from '../testkit/app.ts';
import { arpaName, reverseLookup } from './resolver.ts';

let dns: DnsServer;
let t: TestApp;

test.before(async () => {
  dns = await startDnsServer();
  t = await startTestApp({ env: { MAILWRIGHT_DNS_SERVERS: dns.address } });
});
test.after(async () => {
  await t.stop();
  await dns.close();
});

test('app.dns resolves what the test published, through the configured server only', async () => {
  dns.add('example.test', 'MX', { preference: 10, exchange: 'mx1.example.test' });
  dns.add('mx1.example.test', 'A', '127.0.0.2');
  dns.add('example.test', 'TXT', ['v=spf1 ', 'ip4:127.0.0.2 -all']);
  dns.add('2.0.0.127.in-addr.arpa', 'PTR', 'mx1.example.test');
  assert.equal(await t.app.dns.resolveMx('example.test'), [{ priority: 10, exchange: 'mx1.example.test' }]);
  assert.equal(await t.app.dns.resolve4('mx1.example.test'), ['127.0.0.2']);
  assert.equal(await t.app.dns.resolveTxt('example.test'), [['v=spf1 ', 'ip4:127.0.0.2 -all']]);
  assert.equal(await t.app.dns.reverse('127.0.0.2'), ['mx1.example.test']);
  assert.ok(dns.queries.some((q) => q.name === 'example.test' && q.type === 'MX'), 'the query reached the kit server');
  assert.equal(t.app.dns.getServers(), [dns.address]);
});

test('reverse lookups ask DNS, never /etc/hosts, for IPv4 and IPv6', async () => {
  dns.add('1.0.0.127.in-addr.arpa', 'PTR', 'box.example.test');
  assert.equal(await reverseLookup(t.app.dns, '127.0.0.1'), ['box.example.test'], '/etc/hosts would say localhost');
  assert.is(arpaName('2001:db8::1'), '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa');
  dns.add(arpaName('2001:db8::1'), 'PTR', 'v6.example.test');
  assert.equal(await reverseLookup(t.app.dns, '2001:db8::1'), ['v6.example.test']);
});

test('answers too large for UDP arrive complete over TCP', async () => {
  for (let i = 0; i < 20; i++) dns.add('big.example.test', 'TXT', `record-${i}-${'x'.repeat(90)}`);
  const txt = await t.app.dns.resolveTxt('big.example.test');
  assert.is(txt.length, 20);
  assert.ok(dns.queries.some((q) => q.name === 'big.example.test' && q.transport === 'tcp'));
});

test('NXDOMAIN and NODATA come back as errors the callers can tell apart', async () => {
  const code = async (p: Promise<unknown>) => p.then(() => 'ok', (e: NodeJS.ErrnoException) => e.code);
  assert.is(await code(t.app.dns.resolveMx('nowhere.test')), 'ENOTFOUND');
  assert.is(await code(t.app.dns.resolveMx('mx1.example.test')), 'ENODATA');
});

test.run();
