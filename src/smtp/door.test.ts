// Blocklists and the door's evidence end to end: real SMTP to the MX listener from clients on
// 127.0.0.0/8, the test DNS server answering the blocklists. A client listed in a refuse-mode zone gets 554
// 5.7.1 naming the list at RCPT and nothing is stored; one never looked up until it names a recipient of ours;
// NXDOMAIN, Spamhaus's 127.255.255.254 and a timeout never refuse; a second connection is answered from the
// cache; a score-mode listing, reverse DNS, HELO and URI blocklist listings reach the analysed message the
// writer files (its `evidence`, read as the writer gets it); the lookups are counted on /metrics.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { watchEvidence } from '../testkit/evidence.ts';
import type { Signal } from '../filter/signals.ts';
import { until } from '../testkit/within.ts';

let scene: InboundScene;
/** The evidence of every message the writer was handed, in order. */
let filed: Signal[][];

test.before(async () => {
  scene = await startInboundScene({ env: { MAILWRIGHT_DNSBL: 'bl.test, score.test=score', MAILWRIGHT_URIBL: 'uribl.test', MAILWRIGHT_DNSBL_TIMEOUT: '400ms' } });
  for (const zone of ['bl.test', 'score.test', 'uribl.test']) scene.dns.addZone(zone);
  filed = watchEvidence(scene.t);
});
test.after(() => scene.stop());

const message = (subject: string, body = 'Hello Bob, see you tomorrow.') =>
  `From: alice@sender.example\nTo: ${scene.inbox.address}\nSubject: ${subject}\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.example>\n\n${body}\n`;
const asked = (name: string, type = 'A') => scene.dns.queries.filter((q) => q.name === name && q.type === type).length;
const logged = (msg: string) => scene.t.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === msg);
const kinds = (evidence: Signal[]) => evidence.map((s) => s.kind).sort();
async function metric(line: string): Promise<number> {
  const text = await (await fetch(`${scene.t.url}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.split(' ').pop()) : 0;
}

test('a client listed in a refuse-mode list gets 554 5.7.1 at RCPT naming the list and its reason; nothing is stored', async () => {
  scene.dns.set('2.0.0.127.bl.test', 'A', ['127.0.0.2']).set('2.0.0.127.bl.test', 'TXT', ['https://bl.test/query/127.0.0.2']);
  const before = (await scene.stored()).length;
  const reply = await scene.deliver(message('listed'), { localAddress: '127.0.0.2' });
  assert.is(reply.code, 554);
  assert.is(reply.text, '5.7.1 Service unavailable; client [127.0.0.2] blocked using bl.test; https://bl.test/query/127.0.0.2');
  assert.is((await scene.stored()).length, before);
  const listed = logged('client listed in a DNS blocklist').find((l) => l.ip === '127.0.0.2');
  assert.ok(listed && listed.level === 'info' && listed.zone === 'bl.test' && listed.action === 'refuse', JSON.stringify(listed));
  assert.ok(logged('recipient refused').some((l) => l.ip === '127.0.0.2' && String(l.reply).includes('blocked using bl.test')));
  assert.is(await metric('mailwright_inbound_rejected_total{reason="blocklisted"}'), 1);
  assert.is(await metric('mailwright_blocklist_lookups_total{list="dnsbl",zone="bl.test",outcome="listed"}'), 1);
});

test('a second connection of the listed client is answered from the cache: no new query', async () => {
  const reply = await scene.deliver(message('listed again'), { localAddress: '127.0.0.2' });
  assert.is(reply.code, 554);
  assert.is(asked('2.0.0.127.bl.test'), 1);
  assert.is(asked('2.0.0.127.bl.test', 'TXT'), 1, 'the reason is kept too');
  assert.is(await metric('mailwright_blocklist_lookups_total{list="dnsbl",zone="bl.test",outcome="listed"}'), 1);
});

test('a client that names no recipient of ours is never looked up', async () => {
  scene.dns.set('12.0.0.127.bl.test', 'A', ['127.0.0.2']);
  const reply = await scene.deliver(message('unknown'), { localAddress: '127.0.0.12', to: [`nobody@${scene.domain.name}`] });
  assert.is(reply.code, 550);
  assert.is(asked('12.0.0.127.bl.test'), 0);
});

test('not listed (NXDOMAIN): accepted, with no blocklist evidence', async () => {
  const reply = await scene.deliver(message('clean'), { localAddress: '127.0.0.3' });
  assert.is(reply.code, 250, reply.text);
  assert.is(asked('3.0.0.127.bl.test'), 1);
  assert.not.ok(filed.at(-1)!.some((s) => s.kind === 'dnsbl'));
});

test("Spamhaus's 127.255.255.254 (a public resolver) is not a listing, and is warned about once", async () => {
  scene.dns.set('4.0.0.127.bl.test', 'A', ['127.255.255.254']).set('14.0.0.127.bl.test', 'A', ['127.255.255.254']);
  assert.is((await scene.deliver(message('public resolver'), { localAddress: '127.0.0.4' })).code, 250);
  assert.is((await scene.deliver(message('public resolver again'), { localAddress: '127.0.0.14' })).code, 250);
  const warnings = scene.t.logs.filter((l) => l.includes('bl.test refused the query (127.255.255.254)'));
  assert.is(warnings.length, 1);
  assert.is(await metric('mailwright_blocklist_lookups_total{list="dnsbl",zone="bl.test",outcome="unusable"}'), 2);
});

test('a blocklist that does not answer never refuses mail', async () => {
  scene.dns.set('5.0.0.127.bl.test', 'A', ['127.0.0.2']).fail('5.0.0.127.bl.test', '*', 'timeout');
  const reply = await scene.deliver(message('timeout'), { localAddress: '127.0.0.5' });
  assert.is(reply.code, 250, reply.text);
  assert.is(await metric('mailwright_blocklist_lookups_total{list="dnsbl",zone="bl.test",outcome="timeout"}'), 1);
  scene.dns.unfail('5.0.0.127.bl.test');
});

test('a listing in a score-mode list lets the message in, as evidence for the spam filter', async () => {
  scene.dns.set('6.0.0.127.score.test', 'A', ['127.0.0.3']);
  const reply = await scene.deliver(message('scored'), { localAddress: '127.0.0.6' });
  assert.is(reply.code, 250, reply.text);
  assert.ok(filed.at(-1)!.some((s) => s.kind === 'dnsbl' && s.detail === 'The sending server 127.0.0.6 is listed in score.test (127.0.0.3)' && s.weight > 0.9), JSON.stringify(filed.at(-1)));
  assert.ok(logged('client listed in a DNS blocklist').some((l) => l.ip === '127.0.0.6' && l.action === 'score'));
});

test('reverse DNS and HELO: none and a claim to be this box count; a confirmed name and the box itself do not', async () => {
  assert.is((await scene.deliver(message('no ptr, our name'), { localAddress: '127.0.0.7', helo: 'mx.mailwright.test' })).code, 250);
  assert.equal(kinds(filed.at(-1)!), ['helo', 'rdns']);
  assert.match(filed.at(-1)!.find((s) => s.kind === 'helo')!.detail, /introduced itself \(HELO\) as mx\.mailwright\.test, this box's own name/);
  assert.match(filed.at(-1)!.find((s) => s.kind === 'rdns')!.detail, /127\.0\.0\.7 has no reverse DNS/);

  scene.dns.set('8.0.0.127.in-addr.arpa', 'PTR', ['mail.sender.example']).set('mail.sender.example', 'A', ['127.0.0.8']);
  assert.is((await scene.deliver(message('confirmed ptr'), { localAddress: '127.0.0.8', helo: 'mail.sender.example' })).code, 250);
  assert.equal(filed.at(-1), [], 'a forward-confirmed name and an honest HELO say nothing');

  scene.dns.set('9.0.0.127.in-addr.arpa', 'PTR', ['mail.sender.example']);
  assert.is((await scene.deliver(message('unconfirmed ptr, other address'), { localAddress: '127.0.0.9', helo: '[127.0.0.8]' })).code, 250);
  assert.equal(kinds(filed.at(-1)!), ['helo', 'rdns']);
  assert.match(filed.at(-1)!.find((s) => s.kind === 'rdns')!.detail, /mail\.sender\.example, does not point back/);

  // The box's own loopback address is a local program, not a stranger (the domain of an inbox is ours too).
  assert.is((await scene.deliver(message('local program'), { localAddress: '127.0.0.1', helo: scene.domain.name })).code, 250);
  assert.equal(filed.at(-1), []);
});

test('domains of links listed in a URI blocklist become evidence; each is asked once for many messages', async () => {
  scene.dns.set('bad-links.example.uribl.test', 'A', ['127.0.1.2']);
  const body = 'Cheap pills at http://www.bad-links.example/buy and <https://shop.good-links.example/>, see www.bad-links.example/more';
  scene.dns.set('10.0.0.127.in-addr.arpa', 'PTR', ['mta.sender.example']).set('mta.sender.example', 'A', ['127.0.0.10']);
  assert.is((await scene.deliver(message('links', body), { localAddress: '127.0.0.10', helo: 'mta.sender.example' })).code, 250);
  assert.equal(filed.at(-1), [{ kind: 'uribl', detail: 'The message links to bad-links.example, which is listed in uribl.test (127.0.1.2)', weight: 0.9 }]);
  assert.is((await scene.deliver(message('links again', body), { localAddress: '127.0.0.10', helo: 'mta.sender.example' })).code, 250);
  assert.equal(kinds(filed.at(-1)!), ['uribl']);
  assert.is(asked('bad-links.example.uribl.test'), 1);
  assert.is(asked('good-links.example.uribl.test'), 1);
  await until(2000, 'the listing logged', () => logged('link domain listed in a URI blocklist').some((l) => l.domain === 'bad-links.example' && l.level === 'info'));
  assert.is(await metric('mailwright_blocklist_lookups_total{list="uribl",zone="uribl.test",outcome="listed"}'), 1);
  assert.is(await metric('mailwright_blocklist_lookups_total{list="uribl",zone="uribl.test",outcome="clear"}'), 1);
});

test.run();
