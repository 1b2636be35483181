// Identifiers: a type prefix and a 26-character ULID (48-bit millisecond time + 80 random bits, Crockford
// base32), so ids sort by creation time as strings. Ids made in the same millisecond by this process
// increase monotonically, so their order is the order they were made.
import { createHmac, randomBytes } from 'node:crypto';

export type IdPrefix = 'ws' | 'usr' | 'ses' | 'key' | 'em' | 'dom' | 'dk' | 'evt' | 'inb' | 'lbl' | 'lrule' | 'tmpl' | 'tmplv' | 'dr' | 'att' | 'q' | 'rpt' | 'sub' | 'chk' | 'wh' | 'whmsg' | 'dmarc' | 'tlsr' | 'rrej' | 'devt' | 'aud';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ULID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

let lastTime = -1;
let lastRandom = new Uint8Array(10);
// Random bytes are fetched 4 KiB at a time and each id takes its own 10: a call to randomBytes per id cost
// about 3 µs, and an API send makes three ids.
let pool = new Uint8Array(0);
let taken = 0;

export function ulid(now = Date.now()): string {
  if (now <= lastTime) {
    incrementInPlace(lastRandom);
  } else {
    lastTime = now;
    if (taken + 10 > pool.length) {
      pool = new Uint8Array(randomBytes(4096));
      taken = 0;
    }
    lastRandom = pool.slice(taken, (taken += 10));
  }
  return encodeTime(lastTime) + encodeRandom(lastRandom);
}

export const newId = (prefix: IdPrefix, now?: number) => `${prefix}_${ulid(now)}`;

/**
 * An id of the same form whose 80 bits after the time are an HMAC of a number under a secret key: the same id
 * whenever it is asked for, so a row need not store it, and no more guessable than a random one (the number,
 * such as a row's place in a table, stays hidden).
 */
export function keyedId(prefix: IdPrefix, time: number, key: Buffer, n: number): string {
  // Worded apart from the box's other MACs under the same secret (VERP, links, forwarding confirmations).
  const bits = createHmac('sha256', key).update(`mailwright id ${prefix}\n${n}`).digest().subarray(0, 10);
  return `${prefix}_${encodeTime(time)}${encodeRandom(bits)}`;
}

/** The millisecond time at the start of an id made here (newId, keyedId); NaN for anything else. */
export function idTime(id: string): number {
  const ulidPart = id.slice(id.indexOf('_') + 1);
  if (!ULID_RE.test(ulidPart)) return NaN;
  let ms = 0;
  for (const c of ulidPart.slice(0, 10)) ms = ms * 32 + ALPHABET.indexOf(c);
  return ms;
}

export const isId = (prefix: IdPrefix, value: unknown): value is string =>
  typeof value === 'string' && value.startsWith(prefix + '_') && ULID_RE.test(value.slice(prefix.length + 1));

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

// 80 bits are exactly 16 groups of 5.
function encodeRandom(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return out;
}

function incrementInPlace(bytes: Uint8Array): void {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i] < 255) {
      bytes[i]++;
      return;
    }
    bytes[i] = 0;
  }
  throw new Error('ULID random part overflowed within one millisecond');
}
