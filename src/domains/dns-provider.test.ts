// GET /dns/provider over real HTTP and real DNS: the zone apex found by walking up to the SOA, the live
// nameservers and the provider they belong to, the hosts to type relative to the zone, the inbound MX
// state, the DMARC recommendation and what is verified.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startTestApp, seedWorkspace, request, type TestApp } from '../testkit/app.ts';

let dns: DnsServer;
let t: TestApp;
let key: string;


test.before(async () => {
  dns = await startDnsServer();
  dns.add('mx.mailwright.test', 'A', '127.0.0.1');
  dns.addZone('cf-example.test', ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com']);
  dns.addZone('aws-example.test', ['ns-1536.awsdns-00.co.uk', 'ns-0.awsdns-00.com', 'ns-1024.awsdns-00.org', 'ns-512.awsdns-00.net']);
  dns.addZone('own-dns.test', ['ns1.own-dns.test', 'ns2.own-dns.test']);
  t = await startTestApp({ env: { MAILWRIGHT_DNS_SERVERS: dns.address } });
  key = (await seedWorkspace(t)).key;
});
test.after(async () => {
  await t.stop();
  await dns.close();
});

const addDomain = async (name: string) => (await request(`${t.api}/domains`, { body: { name }, key })).body;
const detect = (id: string) => request(`${t.api}/dns/provider?domain_id=${id}`, { key });

test('a subdomain on Cloudflare: zone is the parent, hosts are relative to it', async () => {
  const d = await addDomain('mail.cf-example.test');
  const res = await detect(d.id);
  assert.is(res.status, 200, JSON.stringify(res.body));
  const body = res.body;
  assert.equal([body.detectionStatus, body.detected, body.zone], ['detected', 'Cloudflare', 'cf-example.test']);
  assert.equal(body.nameservers, ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com']);
  const selector = d.records.find((r: any) => r.record === 'DKIM').name.split('.')[0];
  assert.equal(body.recordHosts, {
    dkim: `${selector}._domainkey.mail`,
    returnPathMx: 'bounces.mail',
    returnPathSpf: 'bounces.mail',
    dmarc: '_dmarc.mail',
    inboundMx: 'mail',
  });
  assert.equal(body.inbound, { available: true, domain: null, status: 'not_configured', record: null });
  const dmarc = body.recommendations.find((r: any) => r.record === 'DMARC');
  assert.equal([dmarc.type, dmarc.name, dmarc.host, dmarc.value], ['TXT', '_dmarc.mail.cf-example.test', '_dmarc.mail', 'v=DMARC1; p=none; rua=mailto:dmarc-reports@bounces.mail.cf-example.test;']);
  assert.equal(body.authentication, { verified: false, dkim: false, spf: false, returnPath: false, dmarc: false });
  assert.equal(body.providers.domainConnect, { available: false, providerName: null });
});

test('a zone apex on Route 53; after inbound setup and verification the state shows', async () => {
  const d = await addDomain('aws-example.test');
  await request(`${t.api}/domains/${d.id}/inbound/setup`, { method: 'POST', key });
  dns.publish(d.records);
  await request(`${t.api}/domains/${d.id}/verify`, { method: 'POST', key });
  const body = (await detect(d.id)).body;
  assert.equal([body.detectionStatus, body.detected, body.zone], ['detected', 'Amazon Route 53', 'aws-example.test']);
  assert.is(body.recordHosts.inboundMx, '@');
  assert.is(body.recordHosts.returnPathMx, 'bounces');
  assert.equal(body.inbound, { available: true, domain: 'aws-example.test', status: 'dns_pending', record: { type: 'MX', name: 'aws-example.test', value: '10 mx.mailwright.test' } });
  assert.equal(body.authentication, { verified: true, dkim: true, spf: true, returnPath: true, dmarc: true });
});

test('nameservers of no known provider: unknown', async () => {
  const d = await addDomain('own-dns.test');
  const body = (await detect(d.id)).body;
  assert.equal([body.detectionStatus, body.detected, body.zone], ['unknown', 'unknown', 'own-dns.test']);
  assert.equal(body.nameservers, ['ns1.own-dns.test', 'ns2.own-dns.test']);
});

test('a domain with no zone in DNS, a DNS failure, and a missing domain_id', async () => {
  const nowhere = await addDomain('not-registered.test');
  assert.is((await detect(nowhere.id)).body.detectionStatus, 'no_nameservers');
  const broken = await addDomain('broken.cf-example.test');
  dns.fail('cf-example.test', 'NS', 'SERVFAIL');
  const res = await detect(broken.id);
  assert.is(res.status, 200);
  assert.is(res.body.detectionStatus, 'error');
  dns.unfail();
  const missing = await request(`${t.api}/dns/provider`, { key });
  assert.equal([missing.status, missing.body.error.code], [400, 'validation_error']);
  assert.match(missing.body.error.message, /^domain_id: /);
  assert.is((await request(`${t.api}/dns/provider?domain_id=dom_nope`, { key })).status, 404);
});

test.run();
