// The signed tokens in links that name one recipient of one sent email: unsubscribe (URL and mailto address),
// open pixel and click redirect. A token carries the email, the recipient's position among the email's
// recipients and, for a click, the link's position; an HMAC with the box secret covers those, the purpose and
// the recipient's address, so a token can be neither made up nor moved to another recipient, email or purpose.
// It names no workspace: the workspace is the email's, so it cannot be moved to another workspace either.
// Lower-case letters, digits and '-' only: it also travels as an email local part, which relays may fold.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { get, type Query } from '../db/query.ts';

export type LinkPurpose = 'unsubscribe' | 'open' | 'click';

export interface LinkSubject {
  emailId: string;
  /** The recipient's address as queued. */
  recipient: string;
  /** Its position among the email's deliveries (in queueing order, from 0). */
  index: number;
  /** Click only: the link's position among the tracked links of the HTML. */
  link?: number;
}

/** What a valid token names, with what the pages need to say about it. */
export interface LinkHolder extends LinkSubject {
  workspaceId: string;
  /** The sending domain. */
  domain: string;
}

// 80 bits: every guess costs a request to the box, and a token is checked against one stored recipient.
const MAC_HEX = 20;
// Numbers without leading zeros, so each token has one spelling.
const TOKEN = /^([0-9a-hjkmnp-tv-z]{26})-(0|[1-9]\d{0,3})(?:-(0|[1-9]\d{0,3}))?-([0-9a-f]{20})$/;

function mac(secret: Buffer, purpose: LinkPurpose, s: LinkSubject): string {
  return createHmac('sha256', secret)
    .update(`mailwright ${purpose}\n${s.emailId}\n${s.recipient.toLowerCase()}\n${s.index}\n${s.link ?? ''}`)
    .digest('hex')
    .slice(0, MAC_HEX);
}

export function linkToken(secret: Buffer, purpose: LinkPurpose, s: LinkSubject): string {
  const link = purpose === 'click' ? [String(s.link)] : [];
  return [s.emailId.slice(3).toLowerCase(), String(s.index), ...link, mac(secret, purpose, s)].join('-');
}

/** An absolute link under the public URL (MAILWRIGHT_PUBLIC_URL, the base of every link in mail). */
export const publicLink = (publicUrl: string, path: string, token: string) => `${publicUrl.replace(/\/+$/, '')}${path}/${token}`;

type Named = { recipient: string; workspace_id: string; domain: string };

/**
 * The recipient a token names, or null for anything the box did not make for this purpose. Reads only.
 * `secret` is the box secret (db/box-secret.ts).
 */
export function* resolveLinkToken(secret: Buffer, purpose: LinkPurpose, token: string): Query<LinkHolder | null> {
  const m = TOKEN.exec(token.toLowerCase());
  if (!m || (m[3] !== undefined) !== (purpose === 'click')) return null;
  const emailId = `em_${m[1].toUpperCase()}`;
  const index = Number(m[2]);
  const row =
    (yield* get<Named>('SELECT d.recipient, e.workspace_id, e.domain FROM deliveries d JOIN emails e ON e.id = d.email_id WHERE d.email_id = ? ORDER BY d.id LIMIT 1 OFFSET ?', emailId, index)) ??
    // A deleted email's unsubscribe links keep working (0012_unsubscribe_after_delete.sql).
    (purpose === 'unsubscribe' ? yield* get<Named>('SELECT recipient, workspace_id, domain FROM unsubscribe_links WHERE email_id = ? AND position = ?', emailId, index) : undefined);
  if (!row) return null;
  const subject: LinkSubject = { emailId, recipient: row.recipient, index, ...(m[3] !== undefined ? { link: Number(m[3]) } : {}) };
  if (!timingSafeEqual(Buffer.from(mac(secret, purpose, subject)), Buffer.from(m[4]))) return null;
  return { ...subject, workspaceId: row.workspace_id, domain: row.domain };
}
