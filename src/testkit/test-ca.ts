// Test-only: a certificate authority made with openssl in a temporary directory, and certificates it signs for
// the names a test asks for (valid, or already expired), so a client that trusts only this CA (tls_ca_file,
// FetchPolicy.ca, NODE_EXTRA_CA_CERTS) checks chains, names and dates as it would against a public one.
import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from './app.ts';

const run = promisify(execFile);
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export interface TestCa {
  dir: string;
  /** The CA certificate PEM, to trust. */
  cert: string;
  /** Its file, for MAILWRIGHT_TLS_CA_FILE or NODE_EXTRA_CA_CERTS. */
  certFile: string;
  /** A key and a certificate for these DNS names, signed by the CA; `expired`: its notAfter already past. */
  issue(names: string[], opts?: { expired?: boolean }): Promise<{ key: string; cert: string }>;
  close(): Promise<void>;
}

export async function createTestCa(): Promise<TestCa> {
  const dir = tempDir('mailwright-ca-');
  const caKey = join(dir, 'ca.key');
  const certFile = join(dir, 'ca.pem');
  await run('openssl', ['req', '-x509', ...EC, '-keyout', caKey, '-out', certFile, '-days', '3', '-subj', '/CN=Mailwright Test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  let serial = 0;
  return {
    dir,
    cert: await readFile(certFile, 'utf8'),
    certFile,
    async issue(names, opts = {}) {
      const n = ++serial;
      const [key, csr, cert, ext] = ['key', 'csr', 'pem', 'ext'].map((suffix) => join(dir, `leaf${n}.${suffix}`)) as [string, string, string, string];
      await writeFile(ext, `subjectAltName=${names.map((name) => `DNS:${name}`).join(',')}\nextendedKeyUsage=serverAuth\n`);
      await run('openssl', ['req', ...EC, '-keyout', key, '-out', csr, '-subj', `/CN=${names[0]}`]);
      // -days -1 puts notAfter a day before notBefore: a certificate that has expired.
      await run('openssl', ['x509', '-req', '-in', csr, '-CA', certFile, '-CAkey', caKey, '-set_serial', String(1000 + n), '-out', cert, '-days', opts.expired ? '-1' : '2', '-extfile', ext]);
      return { key: await readFile(key, 'utf8'), cert: await readFile(cert, 'utf8') };
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}
