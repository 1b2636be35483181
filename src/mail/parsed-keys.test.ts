// rememberParsedKeys: mailauth parses the signing key's PEM for every message; a thread that signs gets back the
// KeyObject it parsed before, and every other call still parses as node:crypto does.
import crypto, { generateKeyPairSync } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rememberParsedKeys } from './parsed-keys.ts';

const pem = (): string => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

test('a PEM parsed once is handed back as the same key, and signs as the key it is', () => {
  rememberParsedKeys();
  rememberParsedKeys(); // twice is once: no second layer of caching
  const text = pem();
  const first = crypto.createPrivateKey({ key: text, format: 'pem' });
  const again = crypto.createPrivateKey({ key: text, format: 'pem' });
  assert.is(again, first);
  const signature = crypto.sign('sha256', Buffer.from('mail'), again);
  assert.ok(crypto.verify('sha256', Buffer.from('mail'), crypto.createPublicKey(text), signature));
});

test('another PEM is another key; a bare PEM string or DER is parsed as before', () => {
  rememberParsedKeys();
  const [a, b] = [pem(), pem()];
  const keyA = crypto.createPrivateKey({ key: a, format: 'pem' });
  const keyB = crypto.createPrivateKey({ key: b, format: 'pem' });
  assert.is.not(keyA, keyB);
  assert.not.ok(keyA.equals(keyB));
  const bare = crypto.createPrivateKey(a);
  assert.ok(bare.equals(keyA));
  const der = keyA.export({ type: 'pkcs8', format: 'der' });
  assert.ok(crypto.createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).equals(keyA));
  assert.throws(() => crypto.createPrivateKey({ key: 'not a key', format: 'pem' }));
});

test.run();
