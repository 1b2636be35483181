// `mailwright doctor` as a real process beside a running app, reading the same data directory and asking
// the test kit's DNS server: it names each problem with the record to publish, and exits 0 only when
// there are none. The app's SMTP and submission listeners bind 127.0.0.1; 127.0.0.0/8 is all loopback, so
// an A record of 127.0.0.1 is an address where they greet and 127.0.0.2 one where nothing listens.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { freePort, startTestApp, seedWorkspace, request, runCli, sqliteOnly, type TestApp } from '../testkit/app.ts';

// doctor opens the data directory's SQLite database: on PostgreSQL it has no store to read yet, so every test
// here runs on SQLite only.
const HOST = 'mx.mailwright.test';
let dns: DnsServer;
let t: TestApp;
let key: string;
let env: Record<string, string>;

test.before(async () => {
  dns = await startDnsServer();
  t = await startTestApp({ env: { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_SUBMISSION_PORT: String(await freePort()) } });
  key = (await seedWorkspace(t)).key;
  // The running app's real ports, so doctor can see that serve listens.
  env = { ...t.env, MAILWRIGHT_HTTP_PORT: String(t.running.http.port), MAILWRIGHT_SMTP_PORT: String(t.smtpPort) };
});
test.after(async () => {
  await t.stop();
  await dns.close();
});

sqliteOnly(test)('doctor names what the box and its domains lack, with the record to publish', async () => {
  const d = (await request(`${t.api}/domains`, { body: { name: 'doc.test' }, key })).body;
  const res = await runCli(['doctor'], env);
  assert.is(res.code, 1, res.stderr);
  assert.match(res.stdout, /✓ serve is listening/);
  assert.match(res.stdout, new RegExp(`✗ ${HOST.replace(/\./g, '\\.')} has no A or AAAA record`));
  assert.match(res.stdout, /Domain doc\.test \(workspace default, pending\)/);
  const dkim = d.records.find((r: any) => r.record === 'DKIM');
  assert.ok(res.stdout.includes(`fix: publish ${dkim.name} TXT "${dkim.value}"`), res.stdout);
  assert.ok(res.stdout.includes(`fix: publish bounces.doc.test MX 10 ${HOST}`), res.stdout);
});

sqliteOnly(test)('doctor is satisfied once the box has forward-confirmed DNS and every record is published', async () => {
  dns.add(HOST, 'A', '127.0.0.1');
  dns.add('1.0.0.127.in-addr.arpa', 'PTR', HOST);
  const d = (await request(`${t.api}/domains`, { key })).body.data.find((x: any) => x.name === 'doc.test');
  const full = (await request(`${t.api}/domains/${d.id}`, { key })).body;
  dns.publish(full.records);
  const res = await runCli(['doctor'], env);
  assert.match(res.stdout, /✓ 127\.0\.0\.1 has PTR mx\.mailwright\.test \(forward-confirmed\)/);
  // Both listeners greet on the address the host name resolves to.
  assert.ok(res.stdout.includes(`✓ port ${t.smtpPort} (SMTP) on 127.0.0.1 answers with a 220 greeting`), res.stdout);
  assert.ok(res.stdout.includes(`✓ port ${t.submissionPort} (submission) on 127.0.0.1 answers with a 220 greeting`), res.stdout);
  assert.match(res.stdout, /No problems found\./);
  assert.is(res.code, 0, res.stdout);
});

sqliteOnly(test)('doctor says whether the resolver validates DNSSEC, and counts cached MTA-STS policies', async () => {
  const before = await runCli(['doctor'], env);
  assert.match(before.stdout, /· the resolver does not validate DNSSEC \(answers come without the AD bit\): DANE is not checked/);
  assert.match(before.stdout, /· MTA-STS: 0 recipient domain policies cached/);
  assert.match(before.stdout, /· TLS reports are only posted to https: addresses: no verified domain on the box covers the hostname mx\.mailwright\.test/);
  dns.authenticate('.');
  t.app.db.prepare("INSERT INTO mta_sts_policies (domain, policy_id, mode, mx, max_age, policy_text, fetched_at, expires_at) VALUES ('peer.test', 'a1', 'enforce', '[\"mx.peer.test\"]', 86400, '', ?, ?)").run(Date.now(), Date.now() + 86_400_000);
  try {
    const after = await runCli(['doctor'], env);
    assert.match(after.stdout, /✓ the resolver validates DNSSEC \(answers carry the AD bit\): DANE is checked/);
    assert.match(after.stdout, /✓ MTA-STS: 1 recipient domain policy cached \(1 enforce, 0 expired\)/);
  } finally {
    dns.authenticate('.', false);
    t.app.db.prepare("DELETE FROM mta_sts_policies").run();
  }
});

sqliteOnly(test)('doctor sees a stopped server and a PTR naming another host', async () => {
  dns.set('1.0.0.127.in-addr.arpa', 'PTR', ['vps-1234.provider.test']);
  const res = await runCli(['doctor'], { ...env, MAILWRIGHT_HTTP_PORT: '1', MAILWRIGHT_SMTP_PORT: '1' });
  assert.is(res.code, 1);
  assert.match(res.stdout, /✗ serve is not listening/);
  assert.match(res.stdout, /has PTR vps-1234\.provider\.test, not mx\.mailwright\.test/);
});

sqliteOnly(test)('doctor reports a public address where nothing answers on 25 or 587, with the fix', async () => {
  dns.set(HOST, 'A', ['127.0.0.2']);
  try {
    const res = await runCli(['doctor'], env);
    assert.is(res.code, 1, res.stdout);
    assert.match(res.stdout, /✓ serve is listening/);
    for (const [name, port] of [['SMTP', t.smtpPort], ['submission', t.submissionPort]] as const) {
      const at = res.stdout.indexOf(`✗ port ${port} (${name}) on 127.0.0.2: connection refused`);
      assert.ok(at >= 0, res.stdout);
      const fix = res.stdout.slice(at).split('\n')[1];
      assert.ok(fix.includes('fix: serve listens on 127.0.0.1 only: set smtp_host = "0.0.0.0" (or "127.0.0.2") and restart it'), fix);
      assert.ok(fix.includes(`ufw allow ${port}/tcp`) && fix.includes("provider's firewall or security group"), fix);
    }
  } finally {
    dns.set(HOST, 'A', ['127.0.0.1']);
  }
});

sqliteOnly(test)('doctor fails on a hostname that cannot be right, with the fix, and offers no record naming it', async () => {
  const res = await runCli(['doctor'], { ...env, MAILWRIGHT_HOSTNAME: 'vm' });
  assert.is(res.code, 1, res.stdout);
  const at = res.stdout.indexOf(`✗ The box's hostname "vm" is not a fully qualified domain name`);
  assert.ok(at >= 0, res.stdout);
  assert.match(res.stdout.slice(at).split('\n')[1], /^\s+fix: set hostname \(MAILWRIGHT_HOSTNAME\) to the box's public name, such as mail\.example\.com/);
  assert.not.match(res.stdout, /vm has no A or AAAA record/, 'no lookups of a name that cannot be right');
  assert.match(res.stdout, /· MX    bounces\.doc\.test MX: shown once the box's hostname is a public name \(see above\)/);
  assert.match(res.stdout, /· SPF   bounces\.doc\.test TXT: shown once/);
  assert.not.match(res.stdout, /MX 10 vm|a:vm/, 'no record names vm');
});

test.run();
