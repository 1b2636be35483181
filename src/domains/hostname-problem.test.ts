// A box whose own name cannot be right (the OS default `vm`) over real HTTP: a warning at start naming the
// setting and the fix; the domain API offers no record naming it (MX and SPF of the return path, the inbound MX)
// and says why in `hostnameProblem`; inbound setup and verify answer 409 and change nothing; GET /doctor says the
// same as `mailwright doctor`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startTestApp, seedWorkspace, request, type TestApp } from '../testkit/app.ts';

let dns: DnsServer;
let t: TestApp;
let key: string;

test.before(async () => {
  dns = await startDnsServer();
  t = await startTestApp({ env: { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_HOSTNAME: 'vm' } });
  key = (await seedWorkspace(t)).key;
});
test.after(async () => {
  await t.stop();
  await dns.close();
});

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${t.api}${path}`, { key, ...opts });
const PROBLEM = {
  hostname: 'vm',
  setting: 'hostname',
  variable: 'MAILWRIGHT_HOSTNAME',
  message: `The box's hostname "vm" is not a fully qualified domain name (it has no dot: it is the machine's short name): other mail servers cannot find it, so an MX or SPF record naming it would be wrong.`,
  fix: "set hostname (MAILWRIGHT_HOSTNAME) to the box's public name, such as mail.example.com, with an A record pointing at this box and a PTR record naming it back, then restart",
};
const namesVm = (value: string) => /(^|[\s:])vm(\s|$)/.test(value);

test('start warns, naming hostname and the fix', () => {
  const warning = t.logs.map((l) => JSON.parse(l)).find((l) => l.level === 'warn' && l.msg.startsWith('hostname:'));
  assert.ok(warning, 'a warning at start');
  assert.is(warning.hostname, 'vm');
  assert.ok(warning.msg.includes(PROBLEM.message) && warning.msg.includes(`Fix: ${PROBLEM.fix}.`), warning.msg);
});

test('no record naming the box is offered while its name cannot be right; hostnameProblem says why', async () => {
  const created = await api('/domains', { body: { name: 'shop.example' } });
  assert.is(created.status, 201);
  assert.equal(created.body.hostnameProblem, PROBLEM);
  assert.equal(created.body.records.map((r: any) => r.record), ['DKIM', 'DMARC']);
  assert.not.ok(created.body.records.some((r: any) => namesVm(r.value)), JSON.stringify(created.body.records));

  const shown = (await api(`/domains/${created.body.id}`)).body;
  assert.equal(shown.hostnameProblem, PROBLEM);
  assert.equal(shown.records.map((r: any) => r.record), ['DKIM', 'DMARC']);

  // What DNS said of the withheld records (their expected values name vm) is withheld too.
  const verified = (await api(`/domains/${created.body.id}/verify`, { method: 'POST' })).body;
  assert.equal(verified.hostnameProblem, PROBLEM);
  assert.equal(verified.records.map((r: any) => r.record), ['DKIM', 'DMARC']);
  assert.ok(verified.dns_issues.length > 0, 'DKIM is missing from DNS');
  assert.equal([...new Set(verified.dns_issues.map((i: any) => i.record))], ['DKIM', 'DMARC']);
  assert.not.ok(verified.dns_issues.some((i: any) => namesVm(i.expected)), JSON.stringify(verified.dns_issues));
  assert.is(verified.status, 'failed', 'a box with this name cannot send from the domain');

  const provider = (await api(`/dns/provider?domain_id=${created.body.id}`)).body;
  assert.equal(provider.hostnameProblem, PROBLEM);
  assert.is(provider.inbound.record, null);
});

test('inbound setup and verify answer 409 hostname_unusable and change nothing', async () => {
  const d = (await api('/domains', { body: { name: 'in.example' } })).body;
  for (const step of ['setup', 'verify']) {
    const res = await api(`/domains/${d.id}/inbound/${step}`, { method: 'POST' });
    assert.equal([res.status, res.body.error.code, res.body.error.status], [409, 'hostname_unusable', 409], step);
    assert.is(res.body.error.message, `${PROBLEM.message} To fix: ${PROBLEM.fix}.`);
  }
  const after = (await api(`/domains/${d.id}`)).body;
  assert.equal([after.inbound.status, after.inbound.record], ['not_configured', null]);
});

test("GET /doctor (the Overview's checks) names the hostname as the box's problem and offers no record naming it", async () => {
  const res = await api('/doctor');
  assert.is(res.status, 200);
  const box = res.body.findings.filter((f: any) => f.area === 'box');
  assert.equal(box, [{ area: 'box', subject: 'vm', check: 'hostname', status: 'problem', message: PROBLEM.message, fix: PROBLEM.fix }]);
  const waiting = res.body.findings.filter((f: any) => f.subject === 'shop.example' && ['MX', 'SPF'].includes(f.check));
  assert.equal(waiting.map((f: any) => [f.check, f.status, f.fix]), [['MX', 'pending', null], ['SPF', 'pending', null]]);
  assert.not.ok(res.body.findings.some((f: any) => /MX 10 vm|a:vm/.test(`${f.message} ${f.fix}`)), JSON.stringify(res.body.findings));
});

test('with a public name the records are whole and hostnameProblem is null', async () => {
  const good = await startTestApp({ env: { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_HOSTNAME: 'mail.example.com' } });
  try {
    const k = (await seedWorkspace(good)).key;
    const created = await request(`${good.api}/domains`, { key: k, body: { name: 'shop.example' } });
    assert.is(created.body.hostnameProblem, null);
    assert.equal(created.body.records.map((r: any) => [r.record, r.value.includes('mail.example.com')]), [['DKIM', false], ['MX', true], ['SPF', true], ['DMARC', false]]);
    assert.not.ok(good.logs.some((l) => l.includes('"msg":"hostname:')), 'no warning');
  } finally {
    await good.stop();
  }
});

test.run();
