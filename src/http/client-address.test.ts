// Catalogue AUTH-14, the address part: which hop of X-Forwarded-For or Forwarded is the client, for what
// trusted_proxies lists. A client's own entries lie left of what the proxies append and are never read.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { clientKey, inRanges } from '../dns/ip-ranges.ts';
import { forwardedClient, forwardedHops } from './client-address.ts';

const proxies = inRanges(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
const client = (peer: string, headers: Record<string, string>) => (proxies(peer) ? forwardedClient(peer, forwardedHops(headers), proxies) : peer);

test('a trusted peer: the rightmost hop that is not a trusted proxy', () => {
  assert.is(client('127.0.0.1', { 'x-forwarded-for': '203.0.113.9' }), '203.0.113.9');
  assert.is(client('127.0.0.1', { 'x-forwarded-for': '198.51.100.1, 203.0.113.9' }), '203.0.113.9', 'what the client wrote itself is left of it');
  assert.is(client('127.0.0.1', { 'x-forwarded-for': '203.0.113.9, 10.2.3.4' }), '203.0.113.9', 'a second proxy in the chain is skipped');
  assert.is(client('127.0.0.1', { 'x-forwarded-for': '10.9.9.9, 10.2.3.4' }), '10.9.9.9', 'all trusted: the farthest');
  assert.is(client('127.0.0.1', {}), '127.0.0.1', 'no header: the proxy itself');
  assert.is(client('::ffff:127.0.0.1', { 'x-forwarded-for': '::ffff:203.0.113.9' }), '203.0.113.9');
  assert.is(client('127.0.0.1', { 'x-forwarded-for': '[2001:DB8::5]:4711' }), '2001:db8::5');
  assert.is(client('127.0.0.1', { 'x-forwarded-for': '203.0.113.9:51000' }), '203.0.113.9');
});

test('an untrusted peer is the client, whatever it says', () => {
  assert.is(client('192.0.2.50', { 'x-forwarded-for': '127.0.0.1' }), '192.0.2.50');
  assert.is(client('192.0.2.50', { forwarded: 'for=203.0.113.9' }), '192.0.2.50');
});

test('an unreadable hop stops the walk at the last proxy', () => {
  assert.is(client('127.0.0.1', { 'x-forwarded-for': '203.0.113.9, unknown' }), '127.0.0.1');
  assert.is(client('127.0.0.1', { 'x-forwarded-for': 'nonsense, 203.0.113.9' }), '203.0.113.9');
  assert.is(client('127.0.0.1', { 'x-forwarded-for': ' , ' }), '127.0.0.1');
  assert.is(client('127.0.0.1', { 'x-forwarded-for': '999.1.1.1' }), '127.0.0.1');
});

test('Forwarded (RFC 7239) when there is no X-Forwarded-For; X-Forwarded-For first when both are there', () => {
  assert.is(client('127.0.0.1', { forwarded: 'for=192.0.2.60;proto=http;by=203.0.113.43' }), '192.0.2.60');
  assert.is(client('127.0.0.1', { forwarded: 'for="[2001:db8:cafe::17]:4711"' }), '2001:db8:cafe::17');
  assert.is(client('127.0.0.1', { forwarded: 'for=198.51.100.17, for=192.0.2.60' }), '192.0.2.60');
  assert.is(client('127.0.0.1', { forwarded: 'For=_hidden' }), '127.0.0.1', 'an obfuscated identifier');
  assert.is(client('127.0.0.1', { forwarded: 'for=192.0.2.60', 'x-forwarded-for': '203.0.113.9' }), '203.0.113.9');
});

test('trusted ranges: addresses, CIDR, IPv4-mapped and case', () => {
  assert.ok(proxies('10.255.0.1'));
  assert.ok(proxies('::ffff:10.0.0.1'));
  assert.ok(proxies('FD12::1'));
  assert.not.ok(proxies('11.0.0.1'));
  assert.not.ok(proxies('not an address'));
  assert.not.ok(inRanges([])('127.0.0.1'));
});

test('clientKey: an IPv4 address is itself; an IPv6 address counts as its /64, however it is written', () => {
  assert.is(clientKey('203.0.113.9'), '203.0.113.9');
  const key = clientKey('2001:db8:1:2::5');
  for (const same of ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002::', '2001:db8:1:2:0:0:0:1', '2001:db8:1:2::1.2.3.4']) assert.is(clientKey(same), key, same);
  for (const other of ['2001:db8:1:3::5', '2001:db8::5', '::1']) assert.is.not(clientKey(other), key, other);
});

test.run();
