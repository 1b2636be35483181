// What ACME keeps under <data_dir>/acme/: the account key, one key and chain per name, and status.json (the
// last outcome per name, which `doctor` and GET /doctor read). Every file is 0600 in a 0700 folder and written
// aside then renamed, so a crash never leaves half a key or a key without its chain.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const acmeDir = (dataDir: string) => join(dataDir, 'acme');

/** What the last attempt for one name left: the certificate in use, and the last error if the attempt failed. */
export interface NameStatus {
  name: string;
  /** The certificate in use: what it names, who issued it, when it runs out and when it is renewed. */
  certificate: { names: string[]; issuer: string; serial: string; notBefore: string; expiresAt: string; renewAt: string } | null;
  lastError: { message: string; at: string } | null;
  /** Failures in a row since the last success (the backoff doubles with each). */
  failures: number;
  /** When the next attempt may be made after a failure; null when none failed. */
  retryAt: string | null;
}

export type AcmeStatus = Record<string, NameStatus>;

// Names are host names (letters, digits, dots, dashes), so they are safe as file names.
const keyFile = (dir: string, name: string) => join(dir, `${name}.key`);
const chainFile = (dir: string, name: string) => join(dir, `${name}.crt`);
const ACCOUNT_KEY = 'account.key';
const STATUS = 'status.json';

export function writePrivately(dir: string, files: Array<[name: string, data: string | Buffer]>): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    for (const [name, data] of files) writeFileSync(join(dir, `${name}.tmp`), data, { mode: 0o600 });
  } catch (err) {
    for (const [name] of files) rmSync(join(dir, `${name}.tmp`), { force: true });
    throw err;
  }
  for (const [name] of files) renameSync(join(dir, `${name}.tmp`), join(dir, name));
}

export function readAccountKey(dir: string): Buffer | null {
  const file = join(dir, ACCOUNT_KEY);
  return existsSync(file) ? readFileSync(file) : null;
}

export const writeAccountKey = (dir: string, key: Buffer) => writePrivately(dir, [[ACCOUNT_KEY, key]]);

export function readIssued(dir: string, name: string): { key: Buffer; cert: Buffer } | null {
  if (!existsSync(keyFile(dir, name)) || !existsSync(chainFile(dir, name))) return null;
  return { key: readFileSync(keyFile(dir, name)), cert: readFileSync(chainFile(dir, name)) };
}

export const writeIssued = (dir: string, name: string, key: Buffer, cert: Buffer) =>
  writePrivately(dir, [
    [`${name}.key`, key],
    [`${name}.crt`, cert],
  ]);

export function removeIssued(dir: string, name: string): void {
  rmSync(keyFile(dir, name), { force: true });
  rmSync(chainFile(dir, name), { force: true });
}

export function readStatus(dir: string): AcmeStatus {
  try {
    return JSON.parse(readFileSync(join(dir, STATUS), 'utf8')) as AcmeStatus;
  } catch {
    return {};
  }
}

export const writeStatus = (dir: string, status: AcmeStatus) => writePrivately(dir, [[STATUS, `${JSON.stringify(status, null, 2)}\n`]]);

export const issuedPaths = (dir: string, name: string) => ({ key: keyFile(dir, name), cert: chainFile(dir, name) });
