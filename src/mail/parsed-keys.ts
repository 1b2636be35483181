// mailauth has no way to take a parsed key: it calls crypto.createPrivateKey on the PEM for every message,
// about 0.6 ms of a thread's CPU each time (npm run bench profile). A KeyObject is immutable, so a thread that
// signs keeps the one it parsed for each PEM and hands it back; mailauth still does all of the signing.
import crypto, { type KeyObject } from 'node:crypto';

const MAX_PARSED_KEYS = 1000;

/** Makes this thread's crypto.createPrivateKey remember the keys it parsed from PEM text. */
export function rememberParsedKeys(): void {
  const parseKey = crypto.createPrivateKey;
  if ((parseKey as { remembers?: boolean }).remembers) return;
  const parsedKeys = new Map<string, KeyObject>();
  const remembering = ((input: Parameters<typeof parseKey>[0]) => {
    const pem = typeof input === 'object' && !Buffer.isBuffer(input) && 'key' in input && input.format === 'pem' ? input.key : null;
    if (typeof pem !== 'string' && !Buffer.isBuffer(pem)) return parseKey(input);
    const id = Buffer.isBuffer(pem) ? pem.toString('latin1') : pem;
    let key = parsedKeys.get(id);
    if (!key) {
      if (parsedKeys.size >= MAX_PARSED_KEYS) parsedKeys.clear();
      key = parseKey(input);
      parsedKeys.set(id, key);
    }
    return key;
  }) as typeof parseKey & { remembers?: boolean };
  remembering.remembers = true;
  crypto.createPrivateKey = remembering;
}
