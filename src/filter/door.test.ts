// The door's evidence in words (filter/door.ts), table by table: what a HELO name says of a client (this box's
// name or domains, an address literal that is not the client's, a bare address), what its reverse DNS says,
// and the texts of blocklist listings, each with the weight it leans by.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DOOR_WEIGHTS, dnsblSignal, heloSignal, rdnsSignal, uriblSignal } from './door.ts';

const ours = { hostname: 'mx.example.com', isOurDomain: (name: string) => name === 'example.com' || name === 'shop.example' };

test('a HELO name that claims to be this box or one of its domains', () => {
  for (const helo of ['mx.example.com', 'MX.Example.COM.', 'example.com', 'shop.example']) {
    const s = heloSignal(helo, '192.0.2.7', ours);
    assert.ok(s, helo);
    assert.is(s!.kind, 'helo');
    assert.is(s!.weight, DOOR_WEIGHTS.heloOurs);
    assert.match(s!.detail, /192\.0\.2\.7 introduced itself \(HELO\) as .*this box's own name/);
  }
  // A host of a customer's own domain (its office server) is not a claim to be this box.
  for (const helo of ['office.example.com', 'mail.sender.example', 'localhost.localdomain']) assert.is(heloSignal(helo, '192.0.2.7', ours), null, helo);
});

test('a HELO address: another address, a bare one, or the client\'s own literal (RFC 5321 4.1.3)', () => {
  const other = heloSignal('[198.51.100.1]', '192.0.2.7', ours);
  assert.equal(other, { kind: 'helo', detail: 'The sending server 192.0.2.7 introduced itself (HELO) as [198.51.100.1], another address', weight: DOOR_WEIGHTS.heloOtherAddress });
  assert.is(heloSignal('198.51.100.1', '192.0.2.7', ours)?.weight, DOOR_WEIGHTS.heloOtherAddress, 'bare and not its own');
  assert.is(heloSignal('192.0.2.7', '192.0.2.7', ours)?.weight, DOOR_WEIGHTS.heloBareAddress, 'bare but its own');
  assert.match(heloSignal('192.0.2.7', '192.0.2.7', ours)!.detail, /bare address 192\.0\.2\.7 instead of a host name/);
  assert.is(heloSignal('[192.0.2.7]', '192.0.2.7', ours), null, 'its own address, written as RFC 5321 wants');
  assert.is(heloSignal('[IPv6:2001:DB8::7]', '2001:db8:0:0::7', ours), null, 'the same IPv6 address spelled another way');
  assert.is(heloSignal('[IPv6:2001:db8::8]', '2001:db8::7', ours)?.weight, DOOR_WEIGHTS.heloOtherAddress);
  assert.is(heloSignal('[192.0.2.7]', '::ffff:192.0.2.7', ours), null, 'an IPv4-mapped client is its IPv4 address');
  assert.is(heloSignal('', '192.0.2.7', ours), null);
});

test('reverse DNS: none, not pointing back, not confirmed in time, confirmed', () => {
  assert.equal(rdnsSignal('192.0.2.7', null, 'no'), { kind: 'rdns', detail: 'The sending server 192.0.2.7 has no reverse DNS (PTR) name', weight: DOOR_WEIGHTS.noPtr });
  assert.equal(rdnsSignal('192.0.2.7', 'mail.sender.example', 'no'), { kind: 'rdns', detail: 'The reverse DNS name of 192.0.2.7, mail.sender.example, does not point back to it', weight: DOOR_WEIGHTS.ptrNotConfirmed });
  assert.is(rdnsSignal('192.0.2.7', 'mail.sender.example', 'unknown')?.weight, DOOR_WEIGHTS.ptrUnconfirmed);
  assert.is(rdnsSignal('192.0.2.7', 'mail.sender.example', 'yes'), null);
});

test('listings in words, leaning to spam', () => {
  assert.equal(dnsblSignal('zen.spamhaus.org', '192.0.2.7', ['127.0.0.2', '127.0.0.4']), { kind: 'dnsbl', detail: 'The sending server 192.0.2.7 is listed in zen.spamhaus.org (127.0.0.2, 127.0.0.4)', weight: DOOR_WEIGHTS.dnsbl });
  assert.equal(uriblSignal('dbl.spamhaus.org', 'spam.example', ['127.0.1.2']), { kind: 'uribl', detail: 'The message links to spam.example, which is listed in dbl.spamhaus.org (127.0.1.2)', weight: DOOR_WEIGHTS.uribl });
  for (const w of Object.values(DOOR_WEIGHTS)) assert.ok(w > 0.5 && w < 1, 'evidence leans to spam, and only a listing comes near deciding alone');
});

test.run();
