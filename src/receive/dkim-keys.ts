// Remembers the DKIM (and ARC) public keys mailauth has read from DNS, so a sender's key record is turned into
// a key once instead of for every message it signs. mailauth's getPublicKey (lib/tools.js) parses the record
// and imports the key with crypto.createPublicKey, about 100-150 µs of CPU for an RSA-2048 key under OpenSSL 3,
// a third of what verifying a signed message costs. What it returns depends only on the record's text, the
// key type asked for and the minimum key length, so the answer is kept under exactly those: a rotated key is
// a new record and is read afresh, and the record itself is still asked of DNS (through the analyze thread's
// own answer cache) for every signature, as before. Failures are never kept.
//
// mailauth has no option for this, so its getPublicKey export is wrapped here. Its verifiers take the function
// when they are first required (`const { getPublicKey } = require('../../lib/tools')`), which is why
// authenticate.ts imports this module before mailauth; dkim-keys.test.ts fails if the wrapper stops being the
// one mailauth calls (mailauth is pinned in package.json).
import { createRequire } from 'node:module';

type GetPublicKey = (type: string, name: string, minBitLength: number | undefined, resolver?: (name: string, type: string) => Promise<unknown>) => Promise<unknown>;

/** Distinct key records kept; a box receives from a few thousand signing domains and selectors at most. */
const MAX_KEYS = 2000;

const tools = createRequire(import.meta.url)('mailauth/lib/tools.js') as { getPublicKey: GetPublicKey & { remembers?: true } };

if (!tools.getPublicKey.remembers) {
  const read = tools.getPublicKey;
  const keys = new Map<string, unknown>();
  const remembering: GetPublicKey & { remembers?: true } = async (type, name, minBitLength, resolver) => {
    if (!resolver) return read(type, name, minBitLength, resolver); // mailauth's own lookups: the box always passes its resolver
    const answer = await resolver(name, 'TXT');
    const key = `${type}\u0000${minBitLength ?? ''}\u0000${JSON.stringify(answer)}`;
    const known = keys.get(key);
    if (known) return known;
    const result = await read(type, name, minBitLength, async () => answer);
    if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
    keys.set(key, result);
    return result;
  };
  remembering.remembers = true;
  tools.getPublicKey = remembering;
}
