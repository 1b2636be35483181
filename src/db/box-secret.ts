// The box's own secret (32 random bytes in box_settings), created at the first start, so every backup carries
// it: it authenticates the VERP return paths (and signed links) the box puts in mail.
import { randomBytes } from 'node:crypto';
import type { Db } from './open.ts';
import { run, value, type Query } from './query.ts';
import { runOn } from './sqlite-query.ts';

// Read once per database connection: it never changes once made.
const known = new WeakMap<Db, Buffer>();

export function boxSecret(db: Db): Buffer {
  let secret = known.get(db);
  if (!secret) {
    secret = runOn(db, readBoxSecret());
    known.set(db, secret);
  }
  return secret;
}

/** The same, as a query: read where it is needed (a query has no connection to keep it for). */
export function* readBoxSecret(): Query<Buffer> {
  const made = yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'secret'");
  if (made) return made;
  yield* run("INSERT OR IGNORE INTO box_settings (key, value) VALUES ('secret', ?)", randomBytes(32));
  return (yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'secret'"))!;
}
