// The MX listener of a box with no domain set up for inbound mail: it greets and answers EHLO as
// MAILWRIGHT_HOSTNAME, advertises SIZE, offers no AUTH, and refuses every recipient: nothing is local, so
// accepting one would make the box an open relay (catalogue PROTO-07). Receiving: src/receive/*.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApp, tempDir, type TestApp } from '../testkit/app.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';

let t: TestApp;
test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_MAX_MESSAGE_BYTES: '1048576' } });
});
test.after(() => t.stop());

test('greets and answers EHLO as the configured host name, with SIZE and without AUTH', async () => {
  const c = await RawSmtp.open(t.smtpPort);
  const greeting = await c.read();
  assert.is(greeting.code, 220);
  assert.match(greeting.text, /^mx\.mailwright\.test /);
  const ehlo = await c.command('EHLO client.example');
  assert.is(ehlo.code, 250);
  assert.match(ehlo.lines[0], /^250-mx\.mailwright\.test/);
  assert.ok(ehlo.lines.some((l) => l.slice(4) === 'SIZE 1048576'), ehlo.text);
  assert.not.ok(ehlo.lines.some((l) => l.slice(4).startsWith('AUTH')));
  c.close();
});

test('an oversized declared SIZE is refused with 552', async () => {
  const c = await RawSmtp.open(t.smtpPort);
  await c.read();
  await c.command('EHLO client.example');
  const mail = await c.command('MAIL FROM:<a@example.org> SIZE=2000000');
  assert.is(mail.code, 552);
  c.close();
});

test('every recipient is refused with 554 5.7.1: the box relays for no one', async () => {
  const c = await RawSmtp.open(t.smtpPort);
  await c.read();
  await c.command('EHLO client.example');
  assert.is((await c.command('MAIL FROM:<a@example.org>')).code, 250);
  for (const rcpt of ['<u@other.test>', '<u%other.test@mx.mailwright.test>', '<@mx.mailwright.test:u@other.test>', '<u@[192.0.2.1]>', '<postmaster@other.test>']) {
    const reply = await c.command(`RCPT TO:${rcpt}`);
    assert.is(reply.code, 554, `${rcpt}: ${reply.text}`);
    assert.match(reply.text, /^5\.7\.1 /);
  }
  const data = await c.command('DATA');
  assert.is(data.code, 503, 'no DATA without an accepted recipient');
  c.close();
});

test('STARTTLS is offered with the certificate of MAILWRIGHT_TLS_CERT / _KEY, or a self-signed one for the host name', async () => {
  const dir = tempDir();
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=mx.mailwright.test', '-days', '1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  const withTls = await startTestApp({ env: { MAILWRIGHT_TLS_CERT: cert, MAILWRIGHT_TLS_KEY: key } });
  try {
    const c = await RawSmtp.open(withTls.smtpPort);
    await c.read();
    assert.ok((await c.command('EHLO client.example')).lines.some((l) => l.slice(4) === 'STARTTLS'));
    assert.is((await c.command('STARTTLS')).code, 220);
    const tls = await c.startTls('mx.mailwright.test');
    assert.is(tls.getPeerCertificate().subject.CN, 'mx.mailwright.test');
    const after = await c.command('EHLO client.example');
    assert.is(after.code, 250, 'the dialogue goes on over TLS');
    assert.not.ok(after.lines.some((l) => l.slice(4) === 'STARTTLS'));
    c.close();
  } finally {
    await withTls.stop();
  }
  const c = await RawSmtp.open(t.smtpPort);
  await c.read();
  assert.ok((await c.command('EHLO client.example')).lines.some((l) => l.slice(4) === 'STARTTLS'), 'without a configured certificate STARTTLS is still offered');
  assert.is((await c.command('STARTTLS')).code, 220);
  const tls = await c.startTls('mx.mailwright.test');
  const peer = tls.getPeerCertificate();
  assert.is(peer.subject.CN, 'mx.mailwright.test', 'a self-signed certificate for MAILWRIGHT_HOSTNAME');
  assert.match(peer.subjectaltname ?? '', /DNS:mx\.mailwright\.test/);
  c.close();
  const pem = readFileSync(join(t.dataDir, 'tls', 'self-signed.crt'));
  assert.ok(new X509Certificate(pem).checkHost('mx.mailwright.test'), 'kept in the data directory');
});

test.run();
