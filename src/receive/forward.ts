// Forwarding of received mail (API-SPEC.md 4.4): when an inbox forwards, a copy of each message it stores goes
// to the forward address through the one send path, in the receive transaction itself, so the stored message,
// the copy and its queue rows commit together. It decides whether a message may be forwarded (never a loop)
// and builds the copy; it never sends anything itself, and "cannot forward" is never an error of the receive.
import type { DbContext } from '../db/writer.ts';
import { get, type Query } from '../db/query.ts';
import { ApiError } from '../errors.ts';
import { addEvent } from '../emails/events.ts';
import type { InboxRow } from '../inboxes/inboxes.ts';
import { isInboxAddress } from '../inboxes/forwarding.ts';
import { checkAddress, type Mailbox } from '../mail/addresses.ts';
import type { HeaderFields } from '../mail/headers.ts';
import type { ParsedAttachment, ReceivedMailbox } from '../mail/parse.ts';
import type { SendRequest } from '../send/request.ts';
import { planSend, writeSends, type PlannedSend } from '../send/submit.ts';

/** Every forwarded copy carries it (value: the inbox that forwarded); a message that has it is never forwarded. */
export const FORWARDED_HEADER = 'X-Mailwright-Forwarded';

export interface ReceivedCopy {
  /** The stored received email (em_...). */
  emailId: string;
  workspaceId: string;
  inbox: InboxRow;
  /** The original sender (null when the message has none or several). */
  from: ReceivedMailbox | null;
  subject: string;
  text: string | null;
  html: string | null;
  attachments: ParsedAttachment[];
  /** The received message's header fields (lower-case names), for loop detection. */
  headers: HeaderFields;
}

/**
 * A query (db/query.ts): decides and, when forwarding applies, writes the forwarded copy (its email, queue rows
 * and the `forwarded` event on the received email) in the caller's transaction (the writer's, whose log lines
 * are written once it commits). Returns the copy's em_ id or null.
 * Never throws for "cannot forward" (unverified domain, loop, forwarding off): it logs and returns null. The
 * caller wakes the queue after its commit.
 *
 * The copy goes through the send path like any send: planSend's checks (the sender domain; later plan
 * limits), then the writer job `send` (suppressions are decided there).
 */
export function* forwardInTransaction(app: DbContext, copy: ReceivedCopy): Query<string | null> {
  const { clock, log } = app;
  // Read again inside the transaction: forwarding may have been changed since the recipient was routed.
  const inbox = yield* get<InboxRow>('SELECT * FROM inboxes WHERE id = ?', copy.inbox.id);
  if (!inbox || inbox.status !== 'active' || inbox.forward_status !== 'active' || !inbox.forward_to) return null;
  const forwardTo = inbox.forward_to;
  const ids = { emailId: copy.emailId, inboxId: inbox.id, forwardTo };
  if (inbox.workspace_id !== copy.workspaceId) {
    log.error('not forwarded: the inbox belongs to another workspace', { ...ids, workspaceId: copy.workspaceId });
    return null;
  }
  const reason = yield* reasonNotToForward(copy, forwardTo);
  if (reason) {
    log.info('not forwarded', { ...ids, reason });
    return null;
  }

  let plan: PlannedSend;
  try {
    plan = yield* planSend(app, inbox.workspace_id, forwardedCopy(inbox, forwardTo, copy));
  } catch (err) {
    // The send path refused the copy (the inbox's domain is not verified for sending, and later a suppressed
    // address or an exhausted plan): the message stays stored in the inbox, nothing goes out.
    if (err instanceof ApiError) {
      log.warn('not forwarded: the send path refused the copy', { ...ids, code: err.code, reason: err.message });
      return null;
    }
    throw err;
  }
  // The writer job `send` itself, inside this receive's job: one transaction for the message and its copy.
  try {
    yield* writeSends(app, [plan]);
  } catch (err) {
    // Over the plan's limits (checked before anything of the copy is written): the message stays in the
    // inbox, and the received email says why its copy did not go.
    if (!(err instanceof ApiError) || err.code !== 'quota_exceeded') throw err;
    yield* addEvent(clock, { workspaceId: inbox.workspace_id, emailId: copy.emailId, type: 'blocked', recipient: forwardTo, data: { reason: 'quota_exceeded', message: err.message } });
    log.warn('not forwarded: over the plan limit', { ...ids, reason: err.message });
    return null;
  }
  const copyId = plan.answer.id;
  yield* addEvent(clock, { workspaceId: inbox.workspace_id, emailId: copy.emailId, type: 'forwarded', recipient: forwardTo, data: { copyId } });
  log.info('forwarded', { ...ids, copyId });
  return copyId;
}

/**
 * Why this message must not be forwarded, or null. A forwarded copy is never forwarded again, and nothing is
 * forwarded that could come straight back:
 * - it carries our marking header (a copy made by this or another Mailwright box, returned to an inbox);
 * - a Delivered-To field names the forward address (RFC 9228: it was already delivered there, a loop);
 * - the forward address is an inbox of this box (the copy would arrive here again);
 * - it comes from the forward address itself (an answer or auto-reply of the target, sent back to it);
 * - it is a delivery status notification (RFC 3464 multipart/report, or from MAILER-DAEMON): bounces of the
 *   box's own mail go to its VERP return paths, so one arriving at an inbox is about mail sent from that
 *   address, possibly a forwarded copy bounced to its From by a broken MTA; forwarding it could go round.
 * Other automatic mail (notifications, out-of-office replies) is forwarded, and the copy keeps its
 * Auto-Submitted value so that responders at the target do not answer it (RFC 3834 2).
 */
function* reasonNotToForward(copy: ReceivedCopy, forwardTo: string): Query<string | null> {
  const h = copy.headers;
  const target = forwardTo.toLowerCase();
  if (h[FORWARDED_HEADER.toLowerCase()]) return 'it is itself a forwarded copy';
  if ((h['delivered-to'] ?? []).some((v) => v.trim().replace(/^<|>$/g, '').toLowerCase() === target)) return 'it was already delivered to the forward address';
  if (yield* isInboxAddress(forwardTo)) return 'the forward address is an inbox of this box';
  const sender = copy.from?.address.toLowerCase();
  if (sender === target) return 'it comes from the forward address';
  if (sender && /^mailer-daemon@/.test(sender)) return 'it is a delivery status notification';
  const contentType = (h['content-type']?.[0] ?? '').toLowerCase();
  if (/^multipart\/report\b/.test(contentType) && /report-type\s*=\s*"?delivery-status/.test(contentType)) return 'it is a delivery status notification';
  return null;
}

const CONTROL = /[\u0000-\u001f\u007f]+/g;
const oneLine = (s: string, max: number) => s.replace(CONTROL, ' ').trim().slice(0, max);
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;
const CONTENT_ID = /^[^\s<>\0]{1,255}$/;
const AUTO_SUBMITTED = /^\s*([a-z0-9-]{1,40})(?![a-z0-9-])/i;

/** The copy: from the inbox ("<sender> via <inbox>"), to the forward address, Reply-To the original sender. */
function forwardedCopy(inbox: InboxRow, forwardTo: string, copy: ReceivedCopy): SendRequest {
  const original = copy.from ? checkAddress(copy.from.address, oneLine(copy.from.name, 200)) : null;
  const sender = original?.ok ? original.mailbox : null;
  const via = inbox.name ? oneLine(inbox.name, 200) : inbox.address;
  const fromName = sender ? `${sender.name ?? sender.address} via ${via}` : inbox.name ? via : undefined;
  const headers: Record<string, string> = { [FORWARDED_HEADER]: inbox.address };
  // RFC 3834 5: the keyword, without its parameters or comments.
  const autoSubmitted = AUTO_SUBMITTED.exec(copy.headers['auto-submitted']?.[0] ?? '')?.[1];
  if (autoSubmitted && autoSubmitted.toLowerCase() !== 'no') headers['Auto-Submitted'] = autoSubmitted;
  const replyTo: Mailbox[] = sender ? [sender] : [];
  return {
    from: { ...(fromName ? { name: fromName } : {}), address: inbox.address },
    to: [{ address: forwardTo }],
    cc: [],
    bcc: [],
    replyTo,
    subject: oneLine(copy.subject, 998),
    ...(copy.text !== null ? { text: copy.text } : {}),
    ...(copy.html !== null ? { html: copy.html } : {}),
    ...(copy.text === null && copy.html === null ? { text: '' } : {}),
    headers,
    attachments: copy.attachments.map((a) => {
      const contentId = a.contentId?.replace(/^<|>$/g, '');
      return {
        filename: oneLine(a.filename, 255) || 'attachment',
        contentType: MEDIA_TYPE.test(a.contentType) ? a.contentType.toLowerCase() : 'application/octet-stream',
        content: a.content,
        ...(contentId && CONTENT_ID.test(contentId) ? { contentId } : {}),
      };
    }),
    tags: [],
    labels: [],
    messageClass: 'transactional',
  };
}
