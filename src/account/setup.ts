// The box's first start: while no user exists, `mailwright setup link` (or serve on a terminal) issues a one-time
// setup token (its hash kept in box_settings, valid 24 hours) and prints the URL that carries it; whoever opens it
// creates the owner. No one without the token can claim the box, and once an owner exists no token is issued or
// accepted again. The token is a credential: it is printed, never logged.
import { randomToken, secretHash } from './secrets.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { timingSafeEqual } from 'node:crypto';

export const SETUP_TTL_MS = 24 * 60 * 60_000;

/** What a sysadmin on the box runs for a new link; the log and the refusals name it. */
export const SETUP_LINK_COMMAND = 'mailwright setup link';

/** The page that creates the owner; the token rides in the fragment, so it reaches no server log or Referer. */
export const setupLink = (publicUrl: string, token: string) => `${publicUrl.replace(/\/+$/, '')}/setup#${token}`;

export const hasUsers = (db: Db) => db.prepare('SELECT 1 FROM users LIMIT 1').get() !== undefined;

/** A fresh token when the box has no user yet (replacing any earlier one); null when it has one. */
export function issueSetupToken(db: Db, clock: Clock): string | null {
  if (hasUsers(db)) return null;
  const token = randomToken(32);
  const put = db.prepare('INSERT INTO box_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
  db.transaction(() => {
    put.run('setup_token_hash', secretHash(token));
    put.run('setup_token_expires', Buffer.from(String(clock.now() + SETUP_TTL_MS)));
  })();
  return token;
}

/**
 * Whether `token` is the live setup token of a box with no user yet, without consuming it: the check to make
 * before any slow password hash. Compared as SHA-256 digests of equal length, in constant time.
 */
export function setupTokenIsLive(db: Db, clock: Clock, token: string): boolean {
  if (hasUsers(db)) return false;
  const stored = db.prepare("SELECT value FROM box_settings WHERE key = 'setup_token_hash'").pluck().get() as Buffer | undefined;
  const expires = Number((db.prepare("SELECT value FROM box_settings WHERE key = 'setup_token_expires'").pluck().get() as Buffer | undefined)?.toString() ?? 0);
  if (!stored || clock.now() >= expires) return false;
  const given = secretHash(token);
  return given.length === stored.length && timingSafeEqual(given, stored);
}

/** Whether `token` is the live setup token; it is consumed (deleted) by the caller's transaction on success. */
export function takeSetupToken(db: Db, clock: Clock, token: string): boolean {
  if (!setupTokenIsLive(db, clock, token)) return false;
  db.prepare("DELETE FROM box_settings WHERE key IN ('setup_token_hash', 'setup_token_expires')").run();
  return true;
}
