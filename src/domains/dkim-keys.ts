// DKIM key pairs: RSA 2048 generated off the event loop, the private key stored (PEM) with its domain and
// never returned by any API, the public key as the p= value to publish. Selectors carry random letters so
// no two keys, and no two workspaces, ever share one.
import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';

const generate = promisify(generateKeyPair);

export interface KeyMaterial {
  selector: string;
  privateKey: string;
  publicKey: string;
}

export async function generateDkimKey(): Promise<KeyMaterial> {
  const { privateKey, publicKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const suffix = [...randomBytes(8)].map((b) => alphabet[b % alphabet.length]).join('');
  return { selector: `mw${suffix}`, privateKey, publicKey: Buffer.from(publicKey).toString('base64') };
}

export function storeDkimKey(db: Db, clock: Clock, workspaceId: string, domainId: string, key: KeyMaterial): void {
  db.prepare('INSERT INTO dkim_keys (id, domain_id, workspace_id, selector, private_key, public_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    newId('dk', clock.now()),
    domainId,
    workspaceId,
    key.selector,
    key.privateKey,
    key.publicKey,
    clock.now(),
  );
}

/** The key a domain signs with now (what its DKIM record must publish). */
export function activeDkimKey(db: Db, workspaceId: string, domainId: string): KeyMaterial | null {
  const row = db
    .prepare('SELECT selector, private_key, public_key FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND retired_at IS NULL')
    .get(workspaceId, domainId) as { selector: string; private_key: string; public_key: string } | undefined;
  return row ? { selector: row.selector, privateKey: row.private_key, publicKey: row.public_key } : null;
}
