// Webhook signing secrets (`whsec_` + base64 of 24 random bytes, as Standard Webhooks expects) and their stored
// form: AES-256-GCM under a key derived from the box secret (db/box-secret.ts, handed in as `box`), so the
// database alone never holds one in clear.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export const newSigningSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

const keyOf = (box: Buffer) => Buffer.from(hkdfSync('sha256', box, Buffer.alloc(0), 'mailwright webhook secrets', 32));

/** 12-byte nonce, 16-byte tag, then the ciphertext. */
export function seal(box: Buffer, secret: string): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(box), nonce);
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, cipher.getAuthTag(), body]);
}

export function unseal(box: Buffer, sealed: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', keyOf(box), sealed.subarray(0, 12));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
}
