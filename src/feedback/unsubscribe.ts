// Managed unsubscribe for marketing mail (API-SPEC.md 4.2 rule 3; RFC 8058, RFC 2369): the List-Unsubscribe
// and List-Unsubscribe-Post headers of a recipient's copy, its mailto address, and what unsubscribing does:
// the recipient goes on the workspace's suppression list for marketing mail, with one `unsubscribed` event on
// the email. Queries (db/query.ts) for the caller's transaction; the pages people see are link-routes.ts.
import type { Clock } from '../clock.ts';
import { get, type Query } from '../db/query.ts';
import { addEvent } from '../emails/events.ts';
import { emailExists } from '../emails/lookup.ts';
import { resolveLinkToken } from './link-token.ts';
import { escapeHtml } from '../pages/html.ts';
import { suppress, suppressionFor } from './suppressions.ts';

export const UNSUBSCRIBE_PATH = '/unsubscribe';

/** RFC 8058 3.1: the List-Unsubscribe-Post value, and the body a one-click POST carries. */
export const ONE_CLICK = 'List-Unsubscribe=One-Click';

const header = (headers: Record<string, string>, name: string) => Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];

/**
 * The HTTPS URI of the sender's own one-click pair, when it is one (RFC 8058 3.1: List-Unsubscribe holds exactly
 * one HTTPS URI, List-Unsubscribe-Post exactly `List-Unsubscribe=One-Click`); null otherwise.
 */
export function ownOneClickUrl(headers: Record<string, string>): string | null {
  const list = header(headers, 'list-unsubscribe');
  if (list === undefined || header(headers, 'list-unsubscribe-post')?.trim() !== ONE_CLICK) return null;
  const https = [...list.matchAll(/<\s*([^>]*?)\s*>/g)].map((m) => m[1]).filter((uri) => /^https:\/\//i.test(uri));
  return https.length === 1 ? https[0] : null;
}

/**
 * Is `url` under one of the sending domain's allowed prefixes (`unsubscribe_urls`, each a normalised https URL
 * ending at least at the host's `/`)? Compared as the URL parser writes it, so a host in capitals or a `..`
 * segment cannot step outside a prefix.
 */
export function unsubscribeUrlAllowed(url: string, prefixes: string[]): boolean {
  let href: string;
  try {
    href = new URL(url).href;
  } catch {
    return false;
  }
  return href.startsWith('https://') && prefixes.some((p) => href.startsWith(p));
}

/**
 * API-SPEC.md 4.2 rule 3: marketing mail keeps the sender's own one-click pair only from a configured first-party
 * integration with a visible HTTPS URL: the URL under one of the domain's allowed prefixes and written in the
 * body (HTML or text) where the recipient can see it. Otherwise the box's managed pair replaces the sender's.
 */
export function keepsOwnOneClick(headers: Record<string, string>, prefixes: string[], body: { html: string | null; text: string | null }): boolean {
  const url = ownOneClickUrl(headers);
  if (url === null || !unsubscribeUrlAllowed(url, prefixes)) return false;
  // In HTML the URL may be written escaped, as in an href (`&amp;`).
  const inHtml = body.html !== null && [url, url.replaceAll('&', '&amp;'), escapeHtml(url)].some((form) => body.html!.includes(form));
  return inHtml || (body.text !== null && body.text.includes(url));
}

/** The caller's headers with any List-Unsubscribe pair of its own removed: the box's replaces it. */
export function withoutListUnsubscribe(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !['list-unsubscribe', 'list-unsubscribe-post'].includes(k.toLowerCase())));
}

/** The two headers of a recipient's copy: the HTTPS link first (what RFC 8058 receivers POST to), then mailto. */
export function unsubscribeHeaders(url: string, mailto: string): Record<string, string> {
  return { 'List-Unsubscribe': `<${url}>, <mailto:${mailto}?subject=unsubscribe>`, 'List-Unsubscribe-Post': ONE_CLICK };
}

// The mailto form lives on the sending domain's bounce subdomain, whose MX is already the box (it takes the
// VERP bounces there); receive/route.ts tells the two apart by their prefix.
const ADDRESS = /^u-([0-9a-z-]+)@/;

export const unsubscribeAddress = (token: string, returnPath: string) => `u-${token}@${returnPath}`;

/** The token of an unsubscribe address of the box, if `address` is one and the token is valid (`secret`: the box secret). */
export function* unsubscribeAddressToken(secret: Buffer, address: string): Query<string | null> {
  const token = ADDRESS.exec(address.toLowerCase())?.[1];
  return token && (yield* resolveLinkToken(secret, 'unsubscribe', token)) ? token : null;
}

export type UnsubscribeState =
  | { state: 'invalid' }
  | { state: 'subscribed' | 'unsubscribed'; recipient: string; domain: string; workspaceId: string; emailId: string; justNow?: boolean };

/** What an unsubscribe token stands for now. Reads only: a GET of the link changes nothing. */
export function* checkUnsubscribe(secret: Buffer, token: string): Query<UnsubscribeState> {
  const holder = yield* resolveLinkToken(secret, 'unsubscribe', token);
  if (!holder) return { state: 'invalid' };
  const { recipient, domain, workspaceId, emailId } = holder;
  const blocked = (yield* suppressionFor(workspaceId, recipient, 'marketing')) !== null;
  return { state: blocked ? 'unsubscribed' : 'subscribed', recipient, domain, workspaceId, emailId };
}

/**
 * Unsubscribes the recipient a token names from the workspace's marketing mail. Repeating it changes nothing:
 * one suppression entry, one `unsubscribed` event per email and recipient. Run it in a transaction; `secret` is
 * the box's (db/box-secret.ts), which signed the token.
 */
export function* unsubscribe(secret: Buffer, clock: Clock, token: string, via: 'https' | 'mailto'): Query<UnsubscribeState> {
  const found = yield* checkUnsubscribe(secret, token);
  if (found.state === 'invalid') return found;
  const { workspaceId, recipient, emailId } = found;
  // suppress() keeps an existing entry (a marketing one, or a wider 'all' after a bounce) as it is.
  yield* suppress(clock, { workspaceId, email: recipient, scope: 'marketing', reason: 'unsubscribe', origin: 'recipient', emailId });
  // A deleted email keeps its unsubscribe links but has no events any more.
  const recorded = (yield* get("SELECT 1 FROM events WHERE email_id = ? AND type = 'unsubscribed' AND recipient = ?", emailId, recipient)) !== undefined;
  if ((yield* emailExists(emailId)) && !recorded) yield* addEvent(clock, { workspaceId, emailId, type: 'unsubscribed', recipient, data: { via } });
  return { ...found, state: 'unsubscribed', justNow: found.state === 'subscribed' };
}
