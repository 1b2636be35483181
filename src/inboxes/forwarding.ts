// Forwarding settings of an inbox (API-SPEC.md section 3): off, active at once for the workspace owner's own
// address, otherwise pending until the link mailed to the new address is confirmed. It owns the signed
// confirmation tokens and the text of the confirmation mail and page; it sends nothing itself (the route
// hands the mail to send/submit) and it never forwards mail (receive/forward.ts does).
import { type AuditActor, recordAudit } from '../account/audit.ts';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { get, run, type Query } from '../db/query.ts';
import { escapeHtml, renderPage } from '../pages/html.ts';
import type { InboxRow } from './inboxes.ts';

/** A confirmation link works for 7 days; after that the owner sets the address again for a fresh one. */
export const CONFIRMATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export const CONFIRM_PATH = '/forwarding/confirm';

// The pending confirmation of an inbox (table forward_confirmations): a random nonce made when the address
// was set, the address it is for and when it was issued. Setting another address, the owner's address or null
// replaces or removes it, so a token issued earlier stops working.
interface Confirmation {
  nonce: string;
  address: string;
  issuedAt: number;
  confirmedAt: number | null;
}

function* readConfirmation(inboxId: string): Query<Confirmation | null> {
  return (yield* get<Confirmation>('SELECT nonce, address, issued_at AS issuedAt, confirmed_at AS confirmedAt FROM forward_confirmations WHERE inbox_id = ?', inboxId)) ?? null;
}

const writeConfirmation = (inboxId: string, c: Confirmation) =>
  run(`INSERT INTO forward_confirmations (inbox_id, nonce, address, issued_at, confirmed_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (inbox_id) DO UPDATE SET nonce = excluded.nonce, address = excluded.address, issued_at = excluded.issued_at, confirmed_at = excluded.confirmed_at`, inboxId, c.nonce, c.address, c.issuedAt, c.confirmedAt);

const dropConfirmation = (inboxId: string) => run('DELETE FROM forward_confirmations WHERE inbox_id = ?', inboxId);

// HMAC-SHA256 with the box secret (db/box-secret.ts, handed in by the caller) over everything the token stands
// for: the inbox, the address (lower case), the nonce and the issue time. A token for another inbox, for an
// address the inbox no longer forwards to, or from before the address was set again does not verify.
function mac(secret: Buffer, inboxId: string, address: string, nonce: string, issuedAt: number): Buffer {
  return createHmac('sha256', secret)
    .update(`mailwright forwarding confirmation\n${inboxId}\n${address.toLowerCase()}\n${nonce}\n${issuedAt}`)
    .digest()
    .subarray(0, 16);
}

const TOKEN = /^(inb_[0-9A-Z]{26})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{22})$/;

/** Is `address` one of the workspace's owners (its users), compared without regard to case? */
export function* isOwnerAddress(workspaceId: string, address: string): Query<boolean> {
  return (yield* get('SELECT 1 FROM users WHERE workspace_id = ? AND email = ?', workspaceId, address.trim().toLowerCase())) !== undefined;
}

/** Is `address` an inbox of this box (any workspace)? Forwarding there would bring the mail straight back. */
export function* isInboxAddress(address: string): Query<boolean> {
  return (yield* get('SELECT 1 FROM inboxes WHERE address = ?', address.trim().toLowerCase())) !== undefined;
}

export function* turnOff(inbox: InboxRow): Query<void> {
  yield* run("UPDATE inboxes SET forward_to = NULL, forward_status = 'off' WHERE id = ?", inbox.id);
  yield* dropConfirmation(inbox.id);
}

/** The owner's own address needs no confirmation. */
export function* activate(inbox: InboxRow, address: string): Query<void> {
  yield* run("UPDATE inboxes SET forward_to = ?, forward_status = 'active' WHERE id = ?", address, inbox.id);
  yield* dropConfirmation(inbox.id);
}

/** A confirmation about to be sent: what the writer job `forwarding.pending` records with its mail. */
export interface PendingConfirmation {
  inboxId: string;
  address: string;
  nonce: string;
  issuedAt: number;
  /** Who asked, for the audit row written with it. */
  actor?: AuditActor;
}

/** A new confirmation for `address` (`secret`: the box's): the token for the link now, and what markPending writes with the mail. */
export function newConfirmation(secret: Buffer, clock: Clock, inbox: InboxRow, address: string): { token: string; pending: PendingConfirmation } {
  const nonce = randomBytes(16).toString('base64url');
  const issuedAt = clock.now();
  const token = `${inbox.id}.${nonce}.${mac(secret, inbox.id, address, nonce, issuedAt).toString('base64url')}`;
  return { token, pending: { inboxId: inbox.id, address, nonce, issuedAt } };
}

/**
 * The writer job `forwarding.pending`, in the transaction that queues the confirmation mail: the inbox becomes
 * pending for that address, and any earlier token stops working.
 */
export function* markPending(_ctx: unknown, p: PendingConfirmation): Query<void> {
  yield* run("UPDATE inboxes SET forward_to = ?, forward_status = 'pending' WHERE id = ?", p.address, p.inboxId);
  yield* writeConfirmation(p.inboxId, { nonce: p.nonce, address: p.address, issuedAt: p.issuedAt, confirmedAt: null });
  const inbox = yield* get<{ workspace_id: string; address: string }>('SELECT workspace_id, address FROM inboxes WHERE id = ?', p.inboxId);
  if (p.actor && inbox) {
    yield* recordAudit(p.issuedAt, p.actor, { workspaceId: inbox.workspace_id, action: 'inbox.forwarding_changed', target: { type: 'inbox', id: p.inboxId, name: inbox.address }, data: { forwardTo: p.address, forwardStatus: 'pending' } });
  }
}

export type TokenState =
  | { state: 'invalid' }
  | { state: 'expired'; inbox: InboxRow; address: string }
  | { state: 'pending'; inbox: InboxRow; address: string }
  | { state: 'confirmed'; inbox: InboxRow; address: string; justNow?: boolean };

/** What a confirmation token stands for now (`secret`: the box's). Reads only: a GET of the link changes nothing. */
export function* checkToken(secret: Buffer, clock: Clock, token: string): Query<TokenState> {
  const m = TOKEN.exec(token);
  if (!m) return { state: 'invalid' };
  const [, inboxId, nonce, given] = m;
  const inbox = yield* get<InboxRow>('SELECT * FROM inboxes WHERE id = ?', inboxId);
  const c = yield* readConfirmation(inboxId);
  if (!inbox || !c || !inbox.forward_to || inbox.forward_status === 'off') return { state: 'invalid' };
  if (c.address.toLowerCase() !== inbox.forward_to.toLowerCase() || !equal(c.nonce, nonce)) return { state: 'invalid' };
  if (!equal(mac(secret, inbox.id, inbox.forward_to, c.nonce, c.issuedAt).toString('base64url'), given)) return { state: 'invalid' };
  const address = inbox.forward_to;
  if (inbox.forward_status === 'active') return { state: 'confirmed', inbox, address };
  if (clock.now() - c.issuedAt > CONFIRMATION_TTL_MS) return { state: 'expired', inbox, address };
  return { state: 'pending', inbox, address };
}

/** Confirms: a valid pending token makes forwarding active. Run it in a transaction (it reads, then writes). */
export function* confirm(secret: Buffer, clock: Clock, token: string, ip?: string): Query<TokenState> {
  const found = yield* checkToken(secret, clock, token);
  if (found.state !== 'pending') return found;
  yield* run("UPDATE inboxes SET forward_status = 'active' WHERE id = ? AND forward_status = 'pending'", found.inbox.id);
  // The new address's owner accepted, through the link mailed to it: not a user of the box.
  yield* recordAudit(clock.now(), { type: 'system', id: 'forwarding_confirmation', ip: ip ?? null }, {
    workspaceId: found.inbox.workspace_id,
    action: 'inbox.forwarding_changed',
    target: { type: 'inbox', id: found.inbox.id, name: found.inbox.address },
    data: { forwardTo: found.address, forwardStatus: 'active' },
  });
  const c = (yield* readConfirmation(found.inbox.id))!;
  yield* writeConfirmation(found.inbox.id, { ...c, confirmedAt: clock.now() });
  return { state: 'confirmed', inbox: { ...found.inbox, forward_status: 'active' }, address: found.address, justNow: true };
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

// ---- What people read: the confirmation mail and the page behind its link ----

export function confirmationLink(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}${CONFIRM_PATH}/${token}`;
}

/** Subject, text and HTML of the mail that asks the new address to accept forwarded mail. */
export function confirmationMail(inbox: InboxRow, address: string, link: string): { subject: string; text: string; html: string } {
  const days = Math.round(CONFIRMATION_TTL_MS / 86_400_000);
  const text = [
    `Mail sent to ${inbox.address} can be forwarded to you (${address}).`,
    '',
    'To accept, open this link and press the button on the page:',
    link,
    '',
    `Nothing is forwarded until you do. The link works for ${days} days.`,
    'If you did not expect this message, ignore it: no mail will be forwarded to you.',
    '',
  ].join('\n');
  const html = `<!doctype html>
<html><body style="font-family:sans-serif;line-height:1.5">
<p>Mail sent to <b>${escapeHtml(inbox.address)}</b> can be forwarded to you (<b>${escapeHtml(address)}</b>).</p>
<p>To accept, open this link and press the button on the page:<br><a href="${escapeHtml(link)}">${escapeHtml(link)}</a></p>
<p>Nothing is forwarded until you do. The link works for ${days} days.<br>
If you did not expect this message, ignore it: no mail will be forwarded to you.</p>
</body></html>
`;
  return { subject: `Confirm forwarding of mail from ${inbox.address}`, text, html };
}

/** The page a confirmation link opens, for each state of its token: only a pending one shows the button that POSTs. */
export function confirmationPage(found: TokenState): { status: number; html: string } {
  switch (found.state) {
    case 'invalid':
      return {
        status: 404,
        html: renderPage('Link not valid', '<p>This forwarding confirmation link is not valid any more. The forwarding address may have been changed or turned off since it was sent.</p>'),
      };
    case 'expired':
      return {
        status: 410,
        html: renderPage(
          'Link expired',
          `<p>This link to confirm forwarding of mail from <b>${escapeHtml(found.inbox.address)}</b> to <b>${escapeHtml(found.address)}</b> has expired. Ask the owner of the inbox to set the forwarding address again for a new link.</p>`,
        ),
      };
    case 'confirmed':
      return {
        status: 200,
        html: renderPage(
          found.justNow ? 'Forwarding confirmed' : 'Forwarding is on',
          `<p>Mail sent to <b>${escapeHtml(found.inbox.address)}</b> is forwarded to <b>${escapeHtml(found.address)}</b>.</p>`,
        ),
      };
    case 'pending':
      return {
        status: 200,
        html: renderPage(
          'Confirm forwarding',
          `<p>Forward mail sent to <b>${escapeHtml(found.inbox.address)}</b> to <b>${escapeHtml(found.address)}</b>?</p>
<p>Copies will come from ${escapeHtml(found.inbox.address)}; replying to one answers its original sender.</p>
<form method="post"><button type="submit">Confirm forwarding</button></form>
<p class="small">If you did not ask for this, close this page: nothing is forwarded unless you press the button.</p>`,
        ),
      };
  }
}
