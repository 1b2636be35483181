// A reply or a forward of one of the workspace's emails turned into an ordinary send (POST /emails/:id/reply
// and /forward): who it goes to, from which address, its subject and its body with the original quoted or
// forwarded (mail/reply.ts), and `inReplyTo` the original, so planSend threads it and writes In-Reply-To and
// References. Reads only; the send itself goes through submit like any other.
import type { Query } from '../db/query.ts';
import { ApiError, notFound } from '../errors.ts';
import { getEmail, type EmailRecord } from '../emails/mailbox.ts';
import { emailFiles } from '../emails/lookup.ts';
import { getInbox } from '../inboxes/inboxes.ts';
import { checkAddress, mailboxText, type Mailbox } from '../mail/addresses.ts';
import { htmlToText } from '../mail/compose.ts';
import { escapeHtml } from '../pages/html.ts';
import { forwardedHtml, forwardedText, forwardSubject, quotedHtml, quotedText, replySubject, type Original } from '../mail/reply.ts';
import type { AnswerFields, SendRequest } from './request.ts';

type Person = { name: string | null; address: string };
// Received mail's names and subject are what a stranger wrote, decoded: never a CR, LF or other control
// character in a header of ours (compose would refuse the message in the queue, after the 200).
const clean = (s: string) => s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
const mailbox = (p: Person): Mailbox => {
  const name = p.name ? clean(p.name) : '';
  return name ? { name, address: p.address } : { address: p.address };
};
/** The people of the original the box can send to (an address a send would take), in the form a send has. */
const sendable = (list: Person[]) => list.filter((m) => checkAddress(m.address).ok);
const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * The send that answers email `id` of the workspace: 404 when it has none, 409 when the email came to no inbox
 * (its inbox was deleted, or it is the box's own notice) or has no address to reply to. A sender domain that
 * cannot send is planSend's 403, as for any send.
 */
export function* answerRequest(workspaceId: string, id: string, kind: 'reply' | 'forward', fields: AnswerFields): Query<SendRequest> {
  const original = yield* getEmail(workspaceId, id, { recipients: false });
  if (!original) throw notFound('Email');
  const from = yield* senderOf(workspaceId, original);
  const o: Original = { from: original.from, to: original.to, subject: original.subject, date: Date.parse(original.createdAt), text: original.text, html: original.html };
  const { text: givenText, html: givenHtml, ...req } = fields.req;
  const base = { ...req, from, inReplyTo: original.id, messageClass: 'transactional' as const };
  if (kind === 'forward') {
    const noteText = fields.noNote ? undefined : (givenText ?? (givenHtml !== undefined ? htmlToText(givenHtml) : undefined));
    const noteHtml = fields.noNote ? undefined : (givenHtml ?? (givenText !== undefined ? textAsHtml(givenText) : undefined));
    // The original's files go again, as they were kept (retention drops raw bytes early, never files).
    const attachments = [...(yield* emailFiles(workspaceId, original.id)), ...req.attachments];
    const html = givenHtml !== undefined || original.html ? { html: forwardedHtml(noteHtml, o) } : {};
    return { ...base, subject: forwardSubject(clean(original.subject)), text: forwardedText(noteText, o), ...html, attachments };
  }
  const { to, cc } = replyRecipients(original, from.address, fields.replyAll);
  const extraCc = req.cc.filter((m) => !to.some((t) => same(t.address, m.address)) && !cc.some((c) => same(c.address, m.address)));
  return {
    ...base,
    to,
    cc: [...cc, ...extraCc],
    subject: replySubject(clean(original.subject)),
    ...(givenText !== undefined ? { text: quotedText(givenText, o) } : {}),
    ...(givenHtml !== undefined ? { html: quotedHtml(givenHtml, o) } : {}),
  };
}

/** Received mail goes back out from the inbox it came to (its address and name); sent mail from its own From. */
function* senderOf(workspaceId: string, e: EmailRecord): Query<Mailbox> {
  if (e.direction === 'out') return mailbox(e.from);
  const inbox = e.inboxId ? yield* getInbox(workspaceId, e.inboxId) : null;
  if (!inbox) {
    throw new ApiError(409, 'no_inbox', 'This email came to no inbox of the workspace (its inbox was deleted, or it is a notice of the box): send with POST /emails and in_reply_to instead');
  }
  return inbox.name ? { name: inbox.name, address: inbox.address } : { address: inbox.address };
}

/**
 * RFC 5322 3.6.3: a reply goes to Reply-To when the original has one, else to From; a reply to one's own sent
 * mail goes to its recipients again. Reply-all copies the original's other recipients, less the sender's own
 * address and anyone already in To.
 */
function replyRecipients(e: EmailRecord, own: string, all: boolean): { to: Mailbox[]; cc: Mailbox[] } {
  const primary = sendable(e.direction === 'in' ? (e.replyTo.length ? e.replyTo : [e.from]) : e.to);
  const to = dedupe(primary.filter((m) => !same(m.address, own)));
  if (!to.length) {
    if (!primary.length) throw new ApiError(409, 'no_reply_address', 'This email has no From or Reply-To address the box can send to (none, or not a valid address): send with POST /emails and in_reply_to instead');
    to.push(...dedupe(primary));
  }
  if (!all) return { to: to.map(mailbox), cc: [] };
  const others = e.direction === 'in' ? [...e.to, ...e.cc] : e.cc;
  const cc = dedupe(sendable(others).filter((m) => !same(m.address, own) && !to.some((t) => same(t.address, m.address))));
  return { to: to.map(mailbox), cc: cc.map(mailbox) };
}

function dedupe(list: Person[]): Person[] {
  const seen = new Set<string>();
  return list.filter((m) => {
    const key = m.address.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A text note in the HTML part of a forward whose original is HTML: escaped, lines kept. */
const textAsHtml = (text: string) => `<div>${escapeHtml(text).replace(/\n/g, '<br>\n')}</div>`;

/** A reply as a composer draft keeps it: the send's fields under the request's names, threaded by in_reply_to. */
export function draftOfAnswer(req: SendRequest): Record<string, unknown> {
  const list = (l: Mailbox[]) => (l.length ? l.map(mailboxText) : undefined);
  const fields = {
    from: mailboxText(req.from), to: list(req.to), cc: list(req.cc), bcc: list(req.bcc), subject: req.subject, text: req.text, html: req.html,
    in_reply_to: req.inReplyTo, tags: req.tags.length ? req.tags : undefined, labels: req.labels.length ? req.labels : undefined,
    headers: Object.keys(req.headers).length ? req.headers : undefined,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}
