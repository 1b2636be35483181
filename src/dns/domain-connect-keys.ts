// The keys of Domain Connect's signed requests (domain-connect.ts builds the consent URL they sign): the box's
// RSA key in its data directory, created once and kept; its public half as the TXT record a DNS provider reads
// (doctor compares it with what DNS publishes); and the check a DNS provider makes of a signed URL (the tests').
import { createPrivateKey, createPublicKey, generateKeyPair, randomBytes, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DomainConnectError } from './domain-connect.ts';

/** The signing key's file name inside the data directory. */
export const SIGNING_KEY_FILE = 'domain-connect.key';

/**
 * What a DNS provider does with a consent URL: drop sig and key, verify RSA-SHA256 over the rest of the query
 * string as it arrives (so as a browser sends it, after URL normalisation). `key` is outside the signature by
 * the spec; it only says where to find the public key. The key may be a KeyObject, a PEM, the TXT record
 * value ("p=1,a=RS256,d=...") or bare base64 DER.
 */
export function verifyConsentUrl(url: string, publicKey: KeyObject | string): boolean {
  let search: string;
  let key: KeyObject;
  try {
    search = new URL(url).search.slice(1);
    key = toPublicKey(publicKey);
  } catch {
    return false;
  }
  const signed: string[] = [];
  const sigs: string[] = [];
  for (const part of search.split('&')) {
    const name = part.split('=', 1)[0]!;
    if (name === 'sig') sigs.push(part.slice(4));
    else if (name !== 'key') signed.push(part);
  }
  if (sigs.length !== 1) return false;
  try {
    const signature = Buffer.from(decodeURIComponent(sigs[0]!), 'base64');
    return verify('sha256', Buffer.from(signed.join('&'), 'utf8'), key, signature);
  } catch {
    return false;
  }
}

/** Spec "Digitally Sign Requests": the TXT value at <keyHost>.<syncPubKeyDomain>; one record, part 1 of 1. */
export function publicKeyRecord(privateKey: KeyObject): string {
  const der = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  return `p=1,a=RS256,d=${der.toString('base64')}`;
}

/** Reassembles a public key published as one or more TXT records "p=<part>,a=RS256,d=<base64>" (parts in any order). */
export function publicKeyFromRecords(records: string[]): KeyObject {
  const parts = records.map((record) => {
    const fields = new Map(record.split(',').map((kv) => {
      const eq = kv.indexOf('=');
      return [kv.slice(0, eq).trim(), kv.slice(eq + 1).trim()] as const;
    }));
    const algorithm = fields.get('a') ?? 'RS256';
    if (algorithm !== 'RS256') throw new DomainConnectError('bad_key', `public key record uses ${algorithm}, not RS256`);
    const data = fields.get('d');
    if (!data) throw new DomainConnectError('bad_key', 'public key record has no d= data');
    return { part: Number(fields.get('p') ?? '1'), data };
  });
  parts.sort((a, b) => a.part - b.part);
  const der = Buffer.from(parts.map((p) => p.data).join(''), 'base64');
  try {
    return createPublicKey({ key: der, format: 'der', type: 'spki' });
  } catch (err) {
    throw new DomainConnectError('bad_key', 'public key record does not hold a DER SubjectPublicKeyInfo', err);
  }
}

function toPublicKey(key: KeyObject | string): KeyObject {
  if (typeof key !== 'string') return key.type === 'private' ? createPublicKey(key) : key;
  if (key.includes('-----BEGIN')) return createPublicKey(key);
  if (/(^|,)\s*d=/.test(key)) return publicKeyFromRecords([key]);
  return createPublicKey({ key: Buffer.from(key, 'base64'), format: 'der', type: 'spki' });
}

/**
 * The box's signing key, <dataDir>/domain-connect.key (PKCS#8 PEM, mode 0600), created on first use. A new key
 * is written to a temp file, synced, then linked into place: link() fails if another process won the race, and
 * then that process's key is the one returned, so two starters never sign with different keys.
 */
export async function loadOrCreateSigningKey(dataDir: string): Promise<KeyObject> {
  const file = join(dataDir, SIGNING_KEY_FILE);
  const existing = await readKey(file);
  if (existing) return existing;

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const { privateKey } = await promisify(generateKeyPair)('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(pem);
    await handle.sync();
  } finally {
    await handle.close();
  }
  let won = true;
  try {
    await link(temp, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Filesystems without hard links: rename is still atomic, just not exclusive.
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS') await rename(temp, file);
    else if (code === 'EEXIST') won = false;
    else throw err;
  } finally {
    await unlink(temp).catch(() => {});
  }
  await syncDir(dataDir);
  if (won) return privateKey;
  const theirs = await readKey(file);
  if (!theirs) throw new DomainConnectError('bad_key', `${file} vanished right after another process wrote it`);
  return theirs;
}

async function readKey(file: string): Promise<KeyObject | null> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (err) {
    throw new DomainConnectError('bad_key', `${file} does not hold a private key`, err);
  }
  if (key.asymmetricKeyType !== 'rsa' || (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw new DomainConnectError('bad_key', `${file} must hold an RSA key of at least 2048 bits (RS256)`);
  }
  // A key copied in by hand may have come with looser permissions.
  if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  return key;
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
