// DKIM key pairs: RSA 2048 generated off the event loop, the private key stored (PEM) with its domain and
// never returned by any API, the public key as the p= value to publish. Selectors carry random letters so
// no two keys, and no two workspaces, ever share one. A rotation (0020) passes through pending, signing,
// retiring (still published) and retired. With dkim_ed25519 (0021) a domain also holds one ed25519 key (RFC 8463)
// that signs beside the RSA key once DNS serves its record; every RSA query here selects RSA keys only.
import { generateKeyPair, generateKeyPairSync, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';
import type { DkimKey } from '../mail/sign.ts';

const generate = promisify(generateKeyPair);

export interface KeyMaterial {
  selector: string;
  privateKey: string;
  publicKey: string;
  /** Absent for RSA, the domain's main key. */
  algorithm?: 'ed25519';
}

const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
const randomLetters = (n: number) => [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('');

export async function generateDkimKey(): Promise<KeyMaterial> {
  const { privateKey, publicKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { selector: `mw${randomLetters(8)}`, privateKey, publicKey: Buffer.from(publicKey).toString('base64') };
}

/**
 * An ed25519 key pair (RFC 8463). Its selector (`mwe` + 8 letters, one longer than RSA's) never equals an RSA
 * one; the p= value is the base64 of the raw 32-byte public key (RFC 8463 4), not SPKI DER as for RSA: the
 * JWK's `x` is exactly that key.
 */
export async function generateEd25519Key(): Promise<KeyMaterial> {
  // Microseconds, unlike RSA: no need to leave the event loop.
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return { selector: `mwe${randomLetters(8)}`, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, publicKey: raw.toString('base64'), algorithm: 'ed25519' };
}

/** A domain's first key signs at once; a rotation's key waits (`signing: false`) until DNS serves it. */
export function storeDkimKey(db: Db, clock: Clock, workspaceId: string, domainId: string, key: KeyMaterial, signing = true): void {
  db.prepare('INSERT INTO dkim_keys (id, domain_id, workspace_id, selector, private_key, public_key, created_at, signing, algorithm) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)').run(
    newId('dk', clock.now()),
    domainId,
    workspaceId,
    key.selector,
    key.privateKey,
    key.publicKey,
    clock.now(),
    Number(signing),
    key.algorithm ?? 'rsa',
  );
}

type KeyRow = { selector: string; private_key: string; public_key: string; created_at: number; retire_after: number | null };
const material = (row: KeyRow | undefined): KeyMaterial | null => (row ? { selector: row.selector, privateKey: row.private_key, publicKey: row.public_key } : null);

/** The key a domain signs with now (what its DKIM record must publish). */
export function activeDkimKey(db: Db, workspaceId: string, domainId: string): KeyMaterial | null {
  return material(db.prepare("SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 1 AND algorithm = 'rsa'").get(workspaceId, domainId) as KeyRow | undefined);
}

/** A rotation's new key, waiting for DNS to serve it before it signs. */
export function pendingDkimKey(db: Db, workspaceId: string, domainId: string): (KeyMaterial & { createdAt: number }) | null {
  const row = db.prepare("SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 0 AND retired_at IS NULL AND retire_after IS NULL AND algorithm = 'rsa'").get(workspaceId, domainId) as KeyRow | undefined;
  return row ? { ...material(row)!, createdAt: row.created_at } : null;
}

/** Keys that no longer sign but must stay published until `retireAfter`: mail signed with them may still be queued. */
export function retiringDkimKeys(db: Db, workspaceId: string, domainId: string): Array<KeyMaterial & { retireAfter: number }> {
  const rows = db.prepare("SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 0 AND retired_at IS NULL AND retire_after IS NOT NULL AND algorithm = 'rsa' ORDER BY created_at").all(workspaceId, domainId) as KeyRow[];
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
  db.prepare("UPDATE dkim_keys SET signing = 0, retire_after = ? WHERE workspace_id = ? AND domain_id = ? AND signing = 1 AND algorithm = 'rsa'").run(now + keepOldMs, workspaceId, domainId);
  db.prepare("UPDATE dkim_keys SET signing = 1 WHERE workspace_id = ? AND domain_id = ? AND selector = ? AND algorithm = 'rsa'").run(workspaceId, domainId, pending.selector);
  return true;
}

/** Retires the old keys whose time has come (their records may then be removed from DNS). */
export function retireOldKeys(db: Db, now: number): number {
  return db.prepare("UPDATE dkim_keys SET retired_at = ? WHERE signing = 0 AND retired_at IS NULL AND retire_after IS NOT NULL AND retire_after <= ? AND algorithm = 'rsa'").run(now, now).changes;
}

/** The domain's ed25519 key (dkim_ed25519), `signing` once DNS served its record; null when it has none. */
export function ed25519DkimKey(db: Db, workspaceId: string, domainId: string): (KeyMaterial & { signing: boolean }) | null {
  const row = db.prepare("SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND algorithm = 'ed25519' AND retired_at IS NULL").get(workspaceId, domainId) as
    | (KeyRow & { signing: number })
    | undefined;
  return row ? { ...material(row)!, algorithm: 'ed25519', signing: row.signing === 1 } : null;
}

/** Gives a domain its ed25519 key, waiting for DNS; false when it has one already. */
export function addEd25519Key(db: Db, clock: Clock, workspaceId: string, domainId: string, key: KeyMaterial): boolean {
  if (ed25519DkimKey(db, workspaceId, domainId)) return false;
  storeDkimKey(db, clock, workspaceId, domainId, { ...key, algorithm: 'ed25519' }, false);
  return true;
}

/** Domains without an ed25519 key, for giving each one (dkim_ed25519 turned on for a box that has domains). */
export const domainsWithoutEd25519 = (db: Db, limit: number) =>
  db
    .prepare("SELECT d.id, d.workspace_id, d.name FROM domains d WHERE NOT EXISTS (SELECT 1 FROM dkim_keys k WHERE k.domain_id = d.id AND k.algorithm = 'ed25519' AND k.retired_at IS NULL) ORDER BY d.id LIMIT ?")
    .all(limit) as Array<{ id: string; workspace_id: string; name: string }>;

/** DNS serves the ed25519 key's record: it signs beside the RSA key from now on. */
export function startEd25519Signing(db: Db, workspaceId: string, domainId: string): boolean {
  return db.prepare("UPDATE dkim_keys SET signing = 1 WHERE workspace_id = ? AND domain_id = ? AND algorithm = 'ed25519' AND retired_at IS NULL AND signing = 0").run(workspaceId, domainId).changes > 0;
}

/**
 * What the queue signs a domain's mail with: its RSA key, and (with `ed25519`, the dkim_ed25519 setting) its
 * ed25519 key once DNS serves that record, for a second signature. Null when the domain is gone.
 */
export function signingKey(db: Db, workspaceId: string, domainId: string, domain: string, ed25519: boolean): DkimKey | null {
  const rsa = activeDkimKey(db, workspaceId, domainId);
  if (!rsa) return null;
  const ed = ed25519 ? ed25519DkimKey(db, workspaceId, domainId) : null;
  return { domain, selector: rsa.selector, privateKey: rsa.privateKey, ...(ed?.signing ? { ed25519: { selector: ed.selector, privateKey: ed.privateKey } } : {}) };
}
