// What earlier releases kept under <data_dir>/acme/ (the account key, one key and chain per name, status.json):
// moved into the store at start, so a box upgrading keeps its certificates and account. A name the store already
// holds a longer-lived certificate for keeps it (another node imported first, or ordered since). The folder is
// then renamed acme.imported/: kept for a downgrade, never read again, so a name deleted from the store is
// ordered anew rather than imported again from a stale file.
import { existsSync, readFileSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Log } from '../log.ts';
import type { Store } from '../db/store.ts';
import { run } from '../db/query.ts';
import { importStatus, putCertificate, type AcmeStatus } from './stored.ts';

export const acmeDir = (dataDir: string) => join(dataDir, 'acme');

function readJson(file: string): AcmeStatus {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as AcmeStatus;
  } catch {
    return {};
  }
}

/** Imports <data_dir>/acme/ into the store if it exists; resolves with the names whose certificate was taken. */
export async function importFiles(store: Store, dataDir: string, now: number, log: Log): Promise<string[]> {
  const dir = acmeDir(dataDir);
  if (!existsSync(dir)) return [];
  const imported: string[] = [];
  try {
    const accountFile = join(dir, 'account.key');
    if (existsSync(accountFile)) {
      const key = readFileSync(accountFile);
      await store.write(() => run("INSERT INTO box_settings (key, value) VALUES ('acme_account_key', ?) ON CONFLICT DO NOTHING", key));
    }
    const status = readJson(join(dir, 'status.json'));
    // Names are host names (letters, digits, dots, dashes), so they were safe as file names.
    const names = new Set([...Object.keys(status), ...readdirSync(dir).filter((f) => f.endsWith('.crt')).map((f) => f.slice(0, -4))]);
    for (const name of names) {
      const [keyFile, certFile] = [join(dir, `${name}.key`), join(dir, `${name}.crt`)];
      if (existsSync(keyFile) && existsSync(certFile)) {
        try {
          const [key, cert] = [readFileSync(keyFile), readFileSync(certFile)];
          if (await store.write(() => putCertificate(name, key, cert, now, true))) imported.push(name);
        } catch (err) {
          log.warn('an ACME certificate on disk could not be read; it is ordered again', { name, err });
        }
      }
      if (status[name]) await store.write(() => importStatus({ ...status[name], name }, now));
    }
    renameSync(dir, `${dir}.imported`);
    log.info('moved the ACME account and certificates from the data directory into the store', { names: imported, keptIn: `${dir}.imported` });
  } catch (err) {
    // Another process on the same data directory moved it first, or the disk refused: the store is used as it is.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn('could not move the ACME files of the data directory into the store', { dir, err });
  }
  return imported;
}
