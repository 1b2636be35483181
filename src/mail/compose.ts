// Composes one outgoing message into the exact bytes that will be signed and sent: nodemailer's MailComposer
// builds the MIME, this file only feeds it and guarantees the result is wire-safe (CRLF only, lines <= 998).
// It must never hand-build MIME, add Bcc to the headers, or let CR/LF/NUL reach a header value.
import { convert } from 'html-to-text';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { MailComposerAttachment, MailComposerOptions } from 'nodemailer/lib/mail-composer';
import type { MimeNodeAddress } from 'nodemailer/lib/mime-node';

export interface Mailbox {
  name?: string;
  address: string;
}

export interface ComposeInput {
  /** Without angle brackets, e.g. "01JABC...@example.com". */
  messageId: string;
  /** ms since epoch; becomes the Date header. */
  date: number;
  from: Mailbox;
  to: Mailbox[];
  cc: Mailbox[];
  replyTo: Mailbox[];
  subject: string;
  text?: string;
  html?: string;
  /** Extra headers already validated by the caller (X-Entity-Ref-ID, List-Unsubscribe, List-Unsubscribe-Post, ...). */
  headers: Record<string, string>;
  attachments: Array<{ filename: string; content: Buffer; contentType?: string; contentId?: string }>;
  /** Message-IDs without brackets. */
  inReplyTo?: string;
  references?: string[];
}

/** Input that must never become a message, or a message that must never go on the wire. */
export class ComposeError extends Error {
  readonly field: string;

  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = 'ComposeError';
    this.field = field;
  }
}

// RFC 5322 2.1.1: at most 998 characters per line, excluding the CRLF.
const MAX_LINE = 998;
const CR = 0x0d;
const LF = 0x0a;

// Headers compose writes itself (or must never write, Bcc); a copy in `headers` would duplicate or contradict them.
const OWN_HEADERS = new Set([
  'from', 'sender', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'date', 'message-id', 'in-reply-to', 'references',
  'mime-version', 'content-type', 'content-transfer-encoding', 'content-disposition', 'content-id', 'dkim-signature',
]);

// RFC 5322 3.6.8: field-name = 1*ftext, printable US-ASCII except ':'.
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
const HEADER_BREAKERS = /[\r\n\0]/;
// A msg-id is one token: whitespace would split it (References is space-separated), brackets are ours to add.
const MSG_ID = /^[^\s<>\0]+$/;
// RFC 5322 2.1.1: a msg-id cannot be folded, and nodemailer puts a long one alone on a folded line " <id>",
// which must stay within 998 octets.
export const MAX_MSG_ID = MAX_LINE - 3;

export async function compose(input: ComposeInput): Promise<Buffer> {
  const mail = toMailOptions(input);
  const root = new MailComposer(mail).compile();
  // RFC 5322 3.6.3: Bcc would reveal the blind recipients to everyone; the envelope carries them instead.
  root.keepBcc = false;
  const raw = crlfOnly(await root.build());
  assertWireSafe(raw);
  return raw;
}

function toMailOptions(input: ComposeInput): MailComposerOptions {
  checkMsgId('messageId', input.messageId);
  if (input.inReplyTo !== undefined) checkMsgId('inReplyTo', input.inReplyTo);
  input.references?.forEach((id, i) => checkMsgId(`references[${i}]`, id));
  if (!Number.isFinite(input.date) || Number.isNaN(new Date(input.date).getTime())) {
    throw new ComposeError('date', 'not a valid time');
  }
  checkHeaderText('subject', input.subject);

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers)) {
    if (!FIELD_NAME.test(name)) throw new ComposeError(`headers[${JSON.stringify(name)}]`, 'not a valid header field name');
    if (OWN_HEADERS.has(name.toLowerCase())) throw new ComposeError(`headers[${JSON.stringify(name)}]`, 'compose sets this header itself');
    checkHeaderText(`headers[${JSON.stringify(name)}]`, value);
    headers[name] = value;
  }

  const html = input.html === undefined ? undefined : crlf(input.html);
  // A text alternative for HTML-only mail: text-only clients and spam filters read it (RFC 2046 5.1.4).
  const text = input.text !== undefined ? crlf(input.text) : html !== undefined ? crlf(htmlToText(html)) : undefined;

  return {
    from: mailbox('from', input.from),
    to: mailboxes('to', input.to),
    cc: mailboxes('cc', input.cc),
    replyTo: mailboxes('replyTo', input.replyTo),
    subject: input.subject,
    messageId: input.messageId,
    date: new Date(input.date),
    inReplyTo: input.inReplyTo,
    references: input.references?.length ? input.references : undefined,
    headers,
    text,
    html,
    attachments: input.attachments.map(attachment),
    // nodemailer reads files and URLs named in content objects; ours are always in-memory bytes.
    disableFileAccess: true,
    disableUrlAccess: true,
    newline: '\r\n',
  };
}

export function htmlToText(html: string): string {
  return convert(html, {
    wordwrap: 78,
    selectors: [
      // Keep the URL readable next to the link text, but not twice when the text already is the URL.
      { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
      // Tracking pixels and cid: images have no useful text form; their src would only be noise.
      { selector: 'img', format: 'skip' },
    ],
  });
}

function attachment(a: ComposeInput['attachments'][number], i: number): MailComposerAttachment {
  checkHeaderText(`attachments[${i}].filename`, a.filename);
  if (a.contentType !== undefined) checkHeaderText(`attachments[${i}].contentType`, a.contentType);
  if (a.contentId !== undefined) checkMsgId(`attachments[${i}].contentId`, a.contentId);
  return {
    filename: a.filename,
    content: a.content,
    contentType: a.contentType,
    cid: a.contentId,
    // An embedded part is shown in place, whatever its type (nodemailer itself does this only for images).
    contentDisposition: a.contentId !== undefined ? 'inline' : undefined,
    // Transfer encoding left to nodemailer: base64 for every attachment, so the bytes (bare CR/LF included)
    // arrive unchanged, except message/* parts, which RFC 2046 5.2.1 forbids encoding.
  };
}

function mailbox(field: string, m: Mailbox): MimeNodeAddress {
  checkHeaderText(`${field}.address`, m.address);
  if (m.name !== undefined) checkHeaderText(`${field}.name`, m.name);
  return m.name ? { name: m.name, address: m.address } : { address: m.address };
}

function mailboxes(field: string, list: Mailbox[]): MimeNodeAddress[] | undefined {
  return list.length ? list.map((m, i) => mailbox(`${field}[${i}]`, m)) : undefined;
}

function checkHeaderText(field: string, value: string): void {
  if (typeof value !== 'string') throw new ComposeError(field, 'must be a string');
  if (HEADER_BREAKERS.test(value)) throw new ComposeError(field, 'contains CR, LF or NUL');
}

/**
 * Why compose would refuse this message id (given without angle brackets), or null when it would take it.
 * The API edge (send/request.ts) asks the same question, so such a value is a 400 there, not a failed send.
 */
export function msgIdProblem(value: string): string | null {
  if (!value) return 'is empty';
  if (!MSG_ID.test(value)) return 'has spaces, NUL or angle brackets inside it (one message id only)';
  if (value.length > MAX_MSG_ID) return `is longer than ${MAX_MSG_ID} characters`;
  return null;
}

function checkMsgId(field: string, value: string): void {
  checkHeaderText(field, value);
  const problem = msgIdProblem(value);
  if (problem) throw new ComposeError(field, problem);
}

const crlf = (s: string) => s.replace(/\r\n|\r|\n/g, '\r\n');

/** Rewrites any bare CR or bare LF to CRLF (RFC 5322 2.3); returns the input itself when it has none. */
function crlfOnly(raw: Buffer): Buffer {
  if (!hasBareLineBreak(raw)) return raw;
  return Buffer.from(raw.toString('latin1').replace(/\r\n|\r|\n/g, '\r\n'), 'latin1');
}

function hasBareLineBreak(raw: Buffer): boolean {
  for (let i = raw.indexOf(LF); i !== -1; i = raw.indexOf(LF, i + 1)) if (i === 0 || raw[i - 1] !== CR) return true;
  for (let i = raw.indexOf(CR); i !== -1; i = raw.indexOf(CR, i + 1)) if (raw[i + 1] !== LF) return true;
  return false;
}

/**
 * Throws a ComposeError unless every line ends in CRLF, no CR or LF stands alone, and no line is longer than
 * 998 octets (RFC 5322 2.1.1, 2.3; RFC 5321 4.5.3.1.6). A receiver or relay would otherwise rewrite the
 * message, and a rewritten message fails its DKIM body hash.
 */
export function assertWireSafe(raw: Buffer): void {
  const headerEnd = raw.indexOf('\r\n\r\n');
  let start = 0;
  let line = 1;
  while (start < raw.length) {
    const lf = raw.indexOf(LF, start);
    const end = lf === -1 ? raw.length : lf;
    // The only CR allowed on a line is the one right before its LF.
    const cr = raw.indexOf(CR, start);
    if (cr !== -1 && cr < end && !(lf !== -1 && cr === lf - 1)) fail('bare CR', cr);
    if (lf !== -1 && (lf === start || raw[lf - 1] !== CR)) fail('bare LF', lf);
    const length = (lf === -1 ? raw.length : lf - 1) - start;
    if (length > MAX_LINE) fail(`a line of ${length} octets (at most ${MAX_LINE})`, start);
    start = end + 1;
    line++;
  }

  function fail(what: string, at: number): never {
    throw new ComposeError(headerEnd === -1 || at < headerEnd ? headerName(raw, at) : 'body', `${what} on line ${line}`);
  }
}

// Names the header field a header-block offset belongs to, walking back over folded lines.
function headerName(raw: Buffer, at: number): string {
  const lineStart = (pos: number) => (pos < 0 ? 0 : raw.lastIndexOf(LF, pos) + 1);
  let start = lineStart(at - 1);
  while (start > 0 && (raw[start] === 0x20 || raw[start] === 0x09)) start = lineStart(start - 2);
  const colon = raw.indexOf(':', start);
  const name = colon === -1 ? '' : raw.subarray(start, Math.min(colon, start + 80)).toString('latin1');
  return FIELD_NAME.test(name) ? `header ${name}` : 'headers';
}
