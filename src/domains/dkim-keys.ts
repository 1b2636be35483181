// DKIM key pairs: RSA 2048 generated off the event loop, the private key stored (PEM) with its domain and
// never returned by any API, the public key as the p= value to publish. Selectors carry random letters so
// no two keys, and no two workspaces, ever share one. A rotation (0020) passes through pending, signing,
// retiring (still published) and retired. With dkim_ed25519 (0021) a domain also holds one ed25519 key (RFC 8463)
// that signs beside the RSA key once DNS serves its record; every RSA query here selects RSA keys only.
import { generateKeyPair, generateKeyPairSync, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { Clock } from '../clock.ts';
import { newId } from '../db/ids.ts';
import { all, get, run, type Query } from '../db/query.ts';
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
export function* storeDkimKey(clock: Clock, workspaceId: string, domainId: string, key: KeyMaterial, signing = true): Query<void> {
  yield* run(
    'INSERT INTO dkim_keys (id, domain_id, workspace_id, selector, private_key, public_key, created_at, signing, algorithm) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
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
export function* activeDkimKey(workspaceId: string, domainId: string): Query<KeyMaterial | null> {
  return material(yield* get<KeyRow>("SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 1 AND algorithm = 'rsa'", workspaceId, domainId));
}

/** A rotation's new key, waiting for DNS to serve it before it signs. */
export function* pendingDkimKey(workspaceId: string, domainId: string): Query<(KeyMaterial & { createdAt: number }) | null> {
  const row = yield* get<KeyRow>("SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 0 AND retired_at IS NULL AND retire_after IS NULL AND algorithm = 'rsa'", workspaceId, domainId);
  return row ? { ...material(row)!, createdAt: row.created_at } : null;
}

/** Keys that no longer sign but must stay published until `retireAfter`: mail signed with them may still be queued. */
export function* retiringDkimKeys(workspaceId: string, domainId: string): Query<Array<KeyMaterial & { retireAfter: number }>> {
  const rows = yield* all<KeyRow>("SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND signing = 0 AND retired_at IS NULL AND retire_after IS NOT NULL AND algorithm = 'rsa' ORDER BY created_at", workspaceId, domainId);
  return rows.map((r) => ({ ...material(r)!, retireAfter: r.retire_after! }));
}

export class RotationInProgress extends Error {}

/** Starts a rotation: the new key is stored pending; throws RotationInProgress when one already waits. */
export function* startRotation(clock: Clock, workspaceId: string, domainId: string, key: KeyMaterial): Query<void> {
  if (yield* pendingDkimKey(workspaceId, domainId)) throw new RotationInProgress();
  yield* storeDkimKey(clock, workspaceId, domainId, key, false);
}

/** DNS serves the pending key: it signs from now on, and the old one is kept published for `keepOldMs`. */
export function* promotePendingKey(now: number, workspaceId: string, domainId: string, keepOldMs: number): Query<boolean> {
  const pending = yield* pendingDkimKey(workspaceId, domainId);
  if (!pending) return false;
  yield* run("UPDATE dkim_keys SET signing = 0, retire_after = ? WHERE workspace_id = ? AND domain_id = ? AND signing = 1 AND algorithm = 'rsa'", now + keepOldMs, workspaceId, domainId);
  yield* run("UPDATE dkim_keys SET signing = 1 WHERE workspace_id = ? AND domain_id = ? AND selector = ? AND algorithm = 'rsa'", workspaceId, domainId, pending.selector);
  return true;
}

/** Retires the old keys whose time has come (their records may then be removed from DNS). */
export const retireOldKeys = (now: number) =>
  run("UPDATE dkim_keys SET retired_at = ? WHERE signing = 0 AND retired_at IS NULL AND retire_after IS NOT NULL AND retire_after <= ? AND algorithm = 'rsa'", now, now);

/** The domain's ed25519 key (dkim_ed25519), `signing` once DNS served its record; null when it has none. */
export function* ed25519DkimKey(workspaceId: string, domainId: string): Query<(KeyMaterial & { signing: boolean }) | null> {
  const row = yield* get<KeyRow & { signing: number }>("SELECT * FROM dkim_keys WHERE workspace_id = ? AND domain_id = ? AND algorithm = 'ed25519' AND retired_at IS NULL", workspaceId, domainId);
  return row ? { ...material(row)!, algorithm: 'ed25519', signing: row.signing === 1 } : null;
}

/** Gives a domain its ed25519 key, waiting for DNS; false when it has one already. */
export function* addEd25519Key(clock: Clock, workspaceId: string, domainId: string, key: KeyMaterial): Query<boolean> {
  if (yield* ed25519DkimKey(workspaceId, domainId)) return false;
  yield* storeDkimKey(clock, workspaceId, domainId, { ...key, algorithm: 'ed25519' }, false);
  return true;
}

/** Domains without an ed25519 key, for giving each one (dkim_ed25519 turned on for a box that has domains). */
export const domainsWithoutEd25519 = (limit: number) =>
  all<{ id: string; workspace_id: string; name: string }>(
    "SELECT d.id, d.workspace_id, d.name FROM domains d WHERE NOT EXISTS (SELECT 1 FROM dkim_keys k WHERE k.domain_id = d.id AND k.algorithm = 'ed25519' AND k.retired_at IS NULL) ORDER BY d.id LIMIT ?",
    limit,
  );

/** DNS serves the ed25519 key's record: it signs beside the RSA key from now on. */
export function* startEd25519Signing(workspaceId: string, domainId: string): Query<boolean> {
  return (yield* run("UPDATE dkim_keys SET signing = 1 WHERE workspace_id = ? AND domain_id = ? AND algorithm = 'ed25519' AND retired_at IS NULL AND signing = 0", workspaceId, domainId)) > 0;
}

/**
 * What the queue signs a domain's mail with: its RSA key, and (with `ed25519`, the dkim_ed25519 setting) its
 * ed25519 key once DNS serves that record, for a second signature. Null when the domain is gone.
 */
export function* signingKey(workspaceId: string, domainId: string, domain: string, ed25519: boolean): Query<DkimKey | null> {
  const rsa = yield* activeDkimKey(workspaceId, domainId);
  if (!rsa) return null;
  const ed = ed25519 ? yield* ed25519DkimKey(workspaceId, domainId) : null;
  return { domain, selector: rsa.selector, privateKey: rsa.privateKey, ...(ed?.signing ? { ed25519: { selector: ed.selector, privateKey: ed.privateKey } } : {}) };
}
