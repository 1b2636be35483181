// Sending domains over real HTTP, verified against real DNS (the test kit's authoritative server over UDP
// and TCP): every outcome of verification, the gentler periodic re-check, inbound setup, switches,
// deletion and workspace isolation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { generateKeyPairSync } from 'node:crypto';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startTestApp, seedWorkspace, request, type TestApp } from '../testkit/app.ts';
import { recheckDueDomains } from './verification.ts';
import { value } from '../db/query.ts';

const clock = { at: Date.now(), now() { return this.at; } };
const HOST = 'mx.mailwright.test';
let dns: DnsServer;
let t: TestApp;
let a: Awaited<ReturnType<typeof seedWorkspace>>;
let b: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  dns = await startDnsServer();
  dns.add(HOST, 'A', '127.0.0.1');
  t = await startTestApp({ clock, env: { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_RATE_LIMIT: '0' } });
  a = await seedWorkspace(t);
  b = await seedWorkspace(t, { workspace: 'other' });
});
test.after(async () => {
  await t.stop();
  await dns.close();
});

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${t.api}${path}`, { key: a.key, ...opts });
const create = async (name: string, key = a.key) => {
  const res = await api('/domains', { body: { name }, key });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body;
};
const verify = (id: string, key = a.key) => api(`/domains/${id}/verify`, { method: 'POST', key });
const record = (domain: any, kind: string) => domain.records.find((r: any) => r.record === kind);

/** Publishes every record exactly as the box asked for it, but those named in `skip`. */
const publish = (domain: any, skip: string[] = []) => dns.publish(domain.records.filter((r: any) => !skip.includes(r.record)));

const otherPublicKey = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');

test('POST /domains answers 201 pending with every record to publish; the private key never leaves', async () => {
  const d = await create('Example-One.test.');
  assert.match(d.id, /^dom_[0-9A-Z]{26}$/);
  assert.is(d.name, 'example-one.test');
  assert.is(d.status, 'pending');
  assert.equal(d.records.map((r: any) => r.record), ['DKIM', 'MX', 'SPF', 'DMARC']);
  const dkim = record(d, 'DKIM');
  assert.match(dkim.name, /^mw[a-z0-9]{8}\._domainkey\.example-one\.test$/);
  assert.match(dkim.value, /^v=DKIM1; k=rsa; p=MIIBIjAN[A-Za-z0-9+/=]+$/);
  assert.equal(record(d, 'MX'), { record: 'MX', type: 'MX', name: 'bounces.example-one.test', value: HOST, priority: 10, status: 'pending' });
  assert.equal(record(d, 'SPF'), { record: 'SPF', type: 'TXT', name: 'bounces.example-one.test', value: `v=spf1 a:${HOST} -all`, status: 'pending' });
  assert.equal(record(d, 'DMARC'), { record: 'DMARC', type: 'TXT', name: '_dmarc.example-one.test', value: 'v=DMARC1; p=none; rua=mailto:dmarc-reports@bounces.example-one.test;', status: 'pending' });
  const shown = await api(`/domains/${d.id}`);
  assert.is(shown.body.setup_status, 'action_required');
  assert.equal(shown.body.dns_issues, []);
  for (const body of [JSON.stringify(d), JSON.stringify(shown.body), JSON.stringify((await api('/domains')).body)]) assert.not.match(body, /PRIVATE KEY|MIIE/);
});

test('names: IDN becomes punycode; IP literals, junk and single labels are 400 naming the field; duplicates 409', async () => {
  const mine = await create('Bücher.example');
  assert.is(mine.name, 'xn--bcher-kva.example');
  for (const name of ['1.2.3.4', '[192.0.2.1]', 'example.com/path', 'example.com:25', 'exa mple.com', 'localhost', '', 'a..b.test', '-x.test', 'user@example.com', 'http://example.com']) {
    const res = await api('/domains', { body: { name } });
    assert.is(res.status, 400, name);
    assert.is(res.body.error.code, 'validation_error');
    assert.ok(res.body.error.message.startsWith('name: '), res.body.error.message);
  }
  assert.is((await api('/domains', { body: {} })).status, 400);
  const dup = await api('/domains', { body: { name: 'BÜCHER.example' } });
  assert.equal([dup.status, dup.body.error.code], [409, 'domain_exists']);
  const taken = await api('/domains', { body: { name: 'xn--bcher-kva.example' }, key: b.key });
  assert.equal([taken.status, taken.body.error.code], [409, 'domain_exists'], 'the name belongs to the first workspace on the box');
  const elsewhere = await create('bücher-b.example', b.key);
  assert.is.not(record(elsewhere, 'DKIM').name, record(mine, 'DKIM').name, 'another workspace gets its own selector');
  assert.is.not(record(elsewhere, 'DKIM').value, record(mine, 'DKIM').value, 'and its own key');
});

test('right records: verified, every check true, setup complete, no issues', async () => {
  const d = await create('good.test');
  publish(d);
  const res = await verify(d.id);
  assert.is(res.status, 200);
  assert.equal(res.body.domain, { id: d.id, status: 'verified' });
  assert.is(res.body.status, 'verified');
  assert.equal(res.body.checks, { ses: true, dkim: true, spf: true, returnPath: true, dmarc: true, mx: false, mtaSts: false, tlsRpt: false });
  const shown = (await api(`/domains/${d.id}`)).body;
  assert.is(shown.setup_status, 'complete');
  assert.equal(shown.dns_issues, []);
  assert.ok(shown.records.every((r: any) => r.status === 'verified'));
  const listed = (await api('/domains')).body.data.find((x: any) => x.id === d.id);
  assert.equal([listed.status, listed.checks.ses], ['verified', true], 'the list shows the cached state');
});

test('a DKIM record split across strings in one TXT record verifies; split into separate records does not', async () => {
  const d = await create('split.test');
  publish(d, ['DKIM']);
  const value: string = record(d, 'DKIM').value;
  dns.set(record(d, 'DKIM').name, 'TXT', [[value.slice(0, 100), value.slice(100, 300), value.slice(300)]]);
  assert.is((await verify(d.id)).body.status, 'verified');
  dns.set(record(d, 'DKIM').name, 'TXT', [value.slice(0, 200), value.slice(200)]);
  const res = await verify(d.id);
  assert.is(res.body.status, 'failed');
  const issue = res.body.dns_issues.find((i: any) => i.record === 'DKIM');
  assert.match(issue.message, /separate TXT records/);
  assert.is(issue.found.length, 2);
});

test('missing DKIM: failed with one issue saying what was expected and that nothing was found', async () => {
  const d = await create('nodkim.test');
  publish(d, ['DKIM']);
  const res = await verify(d.id);
  assert.is(res.body.status, 'failed');
  assert.equal(res.body.checks.dkim, false);
  assert.is(res.body.checks.spf, true);
  assert.is(res.body.dns_issues.length, 1);
  const issue = res.body.dns_issues[0];
  assert.equal([issue.record, issue.type, issue.name, issue.expected, issue.found], ['DKIM', 'TXT', record(d, 'DKIM').name, record(d, 'DKIM').value, []]);
  assert.match(issue.message, /No DKIM record/);
  const shown = (await api(`/domains/${d.id}`)).body;
  assert.is(shown.setup_status, 'action_required');
  assert.equal(record(shown, 'DKIM').status, 'failed');
  assert.equal(record(shown, 'SPF').status, 'verified');
});

test('a DKIM key that differs from ours: failed, and the issue shows what DNS holds', async () => {
  const d = await create('wrongkey.test');
  publish(d, ['DKIM']);
  const theirs = `v=DKIM1; k=rsa; p=${otherPublicKey()}`;
  dns.set(record(d, 'DKIM').name, 'TXT', [theirs]);
  const res = await verify(d.id);
  assert.is(res.body.status, 'failed');
  const issue = res.body.dns_issues.find((i: any) => i.record === 'DKIM');
  assert.match(issue.message, /differs/);
  assert.equal(issue.found, [theirs]);
});

test('SPF that does not allow the box, and two SPF records, are failures with their reason', async () => {
  const d = await create('spf.test');
  publish(d, ['SPF']);
  const spfName = record(d, 'SPF').name;
  dns.set(spfName, 'TXT', ['v=spf1 ip4:192.0.2.1 -all']);
  let res = await verify(d.id);
  assert.is(res.body.status, 'failed');
  assert.equal([res.body.checks.spf, res.body.checks.returnPath, res.body.checks.dkim], [false, false, true]);
  assert.match(res.body.dns_issues.find((i: any) => i.record === 'SPF').message, /does not allow this box \(127\.0\.0\.1\)/);
  dns.set(spfName, 'TXT', [record(d, 'SPF').value, 'v=spf1 include:other.test ~all']);
  res = await verify(d.id);
  const issue = res.body.dns_issues.find((i: any) => i.record === 'SPF');
  assert.match(issue.message, /2 SPF records/);
  assert.is(issue.found.length, 2);
  dns.set(spfName, 'TXT', [`v=spf1 mx -all`]);
  assert.is((await verify(d.id)).body.status, 'verified', 'any SPF record that really allows the box will do');
});

test('a return-path MX that points elsewhere fails', async () => {
  const d = await create('mx.test');
  publish(d);
  dns.set(record(d, 'MX').name, 'MX', [{ preference: 10, exchange: 'mail.elsewhere.test' }]);
  const res = await verify(d.id);
  const issue = res.body.dns_issues.find((i: any) => i.record === 'MX');
  assert.equal(issue.found, ['10 mail.elsewhere.test']);
  assert.is(res.body.status, 'failed');
});

test('a domain with nothing in DNS (NXDOMAIN): failed, one issue per required record', async () => {
  const d = await create('nothing-here.test');
  const res = await verify(d.id);
  assert.is(res.body.status, 'failed');
  assert.equal(res.body.dns_issues.map((i: any) => i.record).sort(), ['DKIM', 'DMARC', 'MX', 'SPF']);
});

test('SERVFAIL or timeout is a temporary state: status stays, setup says checking, the issue says why', async () => {
  const d = await create('flaky.test');
  publish(d);
  dns.fail(record(d, 'DKIM').name, '*', 'SERVFAIL');
  let res = await verify(d.id);
  assert.is(res.body.status, 'pending', 'a never-verified domain stays pending');
  assert.is(res.body.setup_status, 'checking');
  assert.match(res.body.dns_issues.find((i: any) => i.record === 'DKIM').message, /temporarily \(ESERVFAIL\)/);
  assert.is(record((await api(`/domains/${d.id}`)).body, 'DKIM').status, 'pending');
  dns.unfail();
  assert.is((await verify(d.id)).body.status, 'verified');
  dns.fail(record(d, 'MX').name, 'MX', 'timeout');
  res = await verify(d.id);
  assert.is(res.body.status, 'verified', 'a verified domain stays verified through a timeout');
  assert.match(res.body.dns_issues.find((i: any) => i.record === 'MX').message, /ETIMEOUT/);
  dns.unfail();
});

test('the periodic re-check records breakage at once but un-verifies only on the second definite failure', async () => {
  const d = await create('periodic.test');
  publish(d);
  assert.is((await verify(d.id)).body.status, 'verified');
  dns.remove(record(d, 'DKIM').name);
  const tick = async () => {
    clock.at += 61 * 60_000;
    return recheckDueDomains(t.app);
  };
  assert.ok((await tick()) >= 1);
  let shown = (await api(`/domains/${d.id}`)).body;
  assert.is(shown.status, 'verified', 'one failed check does not un-verify');
  assert.is(shown.setup_status, 'action_required');
  assert.ok(shown.dns_issues.some((i: any) => i.record === 'DKIM'), 'the breakage is recorded');
  dns.fail(record(d, 'DKIM').name, '*', 'SERVFAIL');
  await tick();
  assert.is((await api(`/domains/${d.id}`)).body.status, 'verified', 'a transient failure does not count');
  dns.unfail();
  await tick();
  shown = (await api(`/domains/${d.id}`)).body;
  assert.is(shown.status, 'failed', 'the second definite failure un-verifies');
  publish(d);
  await tick();
  assert.is((await api(`/domains/${d.id}`)).body.status, 'verified', 'fixing DNS brings it back without the owner');
});

test('two re-checks at the same time count one failure, not two', async () => {
  const d = await create('overlap.test');
  publish(d);
  assert.is((await verify(d.id)).body.status, 'verified');
  dns.remove(record(d, 'DKIM').name);
  clock.at += 61 * 60_000;
  await Promise.all([recheckDueDomains(t.app), recheckDueDomains(t.app)]);
  const shown = (await api(`/domains/${d.id}`)).body;
  assert.is(shown.status, 'verified', 'the breakage was seen once');
  assert.ok(shown.dns_issues.some((i: any) => i.record === 'DKIM'), 'and recorded');
});

test('the periodic re-check never fails a domain the owner has not verified yet', async () => {
  const d = await create('fresh.test');
  clock.at += 61 * 60_000;
  await recheckDueDomains(t.app);
  const shown = (await api(`/domains/${d.id}`)).body;
  assert.is(shown.status, 'pending');
  assert.ok(shown.checkedAt, 'it was checked');
  assert.ok(shown.dns_issues.length > 0);
});

test('PATCH: marketing needs a verified domain (403); switches are booleans; the result is shown', async () => {
  const pending = await create('patch-pending.test');
  const refused = await api(`/domains/${pending.id}`, { method: 'PATCH', body: { marketing: true } });
  assert.equal([refused.status, refused.body.error.code], [403, 'domain_not_verified']);
  assert.is((await api(`/domains/${pending.id}`, { method: 'PATCH', body: { open_tracking: true } })).body.open_tracking, true);
  const d = await create('patch.test');
  publish(d);
  await verify(d.id);
  const res = await api(`/domains/${d.id}`, { method: 'PATCH', body: { marketing: true, click_tracking: true } });
  assert.is(res.status, 200);
  assert.equal([res.body.marketing, res.body.click_tracking, res.body.open_tracking], [true, true, false]);
  for (const body of [{ marketing: 'yes' }, { colour: 'red' }, {}]) {
    const bad = await api(`/domains/${d.id}`, { method: 'PATCH', body });
    assert.equal([bad.status, bad.body.error.code], [400, 'validation_error'], JSON.stringify(body));
  }
});

test('inbound: not_configured, setup gives the MX to publish, verify is ready only when the MX points at the box', async () => {
  const d = await create('inbound.test');
  let res = await api(`/domains/${d.id}/inbound/verify`, { method: 'POST' });
  assert.equal([res.status, res.body.status], [200, 'not_configured']);
  res = await api(`/domains/${d.id}/inbound/setup`, { method: 'POST' });
  const { records, ...answer } = res.body;
  assert.equal(answer, { domain: 'inbound.test', status: 'dns_pending', record: { type: 'MX', name: 'inbound.test', value: `10 ${HOST}` } });
  assert.equal(records.map((r: any) => `${r.record} ${r.type} ${r.name}`), ['MTA-STS TXT _mta-sts.inbound.test', 'MTA-STS-HOST CNAME mta-sts.inbound.test', 'TLS-RPT TXT _smtp._tls.inbound.test'], 'and MTA-STS and TLS-RPT (mta-sts.test.ts)');
  res = await api(`/domains/${d.id}/inbound/verify`, { method: 'POST' });
  assert.equal([res.body.status, res.body.record.type], ['dns_pending', 'MX']);
  assert.match(res.body.message, /No MX record/);
  dns.set('inbound.test', 'MX', [{ preference: 10, exchange: 'mx.google.test' }]);
  res = await api(`/domains/${d.id}/inbound/verify`, { method: 'POST' });
  assert.is(res.body.status, 'dns_pending');
  assert.equal(res.body.found, ['10 mx.google.test']);
  dns.set('inbound.test', 'MX', [{ preference: 10, exchange: HOST }]);
  res = await api(`/domains/${d.id}/inbound/verify`, { method: 'POST' });
  assert.is(res.body.status, 'ready');
  const shown = (await api(`/domains/${d.id}`)).body;
  assert.equal([shown.inbound.status, shown.inbound.record.value], ['ready', `10 ${HOST}`]);
  assert.is((await api(`/domains/${d.id}/inbound/setup`, { method: 'POST' })).body.status, 'ready', 'setup again keeps it ready');
});

test('sending identities list the verified domains of the workspace only', async () => {
  const res = await api('/sending-identities');
  assert.is(res.status, 200);
  assert.ok(res.body.domains.includes('good.test'));
  assert.not.ok(res.body.domains.includes('nodkim.test'), 'a failed domain is not a sending identity');
  assert.equal(Object.keys(res.body).sort(), ['addresses', 'domains', 'localParts']);
  assert.equal((await api('/sending-identities', { key: b.key })).body.domains, []);
});

test('workspace isolation: another workspace gets 404 for every operation and sees none in its list', async () => {
  const d = await create('mine.test');
  const paths: Array<[string, string, unknown?]> = [
    ['GET', `/domains/${d.id}`],
    ['PATCH', `/domains/${d.id}`, { open_tracking: true }],
    ['POST', `/domains/${d.id}/verify`],
    ['POST', `/domains/${d.id}/inbound/setup`],
    ['POST', `/domains/${d.id}/inbound/verify`],
    ['GET', `/dns/provider?domain_id=${d.id}`],
    ['GET', `/dns/domain-connect/connect?domain_id=${d.id}&next=${encodeURIComponent('http://localhost:8080/done')}`],
    ['DELETE', `/domains/${d.id}`],
  ];
  for (const [method, path, body] of paths) {
    const res = await api(path, { method, body, key: b.key });
    assert.is(res.status, 404, `${method} ${path}`);
  }
  assert.not.ok((await api('/domains', { key: b.key })).body.data.some((x: any) => x.id === d.id));
  assert.is((await api(`/domains/${d.id}`)).status, 200, 'still there for its owner');
});

test('DELETE removes the domain and its key', async () => {
  const d = await create('gone.test');
  assert.equal((await api(`/domains/${d.id}`, { method: 'DELETE' })).body, { ok: true });
  assert.is((await api(`/domains/${d.id}`)).status, 404);
  assert.is((await api(`/domains/${d.id}`, { method: 'DELETE' })).status, 404);
  assert.is(await t.app.store.read(value<number>('SELECT count(*) FROM dkim_keys WHERE domain_id = ?', d.id)), 0);
});

test.run();
