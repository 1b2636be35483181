// The certificate STARTTLS offers: the operator's (MAILWRIGHT_TLS_CERT / _KEY), or one the box makes for
// MAILWRIGHT_HOSTNAME and keeps in the data directory. Senders use STARTTLS opportunistically, so a
// self-signed certificate still encrypts the session; it is renewed when it no longer names the host or
// is within 30 days of expiry.
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/config.ts';

const RENEW_BEFORE_MS = 30 * 24 * 60 * 60 * 1000;
const VALID_DAYS = 2 * 365;

export interface TlsCredentials {
  key: Buffer;
  cert: Buffer;
  /** True when the box made the certificate itself. */
  selfSigned: boolean;
  /** A certificate made now that could not be kept (a full disk): it serves from memory and is made again next start. */
  notSaved?: { path: string; reason: string };
}

export async function tlsCredentials(config: Pick<Config, 'tlsCert' | 'tlsKey' | 'hostname' | 'dataDir'>, now = Date.now()): Promise<TlsCredentials> {
  if (config.tlsCert && config.tlsKey) return { key: readFileSync(config.tlsKey), cert: readFileSync(config.tlsCert), selfSigned: false };
  const dir = join(config.dataDir, 'tls');
  const keyFile = join(dir, 'self-signed.key');
  const certFile = join(dir, 'self-signed.crt');
  if (existsSync(keyFile) && existsSync(certFile)) {
    const cert = readFileSync(certFile);
    const x509 = new X509Certificate(cert);
    if (x509.checkHost(config.hostname) && Date.parse(x509.validTo) - now > RENEW_BEFORE_MS) return { key: readFileSync(keyFile), cert, selfSigned: true };
  }
  // Loaded only to make a certificate: its X.509 and ASN.1 libraries are about 25 MiB the box otherwise never needs.
  const { generate } = await import('selfsigned');
  const made = await generate([{ name: 'commonName', value: config.hostname }], {
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + VALID_DAYS * 24 * 60 * 60 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: config.hostname }] },
    ],
  } as Parameters<typeof generate>[1]);
  const credentials = { key: Buffer.from(made.private), cert: Buffer.from(made.cert), selfSigned: true };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // Written aside and renamed, so a crash never leaves a key without its certificate (or half of either).
    writeFileSync(`${keyFile}.tmp`, made.private, { mode: 0o600 });
    writeFileSync(`${certFile}.tmp`, made.cert, { mode: 0o600 });
    renameSync(`${keyFile}.tmp`, keyFile);
    renameSync(`${certFile}.tmp`, certFile);
  } catch (err) {
    // A full disk must not stop the start (catalogue DUR-13): STARTTLS works with the certificate in memory.
    for (const tmp of [`${keyFile}.tmp`, `${certFile}.tmp`]) rmSync(tmp, { force: true });
    return { ...credentials, notSaved: { path: certFile, reason: (err as Error).message } }; // Node's message names the code: 'ENOSPC: no space left on device, write'
  }
  return credentials;
}
