// The notice a person finds in their own mailbox when mail they sent from the dashboard bounces, is given up on,
// or draws a spam complaint, the way Gmail's "Address not found" arrives: a message from the box's Mail Delivery
// Subsystem, threaded with the original (In-Reply-To, References), stored like received mail (emails/store.ts)
// in the transaction that records the outcome, so there is one per recipient event. It is never sent, forwarded
// or counted (no `received` event: analytics, webhooks and reputation see only the bounce or the complaint).
// Mail sent with an API key or over SMTP submission belongs to an application, which has the events: no notice.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import type { Query } from '../db/query.ts';
import type { ParsedMessage } from '../mail/parse.ts';
import { plainMessage } from '../mail/plain-message.ts';
import { packMail } from '../mail/packing.ts';
import { domainOf } from '../mail/addresses.ts';
import { emailByMessageId, sentEmailHead } from '../emails/lookup.ts';
import { storeReceivedEmail } from '../emails/store.ts';
import { activeInboxAt } from '../inboxes/inboxes.ts';
import { fileNewEmail } from '../labels/filing.ts';
import { noticeWords, type NoticeCause } from './notice-words.ts';

export type { NoticeCause } from './notice-words.ts';

export const NOTICE_SENDER_NAME = 'Mail Delivery Subsystem';
const MAX_REFERENCES = 20;
const MAX_RESPONSE = 2000;

/**
 * Stores the notice of `cause` for the sender of a dashboard send, in the caller's transaction: into the inbox
 * of its From address when the workspace has that inbox (active), else into the workspace's mailbox (no inbox).
 * Its Message-ID is made from the email, the kind and the recipient, so a cause already noticed (a run again
 * after a rollback, a report repeated) stores nothing. The id of the notice, or null when none is due.
 */
export function* noticeSender(ctx: { clock: Clock; config: Pick<Config, 'hostname'> }, cause: NoticeCause): Query<string | null> {
  const { clock } = ctx;
  const sent = yield* sentEmailHead(cause.emailId);
  if (!sent || sent.workspace_id !== cause.workspaceId || sent.sent_by !== 'dashboard') return null;
  const hostname = ctx.config.hostname;
  const messageId = `notice.${cause.kind}.${sent.id.slice(3).toLowerCase()}.${createHash('sha256').update(cause.recipient.toLowerCase()).digest('hex').slice(0, 16)}@${hostname}`;
  if (yield* emailByMessageId(cause.workspaceId, messageId)) return null;

  const words = noticeWords({ ...cause, response: cause.response && cause.response.slice(0, MAX_RESPONSE) }, { subject: sent.subject, sentAt: sent.created_at });
  const from = { name: NOTICE_SENDER_NAME, address: `mailer-daemon@${hostname}` };
  const to = { name: sent.from_name ?? '', address: sent.from_address };
  const references = [...(JSON.parse(sent.refs) as string[]), sent.message_id].slice(-MAX_REFERENCES);
  const now = clock.now();
  // RFC 3834 5: a message the box generates by itself says so, so that no auto-responder answers it.
  const headers = { 'Auto-Submitted': 'auto-generated' };
  const raw = plainMessage({ from, to, subject: words.subject, date: now, messageId, inReplyTo: sent.message_id, references, headers, text: words.text });
  const parsed: ParsedMessage = {
    fromAll: [from],
    to: [to],
    cc: [],
    replyTo: [],
    subject: words.subject,
    text: words.text,
    html: null,
    attachments: [],
    messageId,
    inReplyTo: sent.message_id,
    references,
    headers: { 'auto-submitted': [headers['Auto-Submitted']] },
    boxHeaders: {},
    problem: null,
    report: null,
  };
  const inbox = yield* activeInboxAt(cause.workspaceId, sent.from_address);
  const { id } = yield* storeReceivedEmail(clock, {
    workspaceId: cause.workspaceId,
    inboxId: inbox?.id ?? null,
    inboxAddress: inbox?.address ?? sent.from_address,
    domainId: inbox?.domain_id ?? sent.domain_id,
    domain: inbox ? domainOf(inbox.address) : sent.domain,
    parsed,
    stored: packMail(raw, words.text, null),
    // A notice, like a DSN, has the null sender (RFC 5321 4.5.5).
    envelopeFrom: '',
    authentication: null,
    verdict: { category: 'primary', important: true, classification: `A delivery notice from this box about a message you sent; important because ${words.why}` },
    threadId: sent.thread_id,
    notice: true,
  });
  yield* fileNewEmail(now, cause.workspaceId, id, { threadId: sent.thread_id });
  return id;
}
