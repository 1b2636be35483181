// Raw DNS queries against the test kit's DNS server: TLSA records read, the AD bit seen (or not), a large
// answer fetched again over TCP, SERVFAIL as an error, and whether the resolver validates.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { parseServer, rawQuery, resolverValidates } from './dnssec.ts';

let dns: DnsServer;

test.before(async () => {
  dns = await startDnsServer();
});
test.after(() => dns.close());

const tlsa = (n: number) => ({ usage: 3, selector: 1, matchingType: n === 0 ? 1 : 2, certificate: randomBytes(n === 0 ? 32 : 64) });

test('TLSA records come back with the AD bit only where the server vouches for them', async () => {
  const record = tlsa(0);
  dns.set('_25._tcp.mx.signed.test', 'TLSA', [record]);
  dns.set('_25._tcp.mx.plain.test', 'TLSA', [record]);
  dns.authenticate('signed.test');
  const signed = await rawQuery([dns.address], '_25._tcp.mx.signed.test', 'TLSA');
  assert.is(signed.authenticated, true);
  assert.equal(signed.answers.map((a) => a.type === 'TLSA' && [a.data.usage, a.data.selector, a.data.matchingType, a.data.certificate.toString('hex')]), [[3, 1, 1, record.certificate.toString('hex')]]);
  const plain = await rawQuery([dns.address], '_25._tcp.mx.plain.test', 'TLSA');
  assert.is(plain.authenticated, false);
  assert.is(plain.answers.length, 1);
});

test('an answer too large for UDP is asked again over TCP', async () => {
  dns.set('_25._tcp.mx.big.test', 'TLSA', Array.from({ length: 24 }, (_, i) => tlsa(i + 1)));
  dns.resetQueries();
  const answer = await rawQuery([dns.address], '_25._tcp.mx.big.test', 'TLSA');
  assert.is(answer.answers.length, 24);
  assert.equal(dns.queries.map((q) => q.transport), ['udp', 'tcp']);
});

test('SERVFAIL is an error; the next server is asked', async () => {
  dns.fail('_25._tcp.mx.bogus.test', 'TLSA', 'SERVFAIL');
  try {
    await rawQuery([dns.address], '_25._tcp.mx.bogus.test', 'TLSA');
    assert.unreachable('SERVFAIL must throw');
  } catch (err) {
    assert.is((err as NodeJS.ErrnoException).code, 'SERVFAIL');
  }
  const second = await startDnsServer();
  try {
    second.set('_25._tcp.mx.bogus.test', 'TLSA', [tlsa(0)]);
    const answer = await rawQuery([dns.address, second.address], '_25._tcp.mx.bogus.test', 'TLSA');
    assert.is(answer.answers.length, 1);
  } finally {
    await second.close();
  }
});

test('the resolver validates when the root comes back with AD; a silent one does not', async () => {
  assert.equal(await resolverValidates([dns.address]), { validates: false, detail: 'answers come without the AD bit' });
  dns.authenticate('.');
  assert.equal(await resolverValidates([dns.address]), { validates: true, detail: 'answers carry the AD bit' });
  dns.authenticate('.', false);
  dns.fail('.', '*', 'timeout');
  try {
    const silent = await resolverValidates([dns.address], 300);
    assert.is(silent.validates, false);
    assert.match(silent.detail, /^the resolver did not answer/);
  } finally {
    dns.unfail('.');
  }
});

test('servers are read as dns_servers writes them', () => {
  assert.equal(parseServer('192.0.2.1'), { host: '192.0.2.1', port: 53 });
  assert.equal(parseServer('127.0.0.1:5353'), { host: '127.0.0.1', port: 5353 });
  assert.equal(parseServer('[2001:db8::1]:53'), { host: '2001:db8::1', port: 53 });
  assert.equal(parseServer('2001:db8::1'), { host: '2001:db8::1', port: 53 });
});

test.run();
