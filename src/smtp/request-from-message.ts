// A message submitted over SMTP, as mail/parse.ts read it (mailparser), turned into the SendRequest an API
// send would make, under the same rules (send/request.ts): exactly one From, header-safe text, the API's
// limits on recipients and attachments, and only the custom headers a sender sets on purpose. The box writes
// Message-ID, Date, MIME structure and DKIM itself, as for an API send. The envelope, not the headers, says
// who gets the message (RFC 5321 3.3): RCPT TO addresses missing from To and Cc are its Bcc, and header
// addresses that were not in RCPT TO are only shown. Errors are ApiErrors naming the header at fault.
import { ApiError, validationError } from '../errors.ts';
import { checkAddress, type Mailbox } from '../mail/addresses.ts';
import type { ParsedMessage, ReceivedMailbox } from '../mail/parse.ts';
import {
  HEADER_NAME,
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENTS,
  MAX_RECIPIENTS_PER_FIELD,
  NO_CONTROL,
  RESERVED_HEADERS,
  templateData,
  type Attachment,
  type SendRequest,
  type TemplateUse,
} from '../send/request.ts';

const MAX_SUBJECT = 998;
const MAX_HEADER_VALUE = 2000;
const MAX_CONTENT_ID = 255;

// Carried over: X-* and List-* (the API's custom headers in practice) and a few a sender sets on purpose.
// What mail clients add on their own (User-Agent, Thread-Index, ...) and our Idempotency-Key stay behind.
const CARRIED = /^(x-|list-)/;
const CARRIED_NAMES = new Set(['auto-submitted', 'precedence', 'feedback-id']);
const TEMPLATE_HEADER = 'x-mailwright-template';
const TEMPLATE_DATA_HEADER = 'x-mailwright-template-data';

/** `envelopeTo`: the RCPT TO addresses, already checked at RCPT. */
export function requestFromMessage(m: ParsedMessage, envelopeTo: Mailbox[]): SendRequest {
  if (m.problem) throw new ApiError(400, 'validation_error', `message: ${m.problem}`);
  // RFC 5322 3.6.2: several From mailboxes would need a Sender; one sender per message keeps DMARC simple.
  if (m.fromAll.length !== 1) {
    throw validationError('From', m.fromAll.length ? `holds ${m.fromAll.length} addresses; send from exactly one` : 'is missing: the message needs a From address on a verified domain');
  }
  const from = mailbox('From', m.fromAll[0]);
  const to = mailboxes('To', m.to);
  const cc = mailboxes('Cc', m.cc);
  const shown = new Set([...to, ...cc].map((a) => a.address.toLowerCase()));
  const bcc = [...new Map(envelopeTo.filter((r) => !shown.has(r.address.toLowerCase())).map((r) => [r.address.toLowerCase(), r])).values()];
  if (m.subject.length > MAX_SUBJECT) throw validationError('Subject', `is longer than ${MAX_SUBJECT} characters`);
  if (!NO_CONTROL.test(m.subject)) throw validationError('Subject', 'must not contain CR, LF, NUL or other control characters');
  if (m.inReplyTo !== null && !NO_CONTROL.test(m.inReplyTo)) throw validationError('In-Reply-To', 'must not contain control characters');

  const template = templateUse(m);
  return {
    from,
    to,
    cc,
    bcc,
    replyTo: mailboxes('Reply-To', m.replyTo),
    subject: m.subject,
    // SMTP has no "give html, text or both" rule: an empty body is a legitimate message.
    ...(template ? { template } : m.text !== null || m.html === null ? { text: m.text ?? '' } : {}),
    ...(m.html !== null && !template ? { html: m.html } : {}),
    headers: customHeaders(m.headers),
    attachments: attachments(m.attachments),
    tags: [],
    labels: [],
    messageClass: 'transactional',
    ...(m.inReplyTo !== null ? { inReplyTo: m.inReplyTo } : {}),
    envelopeTo: envelopeTo.map((r) => r.address),
  };
}

/**
 * A send by hosted template: X-Mailwright-Template names its key (or id) and X-Mailwright-Template-Data holds
 * the variables as one JSON object. The message's body is then ignored; a non-empty Subject replaces the template's.
 */
function templateUse(m: ParsedMessage): TemplateUse | undefined {
  const ref = m.boxHeaders[TEMPLATE_HEADER]?.trim();
  if (!ref) return undefined;
  if (ref.length > 200 || !NO_CONTROL.test(ref)) throw validationError('X-Mailwright-Template', 'must be a template key or id');
  const raw = m.boxHeaders[TEMPLATE_DATA_HEADER];
  let data: unknown;
  try {
    data = raw === undefined ? undefined : JSON.parse(raw);
  } catch {
    throw validationError('X-Mailwright-Template-Data', 'must be one JSON object of variable values, such as {"user_name": "Ada"}');
  }
  return { ref, data: templateData(data, 'X-Mailwright-Template-Data'), ...(m.subject.trim() ? { subject: m.subject } : {}) };
}

function mailbox(field: string, m: ReceivedMailbox): Mailbox {
  if (!NO_CONTROL.test(m.name)) throw validationError(field, `the name of ${m.address} must not contain control characters`);
  const checked = checkAddress(m.address, m.name);
  if (!checked.ok) throw validationError(field, checked.reason);
  return checked.mailbox;
}

function mailboxes(field: string, list: ReceivedMailbox[]): Mailbox[] {
  if (list.length > MAX_RECIPIENTS_PER_FIELD) throw validationError(field, `at most ${MAX_RECIPIENTS_PER_FIELD} addresses`);
  return list.map((m) => mailbox(field, m));
}

// The first value of each carried header: the API's headers hold one value per name, as most senders mean.
function customHeaders(fields: ParsedMessage['headers']): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(fields)) {
    if (!(CARRIED.test(name) || CARRIED_NAMES.has(name)) || RESERVED_HEADERS.has(name) || name.startsWith(TEMPLATE_HEADER)) continue;
    const value = values[0];
    if (!HEADER_NAME.test(name)) throw validationError(`header ${name}`, 'is not a header name this box passes on (letters, digits and -)');
    if (value.length > MAX_HEADER_VALUE) throw validationError(`header ${name}`, `is longer than ${MAX_HEADER_VALUE} characters`);
    if (!NO_CONTROL.test(value)) throw validationError(`header ${name}`, 'must not contain control characters');
    headers[name] = value;
  }
  return headers;
}

function attachments(parts: ParsedMessage['attachments']): Attachment[] {
  if (parts.length > MAX_ATTACHMENTS) {
    throw new ApiError(400, 'limit_exceeded', `attachments: at most ${MAX_ATTACHMENTS} files per message (inline images included), got ${parts.length}`);
  }
  const total = parts.reduce((n, a) => n + a.content.length, 0);
  if (total > MAX_ATTACHMENT_BYTES) throw new ApiError(413, 'payload_too_large', `attachments: total size ${total} bytes exceeds ${MAX_ATTACHMENT_BYTES}`);
  return parts.map((a, i) => {
    // The file name is already safe (mail/parse.ts); a Content-ID becomes a header of ours again.
    const cid = a.contentId;
    if (cid !== undefined && (cid.length > MAX_CONTENT_ID || !/^[^<>\s]+$/.test(cid) || !NO_CONTROL.test(cid))) {
      throw validationError(`attachment ${i + 1} (${a.filename}) Content-ID`, 'must be a plain content id, without <>, spaces or control characters');
    }
    return { filename: a.filename, content: a.content, contentType: a.contentType.toLowerCase(), ...(cid ? { contentId: cid } : {}) };
  });
}
