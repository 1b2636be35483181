// The STARTTLS certificate: the operator's files when configured; otherwise one the box makes for its host
// name, kept in the data directory, reused across restarts and renewed when it no longer fits.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { X509Certificate } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../testkit/app.ts';
import { tlsCredentials } from './certificate.ts';

const DAY = 24 * 60 * 60 * 1000;

test('a self-signed certificate for the host name, kept (key mode 0600) and reused on the next start', async () => {
  const dataDir = tempDir();
  const first = await tlsCredentials({ tlsCert: null, tlsKey: null, hostname: 'mail.example.test', dataDir });
  assert.ok(first.selfSigned);
  const x509 = new X509Certificate(first.cert);
  assert.ok(x509.checkHost('mail.example.test'));
  assert.ok(x509.checkPrivateKey((await import('node:crypto')).createPrivateKey(first.key)), 'the key belongs to the certificate');
  assert.is(statSync(join(dataDir, 'tls', 'self-signed.key')).mode & 0o777, 0o600);
  const again = await tlsCredentials({ tlsCert: null, tlsKey: null, hostname: 'mail.example.test', dataDir });
  assert.ok(again.cert.equals(first.cert), 'the same certificate after a restart');
});

test('renewed when the host name changes or expiry is within 30 days', async () => {
  const dataDir = tempDir();
  const first = await tlsCredentials({ tlsCert: null, tlsKey: null, hostname: 'one.example.test', dataDir });
  const renamed = await tlsCredentials({ tlsCert: null, tlsKey: null, hostname: 'two.example.test', dataDir });
  assert.not.ok(renamed.cert.equals(first.cert));
  assert.ok(new X509Certificate(renamed.cert).checkHost('two.example.test'));
  const validTo = Date.parse(new X509Certificate(renamed.cert).validTo);
  const late = await tlsCredentials({ tlsCert: null, tlsKey: null, hostname: 'two.example.test', dataDir }, validTo - 29 * DAY);
  assert.not.ok(late.cert.equals(renamed.cert), 'renewed 29 days before it would expire');
});

test('the operator certificate is used as given', async () => {
  const dir = tempDir();
  const made = await tlsCredentials({ tlsCert: null, tlsKey: null, hostname: 'op.example.test', dataDir: dir });
  writeFileSync(join(dir, 'op.crt'), made.cert);
  writeFileSync(join(dir, 'op.key'), made.key);
  const used = await tlsCredentials({ tlsCert: join(dir, 'op.crt'), tlsKey: join(dir, 'op.key'), hostname: 'other.example.test', dataDir: tempDir() });
  assert.equal([used.selfSigned, used.cert.equals(made.cert)], [false, true]);
});

test.run();
