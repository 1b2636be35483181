// The box's own secret (32 random bytes in box_settings), created at the first start, so every backup carries
// it: it authenticates the VERP return paths (and signed links) the box puts in mail.
import { randomBytes } from 'node:crypto';
import { run, value, type Query } from './query.ts';
import type { Store } from './store.ts';

// Read once per store: it never changes once made.
const known = new WeakMap<Pick<Store, 'write'>, Promise<Buffer>>();

export function boxSecret(store: Pick<Store, 'write'>): Promise<Buffer> {
  let secret = known.get(store);
  if (!secret) {
    // A write: the first start makes it, and on PostgreSQL a node that starts beside another reads the same one.
    secret = store.write(readBoxSecret);
    secret.catch(() => known.delete(store));
    known.set(store, secret);
  }
  return secret;
}

/** The same, as a query: read where it is needed (a query has no connection to keep it for). */
export function* readBoxSecret(): Query<Buffer> {
  const made = yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'secret'");
  if (made) return made;
  yield* run("INSERT INTO box_settings (key, value) VALUES ('secret', ?) ON CONFLICT DO NOTHING", randomBytes(32));
  return (yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'secret'"))!;
}
