// Test-only: Let's Encrypt's test ACME server (Debian's /usr/bin/pebble) on free loopback ports, with its own
// HTTPS certificate made by openssl here (the `ca` file is what the box's acme_ca_file names), validating
// HTTP-01 on `httpPort` and resolving names through the test's DNS server.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { freePort, tempDir } from './app.ts';

export interface Pebble {
  directory: string;
  /** The CA that signed Pebble's own HTTPS certificate (PEM file). */
  caFile: string;
  /** Pebble's issuing root now (GET /roots/0 on the management port), PEM. */
  root(): Promise<string>;
  output(): string;
  stop(): Promise<void>;
}

function httpsGet(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

function makeServerCertificate(dir: string): { caFile: string; cert: string; key: string } {
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=pebble test CA']);
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost']);
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  run(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'ext.cnf']);
  return { caFile: join(dir, 'ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server.key') };
}

/** Starts Pebble; `validitySeconds` sets the lifetime of what it issues. */
export async function startPebble(opts: { httpPort: number; dnsServer: string; validitySeconds?: number }): Promise<Pebble> {
  const dir = tempDir('mailwright-pebble-');
  const { caFile, cert, key } = makeServerCertificate(dir);
  const [port, management, tlsPort] = [await freePort(), await freePort(), await freePort()];
  const config = {
    pebble: {
      listenAddress: `127.0.0.1:${port}`,
      managementListenAddress: `127.0.0.1:${management}`,
      certificate: cert,
      privateKey: key,
      httpPort: opts.httpPort,
      tlsPort,
      ocspResponderURL: '',
      externalAccountBindingRequired: false,
      certificateValidityPeriod: opts.validitySeconds ?? 90 * 86_400,
    },
  };
  writeFileSync(join(dir, 'pebble.json'), JSON.stringify(config));
  const child: ChildProcess = spawn('/usr/bin/pebble', ['-config', join(dir, 'pebble.json'), '-dnsserver', opts.dnsServer], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ca = `${execFileSync('cat', [caFile])}`;
  const directory = `https://127.0.0.1:${port}/dir`;
  for (let i = 0; ; i++) {
    const up = await httpsGet(directory, ca).then((r) => r.status === 200, () => false);
    if (up) break;
    if (i > 100 || child.exitCode !== null) throw new Error(`pebble did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    directory,
    caFile,
    root: async () => (await httpsGet(`https://127.0.0.1:${management}/roots/0`, ca)).body,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
