// `systemctl reload` (SIGHUP): a renewed certificate in tls_cert/tls_key is served to the next STARTTLS on
// both SMTP listeners, without a restart and without dropping the session that is open.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { generate } from 'selfsigned';
import { freePort, startTestApp, tempDir, type TestApp } from '../testkit/app.ts';
import { loadConfig } from '../config/config.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';

const dir = tempDir();
const certFile = join(dir, 'cert.pem');
const keyFile = join(dir, 'key.pem');
let t: TestApp;

async function writeCertificate(name: string): Promise<string> {
  const made = await generate([{ name: 'commonName', value: name }], { keySize: 2048, days: 30, algorithm: 'sha256' } as Parameters<typeof generate>[1]);
  writeFileSync(certFile, made.cert);
  writeFileSync(keyFile, made.private);
  return new X509Certificate(made.cert).fingerprint256;
}

async function servedFingerprint(port: number): Promise<string> {
  const c = await RawSmtp.open(port);
  try {
    await c.read();
    await c.command('EHLO client.example');
    assert.is((await c.command('STARTTLS')).code, 220);
    const secure = await c.startTls('mx.mailwright.test');
    return new X509Certificate(secure.getPeerCertificate(true).raw).fingerprint256;
  } finally {
    c.close();
  }
}

test('a new certificate is served after reload, on MX and submission', async () => {
  const first = await writeCertificate('first.mailwright.test');
  t = await startTestApp({ env: { MAILWRIGHT_TLS_CERT: certFile, MAILWRIGHT_TLS_KEY: keyFile, MAILWRIGHT_SUBMISSION_PORT: String(await freePort()) } });
  try {
    assert.is(await servedFingerprint(t.smtpPort), first);
    const second = await writeCertificate('second.mailwright.test');
    assert.is(await servedFingerprint(t.smtpPort), first, 'nothing changes before the reload');
    await t.running.reload(loadConfig(t.env));
    assert.is(await servedFingerprint(t.smtpPort), second);
    assert.is(await servedFingerprint(t.submissionPort!), second);
  } finally {
    await t.stop();
  }
});

test.run();
