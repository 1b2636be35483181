// Test-only certificate authority made with the openssl CLI in a temporary directory: a CA certificate (what a
// test passes as tls_ca_file) and leaf certificates it signs for given names, valid or already expired.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCa {
  /** The CA certificate, PEM. */
  cert: string;
  /** Its path, for MAILWRIGHT_TLS_CA_FILE. */
  certFile: string;
  issue(names: string[], opts?: { expired?: boolean }): Promise<{ key: string; cert: string }>;
  close(): Promise<void>;
}

export async function startTestCa(): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'test-ca-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await run('openssl', ['req', '-x509', ...ec, '-keyout', join(dir, 'ca.key'), '-out', join(dir, 'ca.pem'), '-days', '3', '-subj', '/CN=Mailwright Test CA']);
  let serial = 0;
  return {
    cert: await readFile(join(dir, 'ca.pem'), 'utf8'),
    certFile: join(dir, 'ca.pem'),
    async issue(names, opts = {}) {
      const n = ++serial;
      const [key, csr, ext, pem] = ['key', 'csr', 'ext', 'pem'].map((x) => join(dir, `leaf${n}.${x}`)) as [string, string, string, string];
      await run('openssl', ['req', ...ec, '-keyout', key, '-out', csr, '-subj', `/CN=${names[0]}`]);
      await writeFile(ext, `subjectAltName=${names.map((d) => `DNS:${d}`).join(',')}\nextendedKeyUsage=serverAuth\n`);
      // -days -1 puts notAfter a day before notBefore: a certificate that has expired.
      await run('openssl', ['x509', '-req', '-in', csr, '-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key'), '-set_serial', String(1000 + n), '-days', opts.expired ? '-1' : '2', '-extfile', ext, '-out', pem]);
      return { key: await readFile(key, 'utf8'), cert: await readFile(pem, 'utf8') };
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}
