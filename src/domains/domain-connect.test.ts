// GET /dns/domain-connect/connect over real HTTP, real DNS and a local HTTPS DNS provider: a supported
// provider gets a consent URL signed with the box's key (checked as the provider would, against the key
// the operator publishes), an unsupported one 409, hostile settings are refused, `next` must be ours.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createPublicKey } from 'node:crypto';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startDomainConnectProvider, type DomainConnectProvider } from '../testkit/domain-connect-provider.ts';
import { startTestApp, seedWorkspace, request, runCli, sqliteOnly, type TestApp } from '../testkit/app.ts';
import { loadOrCreateSigningKey, publicKeyRecord, verifyConsentUrl } from '../dns/domain-connect-keys.ts';

const ZONE = 'dc-example.test';
const PUBLIC = 'https://mail.box.test';
let dns: DnsServer;
let provider: DomainConnectProvider;
let t: TestApp;
let key: string;
let domain: any;

test.before(async () => {
  dns = await startDnsServer();
  provider = await startDomainConnectProvider();
  dns.addZone(ZONE, ['ns1.provider.test']);
  dns.add('dc.provider.test', 'A', '127.0.0.1');
  dns.add(`_domainconnect.${ZONE}`, 'TXT', `dc.provider.test:${provider.port}`);
  t = await startTestApp({
    fetchCa: provider.ca,
    env: { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_PUBLIC_URL: PUBLIC, MAILWRIGHT_DOMAIN_CONNECT_PROVIDER_ID: 'box.test' },
  });
  key = (await seedWorkspace(t)).key;
  domain = (await request(`${t.api}/domains`, { body: { name: `mail.${ZONE}` }, key })).body;
});
test.after(async () => {
  await t.stop();
  await provider.close();
  await dns.close();
});

const connect = (next = `${PUBLIC}/dashboard/domains/done`, id = domain.id) =>
  request(`${t.api}/dns/domain-connect/connect?domain_id=${id}&next=${encodeURIComponent(next)}`, { key });

test('a supporting provider: a consent URL for the sync flow, signed with the box key', async () => {
  provider.reset();
  const res = await connect();
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.providerName, 'Test DNS Provider');
  const url = new URL(res.body.url);
  assert.is(`${url.origin}${url.pathname}`, `${provider.url}/ux/v2/domainTemplates/providers/box.test/services/mailwright/apply`);
  const q = url.searchParams;
  const dkim = domain.records.find((r: any) => r.record === 'DKIM');
  assert.equal(
    [q.get('domain'), q.get('host'), q.get('dkimselector'), q.get('dkimkey'), q.get('mailhost'), q.get('redirect_uri'), q.get('state'), q.get('key')],
    [ZONE, 'mail', dkim.name.split('.')[0], dkim.value.split('p=')[1], 'mx.mailwright.test', `${PUBLIC}/dashboard/domains/done`, domain.id, '_dck1'],
  );
  assert.is(q.get('groupId'), 'dkim,returnpath,dmarc', 'no DMARC published yet, so the template may add one');
  const signingKey = await loadOrCreateSigningKey(t.dataDir);
  assert.ok(verifyConsentUrl(res.body.url, createPublicKey(signingKey)), 'the provider can verify the signature');
  const tampered = res.body.url.replace(`state=${domain.id}`, 'state=dom_other');
  assert.not.ok(verifyConsentUrl(tampered, createPublicKey(signingKey)));
  assert.ok(provider.requests.some((r) => r.path === `/v2/${ZONE}/settings`), 'settings were read');
  assert.ok(provider.requests.some((r) => r.path === '/api/v2/domainTemplates/providers/box.test/services/mailwright'), 'template support was asked');
  assert.not.ok(provider.requests.some((r) => r.headers.authorization || r.headers.cookie), 'no credentials leave the box');
});

test('an existing DMARC policy is left alone: the dmarc group is not offered', async () => {
  dns.set(`_dmarc.mail.${ZONE}`, 'TXT', ['v=DMARC1; p=reject;']);
  const q = new URL((await connect()).body.url).searchParams;
  assert.is(q.get('groupId'), 'dkim,returnpath');
  dns.remove(`_dmarc.mail.${ZONE}`);
});

test('provider detection reports Domain Connect as available', async () => {
  const res = await request(`${t.api}/dns/provider?domain_id=${domain.id}`, { key });
  assert.equal(res.body.providers.domainConnect, { available: true, providerName: 'Test DNS Provider' });
});

// doctor opens the data directory's SQLite database: on PostgreSQL it has no store to read yet.
sqliteOnly(test)('doctor prints the key record the operator must publish, and accepts it once published', async () => {
  const signingKey = await loadOrCreateSigningKey(t.dataDir);
  let res = await runCli(['doctor'], t.env);
  assert.ok(res.stdout.includes(`fix: publish _dck1.box.test TXT "${publicKeyRecord(signingKey)}"`), res.stdout);
  dns.set('_dck1.box.test', 'TXT', [publicKeyRecord(signingKey)]);
  res = await runCli(['doctor'], t.env);
  assert.match(res.stdout, /✓ _dck1\.box\.test TXT publishes the signing key/);
});

test('a provider without the template is 409; without Domain Connect at all, 409', async () => {
  provider.setTemplateSupported(false);
  let res = await connect();
  assert.equal([res.status, res.body.error.code], [409, 'domain_connect_unsupported']);
  assert.match(res.body.error.message, /not this box's template/);
  assert.equal((await request(`${t.api}/dns/provider?domain_id=${domain.id}`, { key })).body.providers.domainConnect, { available: false, providerName: 'Test DNS Provider' });
  provider.reset();
  dns.remove(`_domainconnect.${ZONE}`);
  res = await connect();
  assert.equal([res.status, res.body.error.code], [409, 'domain_connect_unsupported']);
  assert.match(res.body.error.message, /no _domainconnect/);
  dns.add(`_domainconnect.${ZONE}`, 'TXT', `dc.provider.test:${provider.port}`);
});

test('hostile settings are refused: javascript:, data:, http: and private-address URLs', async () => {
  for (const urlSyncUX of ['javascript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'http://dc.provider.test/ux']) {
    provider.setSettings((zone) => ({ ...provider.defaultSettings(zone), urlSyncUX }));
    const res = await connect();
    assert.equal([res.status, res.body.error.code], [409, 'domain_connect_unsupported'], urlSyncUX);
    assert.not.ok(JSON.stringify(res.body).includes('alert'), 'the payload is not echoed');
  }
  provider.reset();
  const strict = await startTestApp({ fetchCa: provider.ca, env: { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_PUBLIC_URL: PUBLIC } });
  try {
    const k = (await seedWorkspace(strict)).key;
    const d = (await request(`${strict.api}/domains`, { body: { name: `mail.${ZONE}` }, key: k })).body;
    const before = provider.requests.length;
    const res = await request(`${strict.api}/dns/domain-connect/connect?domain_id=${d.id}&next=${encodeURIComponent(PUBLIC + '/x')}`, { key: k });
    assert.equal([res.status, res.body.error.code], [409, 'domain_connect_unsupported'], 'a provider on a loopback address is refused without MAILWRIGHT_ALLOW_PRIVATE_FETCH');
    assert.is(provider.requests.length, before, 'and nothing was fetched from it');
  } finally {
    await strict.stop();
  }
});

test('an unreachable or failing provider is 502, never 500', async () => {
  provider.setStatus(500, 'oops', 'text/plain');
  const res = await connect();
  assert.equal([res.status, res.body.error.code], [502, 'dns_provider_unreachable']);
  provider.reset();
});

test('next must be a URL on the box public origin', async () => {
  for (const next of ['https://evil.example/steal', 'javascript:alert(1)', '/relative', 'http://mail.box.test/x', 'https://mail.box.test.evil.example/']) {
    const res = await connect(next);
    assert.equal([res.status, res.body.error.code], [400, 'validation_error'], next);
    assert.match(res.body.error.message, /^next: /);
  }
  assert.is((await request(`${t.api}/dns/domain-connect/connect?domain_id=${domain.id}`, { key })).status, 400, 'next is required');
});

test.run();
