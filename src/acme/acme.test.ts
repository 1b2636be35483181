// Certificates by ACME against a real Pebble (Debian's /usr/bin/pebble), which validates HTTP-01 on the box's
// acme_http_port and resolves its names through the test DNS server: the certificate it issues is served by
// STARTTLS and HTTPS and verifies to Pebble's root, kept 0600; a renewal swaps it in while an SMTP session opened
// before goes on; a failure (Pebble stopped) keeps the old one, and records the error that doctor shows.
import { eventually } from '../testkit/outbound.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { get } from 'node:https';
import { join } from 'node:path';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { loadConfig } from '../config/config.ts';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { freePort, request, runCli, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';
import { get as row, run, value } from '../db/query.ts';
import { startPebble, type Pebble } from '../testkit/pebble.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';

const HOST = 'mx.mailwright.test';
let dns: DnsServer;
let pebble: Pebble;
let t: TestApp;
let root: string;
let key: string;

/** An SMTP session on the MX listener after STARTTLS, verifying the certificate against Pebble's root. */
async function startTlsSession(): Promise<{ smtp: RawSmtp; secure: TLSSocket }> {
  const smtp = await RawSmtp.open(t.smtpPort);
  assert.is((await smtp.read()).code, 220);
  assert.is((await smtp.command('EHLO client.test')).code, 250);
  assert.is((await smtp.command('STARTTLS')).code, 220);
  const secure = await smtp.startTls(HOST, { ca: root });
  assert.is(secure.authorizationError, null, 'the chain served verifies to Pebble\'s root');
  assert.ok(secure.authorized);
  assert.is((await smtp.command('EHLO client.test')).code, 250, 'RFC 3207 4.2: the client says EHLO again over TLS');
  return { smtp, secure };
}

function httpsPeer(servername = HOST, host = servername): Promise<{ status: number; cert: PeerCertificate; authorized: boolean }> {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port: t.running.https!.port, path: '/healthz', servername, headers: { host }, ca: root, agent: false }, (res) => {
      const socket = res.socket as TLSSocket;
      const cert = socket.getPeerCertificate();
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, cert, authorized: socket.authorized }));
    });
    req.on('error', reject);
  });
}

function plain(port: number, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; location?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const status = () => t.running.acme!.currentStatus()[HOST];

test.before(async () => {
  dns = await startDnsServer();
  dns.add(HOST, 'A', '127.0.0.1');
  const acmeHttpPort = await freePort();
  pebble = await startPebble({ httpPort: acmeHttpPort, dnsServer: dns.address });
  t = await startTestApp({
    env: {
      MAILWRIGHT_DNS_SERVERS: dns.address,
      MAILWRIGHT_ACME: 'true',
      MAILWRIGHT_ACME_DIRECTORY: pebble.directory,
      MAILWRIGHT_ACME_CA_FILE: pebble.caFile,
      MAILWRIGHT_ACME_EMAIL: 'postmaster@mailwright.test',
      MAILWRIGHT_ACME_HTTP_PORT: String(acmeHttpPort),
      MAILWRIGHT_HTTPS_PORT: String(await freePort()),
    },
  });
  key = (await seedWorkspace(t)).key;
  root = await pebble.root();
});
test.after(async () => {
  await t?.stop();
  await pebble?.stop();
  await dns?.close();
});

test('the box obtains a certificate for its hostname and serves it by STARTTLS and HTTPS, kept in the store', async () => {
  await eventually(() => t.running.acme!.forHostname(), 60_000, 'the first certificate');
  const issued = status().certificate!;
  assert.equal(issued.names, [HOST]);
  assert.match(issued.issuer, /Pebble/i);
  const { smtp, secure } = await startTlsSession();
  assert.is(secure.getPeerCertificate().serialNumber, issued.serial, 'STARTTLS on the MX listener serves the ACME certificate');
  assert.is((await smtp.command('QUIT')).code, 221);
  const https = await httpsPeer();
  assert.is(https.status, 200, 'the HTTPS listener serves the app for the certificate\'s name');
  assert.ok(https.authorized);
  assert.is(https.cert.serialNumber, issued.serial);
  const tls = (await request(`${t.api}/account`, { key })).body.infrastructure.tls;
  assert.equal([tls.source, tls.names, tls.acme.lastError], ['acme', [HOST], null], 'GET /account shows the certificate in use');
  assert.match(tls.issuer, /Pebble/);
  // Kept in the store, which every node reads, not in the data directory.
  const held = await t.app.store.read(row<{ key_pem: string; cert_pem: string }>('SELECT key_pem, cert_pem FROM acme_certificates WHERE name = ?', HOST));
  assert.match(held!.key_pem, /PRIVATE KEY/);
  assert.is(new X509Certificate(held!.cert_pem).serialNumber, issued.serial);
  assert.ok(await t.app.store.read(value("SELECT value FROM box_settings WHERE key = 'acme_account_key'")), 'the account key too');
  assert.not.ok(existsSync(join(t.dataDir, 'acme')), 'nothing under <data_dir>/acme');
});

test('the challenge port serves challenges only: anything else is a redirect to HTTPS, never the API', async () => {
  const port = t.running.acmeHttp!.port;
  const api = await plain(port, 'GET', '/api/v1/domains', { host: HOST, authorization: `Bearer ${key}` });
  assert.is(api.status, 301);
  assert.is(api.location, `https://${HOST}:${t.running.https!.port}/api/v1/domains`);
  assert.is(api.body, '', 'nothing of the API is answered');
  assert.is((await plain(port, 'GET', '/.well-known/acme-challenge/not-a-token', { host: HOST })).status, 404);
  assert.is((await plain(port, 'POST', '/api/v1/emails', { host: HOST, authorization: `Bearer ${key}` })).status, 404);
});

test('a renewal swaps the certificate in: a session opened before goes on, the next STARTTLS sees the new one', async () => {
  const before = status().certificate!;
  const open = await startTlsSession();
  assert.is(open.secure.getPeerCertificate().serialNumber, before.serial);
  // Past two thirds of the lifetime by the renewal's clock.
  await t.running.acme!.renewDue(Date.parse(before.renewAt) + 1000);
  const after = status().certificate!;
  assert.is.not(after.serial, before.serial, 'a new certificate was issued');
  assert.is((await open.smtp.command('NOOP')).code, 250, 'the session opened before the renewal still works');
  assert.is((await open.smtp.command('MAIL FROM:<a@client.test>')).code, 250);
  assert.is((await open.smtp.command('QUIT')).code, 221);
  const next = await startTlsSession();
  assert.is(next.secure.getPeerCertificate().serialNumber, after.serial, 'a new STARTTLS gets the renewed certificate');
  next.smtp.close();
  assert.is((await httpsPeer()).cert.serialNumber, after.serial, 'and so does a new HTTPS connection');
});

test('each ready domain\'s mta-sts name gets its own certificate once it points at the box; HTTPS serves it by name', async () => {
  for (const name of ['sts.test', 'nodns.test']) {
    assert.is((await request(`${t.api}/domains`, { body: { name }, key })).status, 201);
    await t.app.store.write(() => run("UPDATE domains SET inbound_status = 'ready' WHERE name = ?", name));
  }
  dns.add('mta-sts.sts.test', 'CNAME', HOST);
  await t.running.acme!.renewDue();
  const all = t.running.acme!.currentStatus();
  const sts = all['mta-sts.sts.test']?.certificate;
  assert.equal(sts?.names, ['mta-sts.sts.test'], JSON.stringify(all));
  assert.is(all['mta-sts.nodns.test'], undefined, 'a name that does not point at the box is not ordered');
  assert.is(all[HOST].certificate!.serial, status().certificate!.serial);
  const https = await httpsPeer('mta-sts.sts.test');
  assert.is(https.status, 200, 'the app answers to the policy host');
  assert.ok(https.authorized);
  assert.is(https.cert.serialNumber, sts!.serial, 'SNI picks the policy host\'s certificate');
  assert.is((await httpsPeer(HOST)).cert.serialNumber, all[HOST].certificate!.serial);
  assert.is((await httpsPeer(HOST, 'elsewhere.test')).status, 421, 'a Host the box holds no certificate for is still refused (DNS rebinding)');
  // A reload (SIGHUP) reads the operator's files again, and leaves the ACME certificate in use.
  await t.running.reload(loadConfig(t.env));
  const again = await startTlsSession();
  assert.is(again.secure.getPeerCertificate().serialNumber, all[HOST].certificate!.serial);
  again.smtp.close();
});

test('an ACME failure keeps the certificate in use, records the error with a backoff, and doctor shows it', async () => {
  const before = status().certificate!;
  await pebble.stop();
  const at = Date.parse(before.renewAt) + 1000;
  await t.running.acme!.renewDue(at);
  const s = status();
  assert.is(s.certificate!.serial, before.serial, 'the old certificate stays');
  assert.is(s.failures, 1);
  assert.match(s.lastError!.message, /ECONNREFUSED/, s.lastError!.message);
  assert.is(Date.parse(s.retryAt!), at + 3_600_000, 'the next attempt waits an hour');
  // Within the backoff nothing is ordered again; past it the next failure waits twice as long.
  await t.running.acme!.renewDue(at + 60_000);
  assert.is(status().failures, 1);
  await t.running.acme!.renewDue(at + 3_600_000);
  assert.is(Date.parse(status().retryAt!), at + 3_600_000 + 2 * 3_600_000);
  const next = await startTlsSession();
  assert.is(next.secure.getPeerCertificate().serialNumber, before.serial, 'STARTTLS still serves the certificate in use');
  next.smtp.close();

  const account = (await request(`${t.api}/account`, { key })).body.infrastructure.tls;
  assert.is(account.source, 'acme');
  assert.match(account.acme.lastError, /ECONNREFUSED/);
  assert.is(account.acme.retryAt, status().retryAt);
  const doctor = await request(`${t.api}/doctor`, { key });
  const finding = doctor.body.findings.find((f: any) => f.check === 'certificate');
  assert.is(finding?.status, 'problem', JSON.stringify(doctor.body.findings));
  assert.match(finding.message, /ECONNREFUSED/);
  assert.match(finding.message, new RegExp(`expires ${before.expiresAt.slice(0, 10)}`));
  // doctor is another process: it reads the status from the store, as serve left it.
  const cli = await runCli(['doctor'], { ...t.env, MAILWRIGHT_HTTP_PORT: String(t.running.http.port), MAILWRIGHT_SMTP_PORT: String(t.smtpPort) });
  assert.match(cli.stdout, new RegExp(`✗ ACME certificate for ${HOST.replace(/\./g, '\\.')} by .*ECONNREFUSED`));
  assert.ok(cli.stdout.includes(`fix: check that ${HOST} resolves to this box`), cli.stdout);
});

test('a policy host that no longer points at the box is not renewed, and is dropped once its certificate expired', async () => {
  const before = t.running.acme!.currentStatus()['mta-sts.sts.test'];
  const sts = before.certificate!;
  dns.remove('mta-sts.sts.test');
  // Past its renewal time and past any backoff (Pebble is stopped since the last test: an order would fail).
  await t.running.acme!.renewDue(Date.parse(sts.renewAt) + 2 * 86_400_000);
  const after = t.running.acme!.currentStatus()['mta-sts.sts.test'];
  assert.is(after.certificate!.serial, sts.serial, 'kept while it is valid');
  assert.is(after.failures, before.failures, 'and not ordered');
  await t.running.acme!.renewDue(Date.parse(sts.expiresAt) + 1000);
  assert.is(t.running.acme!.currentStatus()['mta-sts.sts.test'], undefined);
  assert.not.ok(t.running.acme!.names().includes('mta-sts.sts.test'));
  assert.is(await t.app.store.read(value('SELECT count(*) FROM acme_certificates WHERE name = ?', 'mta-sts.sts.test')), 0);
});

test.run();
