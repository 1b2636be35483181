// A box upgrading from a release that kept ACME in <data_dir>/acme/: at start the account key, each name's key
// and chain and status.json move into the store (on both engines), the folder is renamed acme.imported/, and a
// second node's older copy of a certificate does not replace the newer one the store holds.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLog } from '../log.ts';
import { all, column, value } from '../db/query.ts';
import { bothStores } from '../testkit/postgres.ts';
import { tempDir } from '../testkit/app.ts';
import { importFiles } from './files.ts';
import { readStatus } from './stored.ts';

const HOST = 'mx.upgrade.test';
const log = createLog({ level: 'error', write: () => {} });

/** An earlier release's <data_dir>/acme/ with a certificate for HOST valid `days` days. */
function earlierRelease(days: number): { dataDir: string; cert: string } {
  const dataDir = tempDir();
  const dir = join(dataDir, 'acme');
  mkdirSync(dir, { mode: 0o700 });
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, `${HOST}.key`), '-out', join(dir, `${HOST}.crt`), '-days', String(days), '-subj', `/CN=${HOST}`, '-addext', `subjectAltName=DNS:${HOST}`], { stdio: 'pipe' });
  writeFileSync(join(dir, 'account.key'), 'ACCOUNT KEY PEM');
  const status = { [HOST]: { name: HOST, certificate: null, lastError: { message: 'connect ECONNREFUSED', at: '2026-11-01T00:00:00.000Z' }, failures: 2, retryAt: '2026-11-01T02:00:00.000Z' } };
  writeFileSync(join(dir, 'status.json'), JSON.stringify(status));
  return { dataDir, cert: readFileSync(join(dir, `${HOST}.crt`), 'utf8') };
}

test('the files of an earlier release move into the store on either engine; an older copy never replaces a newer one', async () => {
  const { stores, close } = await bothStores();
  const dirs: string[] = [];
  try {
    for (const store of stores) {
      const newer = earlierRelease(90);
      const older = earlierRelease(30);
      dirs.push(newer.dataDir, older.dataDir);
      assert.equal(await importFiles(store, newer.dataDir, 1000, log), [HOST], store.dialect);
      assert.ok(existsSync(join(newer.dataDir, 'acme.imported', `${HOST}.crt`)), 'kept aside for a downgrade');
      assert.not.ok(existsSync(join(newer.dataDir, 'acme')), 'and never read again');
      assert.equal(await store.read(all('SELECT name, cert_pem FROM acme_certificates')), [{ name: HOST, cert_pem: newer.cert }]);
      assert.equal((await store.read(value<Buffer>("SELECT value FROM box_settings WHERE key = 'acme_account_key'")))!.toString(), 'ACCOUNT KEY PEM');
      const status = (await store.read(readStatus()))[HOST]!;
      assert.equal([status.certificate?.names, status.failures, status.lastError?.message, status.retryAt], [[HOST], 2, 'connect ECONNREFUSED', '2026-11-01T02:00:00.000Z']);

      // Another node's data directory with a certificate that runs out sooner: the store keeps the newer one.
      assert.equal(await importFiles(store, older.dataDir, 2000, log), [], store.dialect);
      assert.equal(await store.read(column<string>('SELECT cert_pem FROM acme_certificates')), [newer.cert]);
      assert.equal(await importFiles(store, newer.dataDir, 3000, log), [], 'nothing left to import');
    }
  } finally {
    await close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
