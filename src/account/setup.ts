// The box's first start: while no user exists, `mailwright setup link` (or serve on a terminal) issues a one-time
// setup token (its hash kept in box_settings, valid 24 hours) and prints the URL that carries it; whoever opens it
// creates the owner. No one without the token can claim the box, and once an owner exists no token is issued or
// accepted again. The token is a credential: it is printed, never logged.
import { randomToken, secretHash } from './secrets.ts';
import type { Clock } from '../clock.ts';
import { get, run, value, type Query } from '../db/query.ts';
import { timingSafeEqual } from 'node:crypto';

export const SETUP_TTL_MS = 24 * 60 * 60_000;

/** What a sysadmin on the box runs for a new link; the log and the refusals name it. */
export const SETUP_LINK_COMMAND = 'mailwright setup link';

/** The page that creates the owner; the token rides in the fragment, so it reaches no server log or Referer. */
export const setupLink = (publicUrl: string, token: string) => `${publicUrl.replace(/\/+$/, '')}/setup#${token}`;

export function* hasUsers(): Query<boolean> {
  return (yield* get('SELECT 1 FROM users LIMIT 1')) !== undefined;
}

const PUT = 'INSERT INTO box_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value';

/** A fresh token when the box has no user yet (replacing any earlier one); null when it has one. */
export function* issueSetupToken(clock: Clock): Query<string | null> {
  if (yield* hasUsers()) return null;
  const token = randomToken(32);
  yield* run(PUT, 'setup_token_hash', secretHash(token));
  yield* run(PUT, 'setup_token_expires', Buffer.from(String(clock.now() + SETUP_TTL_MS)));
  return token;
}

/**
 * Whether `token` is the live setup token of a box with no user yet, without consuming it: the check to make
 * before any slow password hash. Compared as SHA-256 digests of equal length, in constant time.
 */
export function* setupTokenIsLive(clock: Clock, token: string): Query<boolean> {
  if (yield* hasUsers()) return false;
  const stored = yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'setup_token_hash'");
  const expires = Number((yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'setup_token_expires'"))?.toString() ?? 0);
  if (!stored || clock.now() >= expires) return false;
  const given = secretHash(token);
  return given.length === stored.length && timingSafeEqual(given, stored);
}

/** Whether `token` is the live setup token; it is consumed (deleted) by the caller's transaction on success. */
export function* takeSetupToken(clock: Clock, token: string): Query<boolean> {
  if (!(yield* setupTokenIsLive(clock, token))) return false;
  yield* run("DELETE FROM box_settings WHERE key IN ('setup_token_hash', 'setup_token_expires')");
  return true;
}
