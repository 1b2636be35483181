// DKIM key pairs: RSA 2048 generated off the event loop, the private key stored (PEM) with its domain and
// never returned by any API, the public key as the p= value to publish. Selectors carry random letters so
// no two keys, and no two workspaces, ever share one. A rotation (0020) passes through pending, signing,
// retiring (still published) and retired.
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

/** A domain's first key signs at once; a rotation's key waits (`signing: false`) until DNS serves it. */
export function storeDkimKey(db: Db, clock: Clock, workspaceId: string, domainId: string, key: KeyMaterial, signing = true): void {
  db.prepare('INSERT INTO dkim_keys (id, domain_id, workspace_id, selector, private_key, public_key, created_at, signing) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
    newId('dk', clock.now()),
    domainId,
    workspaceId,
    key.selector,
    key.privateKey,
    key.publicKey,
    clock.now(),
    Number(signing),
  );
}

type KeyRow = { selector: string; private_key: string; public_key: string; created_at: number; retire_after: number | null };
const material = (row: KeyRow | undefined): KeyMaterial | null => (row ? { selector: row.selector, privateKey: row.private_key, publicKey: row.public_key } : null);

/** The key a domain signs with now (what its DKIM record must publish). */
export function activeDkimKey(db: Db, workspaceId: string, domainId: string): KeyMaterial | null {
  return material(db.prepare('SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 1').get(workspaceId, domainId) as KeyRow | undefined);
}

/** A rotation's new key, waiting for DNS to serve it before it signs. */
export function pendingDkimKey(db: Db, workspaceId: string, domainId: string): (KeyMaterial & { createdAt: number }) | null {
  const row = db.prepare('SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 0 AND retired_at IS NULL AND retire_after IS NULL').get(workspaceId, domainId) as KeyRow | undefined;
  return row ? { ...material(row)!, createdAt: row.created_at } : null;
}

/** Keys that no longer sign but must stay published until `retireAfter`: mail signed with them may still be queued. */
export function retiringDkimKeys(db: Db, workspaceId: string, domainId: string): Array<KeyMaterial & { retireAfter: number }> {
  const rows = db.prepare('SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 0 AND retired_at IS NULL AND retire_after IS NOT NULL ORDER BY created_at').all(workspaceId, domainId) as KeyRow[];
  return rows.map((r) => ({ ...material(r)!, retireAfter: r.retire_after! }));
}

export class RotationInProgress extends Error {}

/** Starts a rotation: the new key is stored pending; throws RotationInProgress when one already waits. */
export function startRotation(db: Db, clock: Clock, workspaceId: string, domainId: string, key: KeyMaterial): void {
  if (pendingDkimKey(db, workspaceId, domainId)) throw new RotationInProgress();
  storeDkimKey(db, clock, workspaceId, domainId, key, false);
}

/** DNS serves the pending key: it signs from now on, and the old one is kept published for `keepOldMs`. */
export function promotePendingKey(db: Db, now: number, workspaceId: string, domainId: string, keepOldMs: number): boolean {
  const pending = pendingDkimKey(db, workspaceId, domainId);
  if (!pending) return false;
  db.prepare('UPDATE dkim_keys SET signing = 0, retire_after = ? WHERE workspace_id = ? AND domain_id = ? AND signing = 1').run(now + keepOldMs, workspaceId, domainId);
  db.prepare('UPDATE dkim_keys SET signing = 1 WHERE workspace_id = ? AND domain_id = ? AND selector = ?').run(workspaceId, domainId, pending.selector);
  return true;
}

/** Retires the old keys whose time has come (their records may then be removed from DNS). */
export function retireOldKeys(db: Db, now: number): number {
  return db.prepare('UPDATE dkim_keys SET retired_at = ? WHERE signing = 0 AND retired_at IS NULL AND retire_after IS NOT NULL AND retire_after <= ?').run(now, now).changes;
}
