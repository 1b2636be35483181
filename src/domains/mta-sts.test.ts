// MTA-STS (RFC 8461) and TLS-RPT (RFC 8460) for a domain that receives here, over real HTTP, real DNS and real
// TLS: the records in the setup answer and the domain's record list, the policy served by Host header, the mode
// switch, and the checks against the test DNS server, the policy fetched over HTTPS from a TLS front door (a
// certificate from a test CA, once for the right name and once for another) that passes the bytes to the app.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { rmSync } from 'node:fs';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { freePort, request, runCli, seedWorkspace, sqliteOnly, startTestApp, type TestApp } from '../testkit/app.ts';
import { createTestCa, type TestCa } from '../testkit/test-ca.ts';
import { policyHosts } from './mta-sts.ts';

const HOST = 'mx.mailwright.test';
const DOMAIN = 'sts.test';
let dns: DnsServer;
let ca: TestCa;
let t: TestApp;
let key: string;
let front: tls.Server;
let frontPort: number;
let served: tls.SecureContext;
let certs: { right: tls.SecureContext; wrong: tls.SecureContext };
let domain: any;

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${t.api}${path}`, { key, ...opts });
const record = (records: any[], kind: string) => records.find((r) => r.record === kind);
const issue = (body: any, kind: string) => body.dns_issues.find((i: any) => i.record === kind);

/** A GET as a sender's HTTP client sends it, with the Host header it names. */
function get(host: string, path = '/.well-known/mta-sts.txt'): Promise<{ status: number; type: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: t.running.http.port, path, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function inboundDomain(name: string, ready: boolean) {
  const d = (await api('/domains', { body: { name } })).body;
  const setup = await api(`/domains/${d.id}/inbound/setup`, { method: 'POST' });
  if (ready) {
    dns.set(name, 'MX', [{ preference: 10, exchange: HOST }]);
    assert.is((await api(`/domains/${d.id}/inbound/verify`, { method: 'POST' })).body.status, 'ready');
  }
  return { ...d, setup: setup.body };
}

/** Publishes what the box asks of the domain: TXT and MX as they are, the policy host's CNAME too. */
function publishAll(records: any[]) {
  dns.publish(records.filter((r) => r.type !== 'CNAME'));
  for (const r of records.filter((r) => r.type === 'CNAME')) dns.set(r.name, 'CNAME', [r.value]);
}

test.before(async () => {
  dns = await startDnsServer();
  ca = await createTestCa();
  frontPort = await freePort();
  t = await startTestApp({
    fetchCa: ca.cert,
    env: { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true', MAILWRIGHT_MTA_STS_PORT: String(frontPort) },
  });
  key = (await seedWorkspace(t)).key;
  const right = await ca.issue([`mta-sts.${DOMAIN}`]);
  const wrong = await ca.issue(['mta-sts.elsewhere.test']);
  certs = { right: tls.createSecureContext(right), wrong: tls.createSecureContext(wrong) };
  served = certs.right;
  // The HTTPS front door: TLS ends here and the bytes go on to the app's HTTP listener, Host header and all.
  front = tls.createServer({ SNICallback: (_name, cb) => cb(null, served) }, (socket) => {
    const app = net.connect(t.running.http.port, '127.0.0.1');
    socket.pipe(app).pipe(socket);
    socket.on('error', () => app.destroy());
    app.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => front.listen(frontPort, '127.0.0.1', resolve));
  dns.add(HOST, 'A', '127.0.0.1');
  domain = await inboundDomain(DOMAIN, true);
});
test.after(async () => {
  await new Promise((resolve) => front.close(resolve));
  await t.stop();
  await dns.close();
  rmSync(ca.dir, { recursive: true, force: true });
});

test('the setup answer and the domain list MTA-STS, its policy host and TLS-RPT; DMARC reports come to the box', async () => {
  const shown = (await api(`/domains/${domain.id}`)).body;
  const id = shown.mtaSts.policyId;
  assert.match(id, /^[A-Za-z0-9]{1,32}$/);
  const wanted = [
    { record: 'MTA-STS', type: 'TXT', name: `_mta-sts.${DOMAIN}`, value: `v=STSv1; id=${id};` },
    { record: 'MTA-STS-HOST', type: 'CNAME', name: `mta-sts.${DOMAIN}`, value: HOST },
    { record: 'TLS-RPT', type: 'TXT', name: `_smtp._tls.${DOMAIN}`, value: `v=TLSRPTv1; rua=mailto:tls-reports@bounces.${DOMAIN}` },
  ];
  assert.equal(domain.setup.records, wanted);
  assert.equal(shown.records.slice(-3), wanted.map((r) => ({ ...r, status: 'pending' })));
  assert.equal(record(shown.records, 'DMARC').value, `v=DMARC1; p=none; rua=mailto:dmarc-reports@bounces.${DOMAIN};`);
  assert.equal(shown.mtaSts, { mode: 'testing', policyId: id, policyUrl: `https://mta-sts.${DOMAIN}/.well-known/mta-sts.txt`, served: true, status: 'pending', maxAge: 604800 });
  const provider = (await api(`/dns/provider?domain_id=${domain.id}`)).body;
  assert.equal(
    provider.recommendations.map((r: any) => [r.record, r.host, r.value]),
    [['DMARC', '_dmarc', `v=DMARC1; p=none; rua=mailto:dmarc-reports@bounces.${DOMAIN};`], ...wanted.map((r) => [r.record, r.name.replace(`.${DOMAIN}`, ''), r.value])],
  );
  // Before inbound is set up nothing of it is asked.
  const sendingOnly = (await api('/domains', { body: { name: 'sending-only.test' } })).body;
  assert.equal(sendingOnly.records.map((r: any) => r.record), ['DKIM', 'MX', 'SPF', 'DMARC']);
  assert.is((await api(`/domains/${sendingOnly.id}`)).body.mtaSts, null);
});

test('the policy is served to anyone for mta-sts.<domain> once inbound is ready, and for nothing else', async () => {
  const res = await get(`MTA-STS.${DOMAIN.toUpperCase()}:8443`);
  assert.is(res.status, 200);
  assert.match(res.type!, /^text\/plain/);
  assert.is(res.body, `version: STSv1\r\nmode: testing\r\nmx: ${HOST}\r\nmax_age: 604800\r\n`);
  const other = await get('mta-sts.unknown.test');
  assert.equal([other.status, JSON.parse(other.body).error.code], [404, 'not_found']);
  const pending = await inboundDomain('pending.test', false);
  assert.is(pending.setup.status, 'dns_pending');
  assert.is((await get('mta-sts.pending.test')).status, 404, 'not served before the MX reaches the box');
  assert.equal(await t.app.store.read(policyHosts()), ['mta-sts.pending.test', `mta-sts.${DOMAIN}`], 'both want a certificate for their policy host');
  assert.is((await get(`mta-sts.${DOMAIN}`, '/.well-known/mta-sts.txt/')).status, 421, 'the policy host is let in for the one path only');
  assert.is((await get(`mta-sts.${DOMAIN}`, '/healthz')).status, 421);
  assert.is((await get(`mta-sts.${DOMAIN}`, '/api/v1/domains')).status, 421);
  assert.is((await get('localhost', '/.well-known/mta-sts.txt')).status, 404, 'the box\'s own name has no policy');
  assert.is((await get(DOMAIN)).status, 421, 'the bare domain is not a policy host');
});

test('switching the mode changes the file and its id; bad values are refused and change nothing', async () => {
  const before = (await api(`/domains/${domain.id}`)).body.mtaSts;
  for (const bad of ['strict', 'ENFORCE', 1, null, '']) {
    const res = await api(`/domains/${domain.id}`, { method: 'PATCH', body: { mta_sts_mode: bad } });
    assert.is(res.status, 400, JSON.stringify(bad));
    assert.is(res.body.error.code, 'validation_error');
    assert.match(res.body.error.message, /mta_sts_mode/);
  }
  assert.equal((await api(`/domains/${domain.id}`)).body.mtaSts, before);
  assert.match((await get(`mta-sts.${DOMAIN}`)).body, /mode: testing\r\n/);

  const res = await api(`/domains/${domain.id}`, { method: 'PATCH', body: { mta_sts_mode: 'enforce' } });
  assert.is(res.status, 200);
  assert.is(res.body.mtaSts.mode, 'enforce');
  assert.is.not(res.body.mtaSts.policyId, before.policyId);
  assert.is(record(res.body.records, 'MTA-STS').value, `v=STSv1; id=${res.body.mtaSts.policyId};`);
  assert.is((await get(`mta-sts.${DOMAIN}`)).body, `version: STSv1\r\nmode: enforce\r\nmx: ${HOST}\r\nmax_age: 604800\r\n`);
  // Back to testing: the file is the first one again, and so is its id (it is the text's hash).
  const back = await api(`/domains/${domain.id}`, { method: 'PATCH', body: { mta_sts_mode: 'testing' } });
  assert.is(back.body.mtaSts.policyId, before.policyId);
});

test('the checks pass with every record published and the policy served over HTTPS with a valid certificate', async () => {
  const shown = (await api(`/domains/${domain.id}`)).body;
  publishAll(shown.records);
  const res = await api(`/domains/${domain.id}/verify`, { method: 'POST' });
  assert.is(res.status, 200);
  assert.equal([res.body.status, res.body.checks.mtaSts, res.body.checks.tlsRpt, res.body.checks.dmarc], ['verified', true, true, true], JSON.stringify(res.body.dns_issues));
  assert.equal(res.body.records.slice(-3).map((r: any) => [r.record, r.status]), [['MTA-STS', 'verified'], ['MTA-STS-HOST', 'verified'], ['TLS-RPT', 'verified']]);
  assert.equal(res.body.dns_issues, []);
  assert.is((await api(`/domains/${domain.id}`)).body.mtaSts.status, 'verified');
});

test('a published DMARC without the box\'s rua, or with another policy, keeps its check and the domain verified', async () => {
  dns.set(`_dmarc.${DOMAIN}`, 'TXT', ['v=DMARC1; p=reject; rua=mailto:dmarc@reports.example']);
  try {
    const res = (await api(`/domains/${domain.id}/verify`, { method: 'POST' })).body;
    assert.equal([res.status, res.checks.dmarc, record(res.records, 'DMARC').status], ['verified', true, 'verified']);
  } finally {
    publishAll((await api(`/domains/${domain.id}`)).body.records);
  }
});

test('the checks fail with the reason when a record is stale, missing or wrong', async () => {
  // The owner switches to enforce but leaves the old id in DNS: senders would keep the cached testing policy.
  const oldId = (await api(`/domains/${domain.id}`)).body.mtaSts.policyId;
  const newId = (await api(`/domains/${domain.id}`, { method: 'PATCH', body: { mta_sts_mode: 'enforce' } })).body.mtaSts.policyId;
  dns.set(`_smtp._tls.${DOMAIN}`, 'TXT', ['v=TLSRPTv1; rua=mailto:tls@reports.example']);
  dns.set(`mta-sts.${DOMAIN}`, 'CNAME', ['web.elsewhere.test']);
  dns.add('web.elsewhere.test', 'A', '127.0.0.1');
  try {
    const res = await api(`/domains/${domain.id}/verify`, { method: 'POST' });
    assert.is(res.body.status, 'verified', 'MTA-STS and TLS-RPT are recommended: they never un-verify a domain');
    assert.equal([res.body.checks.mtaSts, res.body.checks.tlsRpt], [false, false]);
    assert.is(issue(res.body, 'MTA-STS').message, `The MTA-STS record at _mta-sts.${DOMAIN} announces id ${oldId}, but the policy served now (mode enforce) has id ${newId}: publish the record shown, or senders keep the policy they cached`);
    assert.equal(issue(res.body, 'MTA-STS').found, [`v=STSv1; id=${oldId};`]);
    assert.match(issue(res.body, 'TLS-RPT').message, /sends reports to mailto:tls@reports\.example, not to this box \(mailto:tls-reports@bounces\.sts\.test\)/);
    assert.match(issue(res.body, 'MTA-STS-HOST').message, /mta-sts\.sts\.test is an alias of web\.elsewhere\.test, not of mx\.mailwright\.test/);
    // Missing altogether: no such name, so nothing to fetch either.
    dns.remove(`mta-sts.${DOMAIN}`);
    dns.remove(`_mta-sts.${DOMAIN}`);
    const gone = (await api(`/domains/${domain.id}/verify`, { method: 'POST' })).body;
    assert.match(issue(gone, 'MTA-STS').message, /^No MTA-STS record at _mta-sts\.sts\.test: publish the TXT record shown/);
    assert.match(issue(gone, 'MTA-STS-HOST').message, /^No record at mta-sts\.sts\.test: publish the CNAME shown/);
    assert.match(issue(gone, 'MTA-STS-POLICY').message, /^No such name: mta-sts\.sts\.test has no address/);
    assert.is((await api(`/domains/${domain.id}`)).body.mtaSts.status, 'failed');
  } finally {
    await api(`/domains/${domain.id}`, { method: 'PATCH', body: { mta_sts_mode: 'testing' } });
    publishAll((await api(`/domains/${domain.id}`)).body.records);
  }
});

test('a certificate for another name fails the policy check, as a sender would refuse it', async () => {
  served = certs.wrong;
  try {
    const res = (await api(`/domains/${domain.id}/verify`, { method: 'POST' })).body;
    assert.is(res.checks.mtaSts, false);
    assert.equal(res.dns_issues.map((i: any) => i.record), ['MTA-STS-POLICY']);
    assert.is(issue(res, 'MTA-STS-POLICY').message, 'The certificate mta-sts.sts.test presents is not valid for that name: senders refuse the policy. The box gets one by ACME once mta-sts.sts.test resolves to it');
    assert.is(issue(res, 'MTA-STS-POLICY').name, `https://mta-sts.${DOMAIN}:${frontPort}/.well-known/mta-sts.txt`);
  } finally {
    served = certs.right;
  }
  assert.is((await api(`/domains/${domain.id}/verify`, { method: 'POST' })).body.checks.mtaSts, true);
});

test('a policy host answered by another server fails with what it served', async () => {
  // The policy host points at another HTTPS server (a certificate for the right name, but a 404 for every path),
  // on its own address and the port the checks use.
  const other = http.createServer((_req, res) => res.writeHead(404).end('no'));
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  const elsewhere = tls.createServer({ SNICallback: (_name, cb) => cb(null, certs.right) }, (socket) => {
    const to = net.connect((other.address() as net.AddressInfo).port, '127.0.0.1');
    socket.pipe(to).pipe(socket);
    socket.on('error', () => to.destroy());
    to.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => elsewhere.listen(frontPort, '127.0.0.2', resolve));
  dns.remove(`mta-sts.${DOMAIN}`);
  dns.set(`mta-sts.${DOMAIN}`, 'A', ['127.0.0.2']);
  try {
    const res = (await api(`/domains/${domain.id}/verify`, { method: 'POST' })).body;
    assert.match(issue(res, 'MTA-STS-HOST').message, /^mta-sts\.sts\.test resolves to 127\.0\.0\.2, not to this box \(mx\.mailwright\.test\): publish the CNAME shown$/);
    assert.match(issue(res, 'MTA-STS-POLICY').message, /answered HTTP 404, not 200: senders find no policy/);
  } finally {
    await new Promise((resolve) => elsewhere.close(resolve));
    await new Promise((resolve) => other.close(resolve));
    dns.remove(`mta-sts.${DOMAIN}`);
    dns.set(`mta-sts.${DOMAIN}`, 'CNAME', [HOST]);
  }
});

// doctor opens the data directory's SQLite database: on PostgreSQL it has no store to read yet.
sqliteOnly(test)('doctor checks each record and fetches the policy as a sender, trusting the CA it is given', async () => {
  const env = { ...t.env, MAILWRIGHT_HTTP_PORT: String(t.running.http.port), MAILWRIGHT_SMTP_PORT: String(t.smtpPort), NODE_EXTRA_CA_CERTS: ca.certFile };
  let res = await runCli(['doctor'], env);
  for (const line of [`✓ MTA-STS _mta-sts.${DOMAIN} TXT`, `✓ MTA-STS-HOST mta-sts.${DOMAIN} CNAME`, `✓ TLS-RPT _smtp._tls.${DOMAIN} TXT`, `✓ MTA-STS-POLICY https://mta-sts.${DOMAIN}/.well-known/mta-sts.txt`]) {
    assert.ok(res.stdout.includes(line), `${line}\n${res.stdout}`);
  }
  assert.match(res.stdout, /· MTA-STS mode is testing: senders report TLS failures but still deliver; switch to enforce/);
  dns.set(`_smtp._tls.${DOMAIN}`, 'TXT', []);
  try {
    res = await runCli(['doctor'], { ...env, NODE_EXTRA_CA_CERTS: '' });
    assert.is(res.code, 1);
    assert.ok(res.stdout.includes(`✗ TLS-RPT _smtp._tls.${DOMAIN} TXT: No TLS-RPT record at _smtp._tls.${DOMAIN}`), res.stdout);
    assert.ok(res.stdout.includes(`fix: publish _smtp._tls.${DOMAIN} TXT "v=TLSRPTv1; rua=mailto:tls-reports@bounces.${DOMAIN}"`), res.stdout);
    // Without the test CA the certificate is one no sender trusts.
    assert.match(res.stdout, /✗ MTA-STS-POLICY https:\/\/mta-sts\.sts\.test\/\.well-known\/mta-sts\.txt: The certificate mta-sts\.sts\.test presents is not signed by an authority senders trust/);
    const findings = (await api('/doctor')).body.findings.filter((f: any) => f.subject === DOMAIN);
    assert.equal(findings.filter((f: any) => f.check.startsWith('MTA-STS') || f.check === 'TLS-RPT').map((f: any) => [f.check, f.status]), [['MTA-STS', 'ok'], ['MTA-STS-HOST', 'ok'], ['TLS-RPT', 'problem'], ['MTA-STS-POLICY', 'ok']]);
  } finally {
    publishAll((await api(`/domains/${domain.id}`)).body.records);
  }
});

test.run();
