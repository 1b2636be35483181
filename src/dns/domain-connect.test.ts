// Domain Connect against the test kit's real DNS server and a fake DNS provider over real HTTPS: discovery,
// catalogue API-10b refusals, the template query, the signed consent URL, the signing key and the template file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createPublicKey, generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startDomainConnectProvider, type DomainConnectProvider } from '../testkit/domain-connect-provider.ts';
import { createResolver } from './resolver.ts';
import { fetchJson, FetchRefused, type FetchPolicy } from './safe-fetch.ts';
import {
  consentUrl,
  discoverSettings,
  DomainConnectError,
  parseSettings,
  supportsTemplate,
  TEMPLATE_VARIABLES,
  templateVariables,
  type ServiceIdentity,
  type Settings,
} from './domain-connect.ts';
import { loadOrCreateSigningKey, publicKeyFromRecords, publicKeyRecord, verifyConsentUrl } from './domain-connect-keys.ts';

const ZONE = 'customer.test';

let dns: DnsServer;
let provider: DomainConnectProvider;
let resolver: ReturnType<typeof createResolver>;
let lab: FetchPolicy;
let identity: ServiceIdentity;
let otherKey: KeyObject;
let tmp: string;

test.before(async () => {
  dns = await startDnsServer();
  provider = await startDomainConnectProvider({ hostname: 'dc.provider.test' });
  resolver = createResolver([dns.address], { timeoutMs: 500, tries: 1 });
  lab = { resolver, allowPrivate: true, ca: provider.ca, timeoutMs: 3000 };
  dns.add('dc.provider.test', 'A', '127.0.0.1');
  dns.add('ten.evil.test', 'A', '10.9.8.7');
  tmp = await mkdtemp(join(tmpdir(), 'mailwright-dc-test-'));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey;
  identity = { providerId: 'mailwright.example', serviceId: 'mailwright', keyHost: '_dck1', privateKey };
});

test.after(async () => {
  await provider.close();
  await dns.close();
  await rm(tmp, { recursive: true, force: true });
});

test.before.each(() => {
  provider.reset();
  dns.resetQueries();
  dns.set(`_domainconnect.${ZONE}`, 'TXT', [`dc.provider.test:${provider.port}/dc`]);
});

async function rejects<T extends Error>(work: Promise<unknown>, kind: new (...args: never[]) => T): Promise<T> {
  try {
    await work;
  } catch (err) {
    if (err instanceof kind) return err;
    throw new Error(`expected ${kind.name}, got ${String(err)}`);
  }
  throw new Error(`expected ${kind.name}, got a result`);
}

function throws<T extends Error>(work: () => unknown, kind: new (...args: never[]) => T): T {
  try {
    work();
  } catch (err) {
    if (err instanceof kind) return err;
    throw new Error(`expected ${kind.name}, got ${String(err)}`);
  }
  throw new Error(`expected ${kind.name}, got a result`);
}

const settings = (): Promise<Settings> => discoverSettings(ZONE, { resolver, fetch: lab }).then((s) => s!);

// --- Discovery ---

test('discovers settings through the _domainconnect TXT record and its path prefix', async () => {
  const found = await discoverSettings(ZONE, { resolver, fetch: lab });
  assert.equal(found, {
    providerId: 'provider.test',
    providerName: 'Test DNS',
    providerDisplayName: 'Test DNS Provider',
    urlSyncUX: `${provider.url}/ux`,
    urlAPI: `${provider.url}/api`,
    urlAsyncUX: `${provider.url}/async`,
    urlControlPanel: `${provider.url}/panel/${ZONE}`,
    width: 640,
    height: 480,
    nameServers: ['ns1.provider.test', 'ns2.provider.test'],
  });
  assert.equal(provider.requests.map((r) => r.path), [`/dc/v2/${ZONE}/settings`]);
});

test('no _domainconnect record, or no such zone: null, and nothing fetched', async () => {
  dns.remove(`_domainconnect.${ZONE}`);
  dns.add(ZONE, 'A', '203.0.113.1'); // the zone exists: NODATA
  assert.is(await discoverSettings(ZONE, { resolver, fetch: lab }), null);
  assert.is(await discoverSettings('absent.test', { resolver, fetch: lab }), null); // NXDOMAIN
  assert.is(provider.requests.length, 0);
  dns.remove(ZONE);
});

test('a DNS failure is an error, not "no Domain Connect"', async () => {
  dns.fail(`_domainconnect.${ZONE}`, 'TXT', 'SERVFAIL');
  try {
    const err = await rejects(discoverSettings(ZONE, { resolver, fetch: lab }), DomainConnectError);
    assert.is(err.code, 'dns_error');
  } finally {
    dns.unfail(`_domainconnect.${ZONE}`);
  }
});

test('a provider without settings for the zone (404) means null; a 500 is an error', async () => {
  provider.setStatus(404, '');
  assert.is(await discoverSettings(ZONE, { resolver, fetch: lab }), null);
  provider.setStatus(500, '{}');
  const err = await rejects(discoverSettings(ZONE, { resolver, fetch: lab }), DomainConnectError);
  assert.is(err.code, 'provider_error');
});

test('the _domainconnect host goes through the SSRF rules', async () => {
  dns.set(`_domainconnect.${ZONE}`, 'TXT', ['ten.evil.test/dc']);
  const err = await rejects(discoverSettings(ZONE, { resolver, fetch: { ...lab, allowPrivate: false } }), FetchRefused);
  assert.is(err.reason, 'address');
  dns.set(`_domainconnect.${ZONE}`, 'TXT', [`dc.provider.test:${provider.port}/dc`]);
  const loop = await rejects(discoverSettings(ZONE, { resolver, fetch: { ...lab, allowPrivate: false } }), FetchRefused);
  assert.is(loop.reason, 'address');
  assert.is(provider.requests.length, 0);
});

test('settings whose browser URL is javascript:, data:, http: or carries user info are refused', async () => {
  for (const bad of ['javascript:alert(1)', 'data:text/html,<script>alert(1)</script>', `http://dc.provider.test:${provider.port}/ux`, `https://u:p@dc.provider.test:${provider.port}/ux`]) {
    provider.setSettings((zone) => ({ ...provider.defaultSettings(zone), urlSyncUX: bad }));
    const err = await rejects(discoverSettings(ZONE, { resolver, fetch: lab }), FetchRefused);
    assert.match(err.message, /urlSyncUX/);
    assert.not.match(err.message, /alert\(|<script/, err.message);
  }
});

test('settings whose urlAPI is not https are refused, too', async () => {
  provider.setSettings((zone) => ({ ...provider.defaultSettings(zone), urlAPI: `http://dc.provider.test:${provider.port}/api` }));
  const err = await rejects(discoverSettings(ZONE, { resolver, fetch: lab }), FetchRefused);
  assert.is(err.reason, 'scheme');
  assert.match(err.message, /urlAPI/);
});

test('settings with a private or loopback IP-literal urlAPI or urlSyncUX are refused outside lab mode', () => {
  const good = { providerId: 'p.example', providerName: 'P', urlSyncUX: 'https://connect.p.example', urlAPI: 'https://api.p.example' };
  assert.is(parseSettings(good, { allowPrivate: false }).urlAPI, 'https://api.p.example');
  for (const url of ['https://10.0.0.5/api', 'https://[::1]/', 'https://169.254.169.254/', 'https://2130706433/']) {
    assert.is(throws(() => parseSettings({ ...good, urlAPI: url }, { allowPrivate: false }), FetchRefused).reason, 'address', url);
    assert.is(throws(() => parseSettings({ ...good, urlSyncUX: url }, { allowPrivate: false }), FetchRefused).reason, 'address', url);
  }
});

test('settings missing providerId, providerName or urlSyncUX, or not an object, are rejected', () => {
  const good = { providerId: 'p.example', providerName: 'P', urlSyncUX: 'https://connect.p.example', urlAPI: 'https://api.p.example' };
  for (const bad of [null, [], 'x', { ...good, providerId: '' }, { ...good, providerName: 7 }, { ...good, urlSyncUX: undefined }, { ...good, urlAPI: 'https://api.p.example/?q=1' }]) {
    assert.is(throws(() => parseSettings(bad, { allowPrivate: false }), DomainConnectError).code, 'bad_settings');
  }
  // Fields we do not use are dropped, not fatal, when unsafe.
  const lax = parseSettings({ ...good, urlControlPanel: 'javascript:alert(1)', width: 'wide' }, { allowPrivate: false });
  assert.is(lax.urlControlPanel, null);
  assert.is(lax.width, 750);
});

// --- Template support ---

test('template supported: GET under urlAPI with our ids, 2xx means yes', async () => {
  assert.is(await supportsTemplate(await settings(), identity, lab), true);
  assert.is(provider.requests.at(-1)!.path, '/api/v2/domainTemplates/providers/mailwright.example/services/mailwright');
});

test('template not supported: 404 means no', async () => {
  provider.setTemplateSupported(false);
  assert.is(await supportsTemplate(await settings(), identity, lab), false);
});

test('template query answering anything else is an error', async () => {
  const found = await settings();
  provider.setStatus(500, '{}');
  const err = await rejects(supportsTemplate(found, identity, lab), DomainConnectError);
  assert.is(err.code, 'provider_error');
  provider.redirectTo('https://elsewhere.example/');
  await rejects(supportsTemplate(found, identity, lab), FetchRefused);
});

test('template query to a urlAPI host resolving to a private address is refused without a request', async () => {
  const found = { ...(await settings()), urlAPI: `https://ten.evil.test:${provider.port}/api` };
  provider.requests.length = 0;
  const err = await rejects(supportsTemplate(found, identity, { ...lab, allowPrivate: false }), FetchRefused);
  assert.is(err.reason, 'address');
  assert.is(provider.requests.length, 0);
});

// --- Consent URL ---

const variables = { mailhost: 'mail.box.example', dkimselector: 'mw1', dkimkey: 'MIIBIjANBgkq+/AB==' };

function build(extra: Partial<Parameters<typeof consentUrl>[2]> = {}, found?: Settings): string {
  const base: Settings = found ?? parseSettings({ providerId: 'p.test', providerName: 'P', urlSyncUX: 'https://connect.p.test/ux/', urlAPI: 'https://api.p.test' }, { allowPrivate: false });
  return consentUrl(base, identity, { zone: ZONE, host: 'mail', variables, redirectUri: 'https://box.example/domains/1?done=1', state: 'st 8/9', ...extra });
}

test('consent URL: host, path and every parameter in order, sig and key last', () => {
  const url = new URL(build());
  assert.is(url.origin, 'https://connect.p.test');
  assert.is(url.pathname, '/ux/v2/domainTemplates/providers/mailwright.example/services/mailwright/apply');
  const entries = [...url.searchParams.entries()];
  assert.equal(entries.map(([k]) => k), ['domain', 'host', 'dkimkey', 'dkimselector', 'mailhost', 'redirect_uri', 'state', 'sig', 'key']);
  const get = (k: string) => url.searchParams.get(k);
  assert.is(get('domain'), ZONE);
  assert.is(get('host'), 'mail');
  assert.is(get('dkimkey'), 'MIIBIjANBgkq+/AB==');
  assert.is(get('dkimselector'), 'mw1');
  assert.is(get('mailhost'), 'mail.box.example');
  assert.is(get('redirect_uri'), 'https://box.example/domains/1?done=1');
  assert.is(get('state'), 'st 8/9');
  assert.is(get('key'), '_dck1');
  assert.is(Buffer.from(get('sig')!, 'base64').length, 256); // RSA 2048
});

test('consent URL: the signature is RSA-SHA256 over exactly the query before &sig=', () => {
  const url = build();
  const query = url.slice(url.indexOf('?') + 1);
  const signed = query.slice(0, query.indexOf('&sig='));
  const sig = decodeURIComponent(query.slice(query.indexOf('&sig=') + 5).split('&')[0]!);
  assert.ok(verify('sha256', Buffer.from(signed), createPublicKey(identity.privateKey), Buffer.from(sig, 'base64')));
  assert.not.match(signed, /(^|&)(sig|key)=/);
});

test('consent URL verifies with the public key in every form a provider may hold it', () => {
  const url = build();
  const pub = createPublicKey(identity.privateKey);
  assert.ok(verifyConsentUrl(url, pub));
  assert.ok(verifyConsentUrl(url, pub.export({ type: 'spki', format: 'pem' }) as string));
  assert.ok(verifyConsentUrl(url, publicKeyRecord(identity.privateKey)));
  assert.not.ok(verifyConsentUrl(url, otherKey));
});

test('consent URL: altering, dropping, adding or reordering any signed parameter breaks the signature', () => {
  const url = build();
  const pub = createPublicKey(identity.privateKey);
  const parsed = new URL(url);
  const names = [...parsed.searchParams.keys()].filter((k) => k !== 'sig' && k !== 'key');
  assert.is(names.length, 7);
  for (const name of names) {
    const altered = new URL(url);
    altered.searchParams.set(name, `${altered.searchParams.get(name)}x`);
    assert.not.ok(verifyConsentUrl(altered.href, pub), `altered ${name}`);
    const dropped = new URL(url);
    dropped.searchParams.delete(name);
    assert.not.ok(verifyConsentUrl(dropped.href, pub), `dropped ${name}`);
  }
  assert.not.ok(verifyConsentUrl(url.replace('&sig=', '&groupId=dkim&sig='), pub), 'added groupId');
  const query = url.slice(url.indexOf('?') + 1).split('&');
  [query[0], query[1]] = [query[1]!, query[0]!];
  assert.not.ok(verifyConsentUrl(`${url.slice(0, url.indexOf('?'))}?${query.join('&')}`, pub), 'reordered');
  assert.not.ok(verifyConsentUrl(url.replace(/&sig=[^&]+/, '&sig=AAAA'), pub), 'forged sig');
  assert.not.ok(verifyConsentUrl(url.replace(/&sig=[^&]+/, ''), pub), 'no sig');
  assert.not.ok(verifyConsentUrl(`${url}&sig=AAAA`, pub), 'two sigs');
  // Per spec, key is outside the signature: it only says where the provider finds the public key.
  assert.ok(verifyConsentUrl(url.replace('key=_dck1', 'key=_dck2'), pub));
});

test('consent URL survives browser URL normalisation: values with quote, space, & and unicode', () => {
  const url = build({ variables: { ...variables, mailhost: "o'brien & co", dkimselector: 'sél (1)*!' } });
  const normalised = new URL(url).href; // what a browser sends
  assert.is(normalised, url);
  assert.ok(verifyConsentUrl(normalised, createPublicKey(identity.privateKey)));
  assert.is(new URL(url).searchParams.get('mailhost'), "o'brien & co");
});

test('consent URL: empty host (or the zone itself) is omitted; an FQDN host is made relative; groupIds pass', () => {
  assert.is(new URL(build({ host: '' })).searchParams.has('host'), false);
  assert.is(new URL(build({ host: `${ZONE}.` })).searchParams.has('host'), false);
  assert.is(new URL(build({ host: `mail.${ZONE}` })).searchParams.get('host'), 'mail');
  assert.is(new URL(build({ state: undefined })).searchParams.has('state'), false);
  const grouped = new URL(build({ groupIds: ['dkim', 'returnpath'] }));
  assert.is(grouped.searchParams.get('groupId'), 'dkim,returnpath');
  assert.equal([...grouped.searchParams.keys()].slice(0, 3), ['domain', 'host', 'groupId']);
  assert.ok(verifyConsentUrl(grouped.href, createPublicKey(identity.privateKey)));
});

test('consent URL refuses variables that shadow protocol parameters, bad hosts, zones and redirects', () => {
  for (const name of ['sig', 'key', 'domain', 'redirect_uri', 'a b', 'x&y']) {
    assert.is(throws(() => build({ variables: { ...variables, [name]: 'v' } }), DomainConnectError).code, 'bad_request', name);
  }
  throws(() => build({ host: 'a/b' }), DomainConnectError);
  throws(() => build({ zone: 'not a zone' }), DomainConnectError);
  throws(() => build({ redirectUri: 'javascript:alert(1)' }), DomainConnectError);
  throws(() => build({ redirectUri: 'https://u:p@box.example/' }), DomainConnectError);
});

test('end to end: discover, query, then the provider accepts our signed apply request', async () => {
  const found = await settings();
  assert.ok(await supportsTemplate(found, identity, lab));
  const url = consentUrl(found, identity, { zone: ZONE, host: '', variables, redirectUri: 'https://box.example/done', state: 'abc' });
  assert.ok(url.startsWith(`${provider.url}/ux/v2/domainTemplates/providers/mailwright.example/services/mailwright/apply?domain=${ZONE}&`));
  provider.requireSignature(createPublicKey(identity.privateKey));
  assert.equal(await fetchJson(url, lab), { status: 200, body: { consent: true, providerId: 'mailwright.example', serviceId: 'mailwright' } });
  const seen = provider.requests.at(-1)!;
  assert.equal(seen.query.mailhost, 'mail.box.example');
  provider.requireSignature(otherKey);
  assert.is((await fetchJson(url, lab)).status, 403);
});

// --- Keys ---

test('publicKeyRecord: p=1,a=RS256,d=<base64 DER SPKI> of the signing key', () => {
  const record = publicKeyRecord(identity.privateKey);
  const match = /^p=1,a=RS256,d=([A-Za-z0-9+/]+={0,2})$/.exec(record);
  assert.ok(match, record);
  const der = createPublicKey({ key: Buffer.from(match![1]!, 'base64'), format: 'der', type: 'spki' }).export({ type: 'spki', format: 'der' });
  assert.equal(der, createPublicKey(identity.privateKey).export({ type: 'spki', format: 'der' }));
});

test('publicKeyFromRecords joins split records in part order', () => {
  const d = publicKeyRecord(identity.privateKey).split(',d=')[1]!;
  const parts = [d.slice(0, 150), d.slice(150, 300), d.slice(300)];
  const key = publicKeyFromRecords([`p=3,a=RS256,d=${parts[2]}`, `p=1,a=RS256,d=${parts[0]}`, `p=2,a=RS256,d=${parts[1]}`]);
  assert.ok(key.equals(createPublicKey(identity.privateKey)));
  throws(() => publicKeyFromRecords(['p=1,a=ES256,d=AAAA']), DomainConnectError);
});

test('loadOrCreateSigningKey creates a 0600 PKCS#8 key once and returns the same key after', async () => {
  const dir = join(tmp, 'data');
  const first = await loadOrCreateSigningKey(dir);
  const file = join(dir, 'domain-connect.key');
  assert.is((await stat(file)).mode & 0o777, 0o600);
  assert.match(await readFile(file, 'utf8'), /^-----BEGIN PRIVATE KEY-----\n/);
  assert.is(first.asymmetricKeyDetails?.modulusLength, 2048);
  const second = await loadOrCreateSigningKey(dir);
  assert.ok(second.equals(first));
  assert.equal(await readdir(dir), ['domain-connect.key']); // no temp file left behind
});

test('loadOrCreateSigningKey: concurrent first calls agree on one key', async () => {
  const dir = join(tmp, 'race');
  const keys = await Promise.all([loadOrCreateSigningKey(dir), loadOrCreateSigningKey(dir), loadOrCreateSigningKey(dir)]);
  assert.ok(keys[1]!.equals(keys[0]!));
  assert.ok(keys[2]!.equals(keys[0]!));
  const onDisk = await loadOrCreateSigningKey(dir);
  assert.ok(onDisk.equals(keys[0]!));
});

test('loadOrCreateSigningKey loads a key placed by hand and tightens its mode to 0600', async () => {
  const dir = join(tmp, 'byhand');
  await mkdir(dir);
  const file = join(dir, 'domain-connect.key');
  await writeFile(file, identity.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o644 });
  const key = await loadOrCreateSigningKey(dir);
  assert.ok(key.equals(identity.privateKey));
  assert.is((await stat(file)).mode & 0o777, 0o600);
});

test('loadOrCreateSigningKey refuses a file that is not an RSA private key', async () => {
  const dir = join(tmp, 'bad');
  await loadOrCreateSigningKey(dir);
  await writeFile(join(dir, 'domain-connect.key'), 'garbage');
  assert.is((await rejects(loadOrCreateSigningKey(dir), DomainConnectError)).code, 'bad_key');
});

// --- Template ---

test('the shipped template parses and uses exactly TEMPLATE_VARIABLES', async () => {
  const template = JSON.parse(await readFile(new URL('../../config/domain-connect-template.json', import.meta.url), 'utf8'));
  assert.is(template.providerId, 'mailwright.example');
  assert.is(template.serviceId, 'mailwright');
  assert.is(template.syncPubKeyDomain, 'mailwright.example');
  assert.is(template.syncBlock, false);
  assert.is(template.hostRequired, false);
  const used = new Set<string>();
  for (const record of template.records as Array<Record<string, unknown>>) {
    for (const value of Object.values(record)) {
      for (const m of String(value).matchAll(/%([^%]+)%/g)) used.add(m[1]!);
    }
  }
  for (const builtIn of ['host', 'domain', 'fqdn']) used.delete(builtIn);
  assert.equal([...used].sort(), [...TEMPLATE_VARIABLES].sort());
  const byHost = Object.fromEntries((template.records as Array<{ host: string; type: string }>).map((r) => [`${r.type} ${r.host}`, r]));
  assert.equal(Object.keys(byHost).sort(), ['MX bounces', 'TXT %dkimselector%._domainkey', 'TXT _dmarc', 'TXT bounces']);
  assert.is((byHost['TXT _dmarc'] as unknown as Record<string, string>).txtConflictMatchingPrefix, 'v=DMARC1');
});

test('templateVariables fills exactly the template variables and keeps them narrow', () => {
  const vars = templateVariables({ dkimSelector: 'MW1', dkimPublicKey: 'MIIB IjAN\nBgkq==', mailHost: 'Mail.Box.Example.' });
  assert.equal(vars, { dkimselector: 'mw1', dkimkey: 'MIIBIjANBgkq==', mailhost: 'mail.box.example' });
  assert.equal(Object.keys(vars).sort(), [...TEMPLATE_VARIABLES].sort());
  throws(() => templateVariables({ dkimSelector: 'a.b', dkimPublicKey: 'AA', mailHost: 'm.example' }), DomainConnectError);
  throws(() => templateVariables({ dkimSelector: 'a', dkimPublicKey: 'v=DKIM1; p=AA', mailHost: 'm.example' }), DomainConnectError);
  throws(() => templateVariables({ dkimSelector: 'a', dkimPublicKey: 'AA', mailHost: 'evil.example -all include:x' }), DomainConnectError);
});

test.run();
