// Random bearer secrets and their stored form. Only the SHA-256 of a secret is ever written: the secrets
// carry 192 or 256 random bits, so a fast hash suffices and lookup is an index probe on the hash
// (no comparison of secrets in JavaScript, nothing to time).
import { createHash, randomBytes } from 'node:crypto';

export const randomToken = (bytes: number) => randomBytes(bytes).toString('base64url');

export const secretHash = (secret: string) => createHash('sha256').update(secret, 'utf8').digest();
