// Turns the raw bytes of a received message into the fields the mailbox stores, with mailparser doing all of
// the MIME work. A message mailparser cannot parse (catalogue F8: over 1,000 MIME nodes, a header block
// over 1 MiB) is still stored: what its header block gives, or failing that only the envelope, and the raw
// bytes are kept either way. It must never throw.
import { simpleParser, type AddressObject, type ParsedMail, type SimpleParserOptions } from 'mailparser';
import { headerEnd, headerFields, type HeaderFields } from './headers.ts';
import { safeFilename } from './filenames.ts';
import type { Mailbox } from './addresses.ts';
import { readReport, type Report } from './reports.ts';
import libmime from 'libmime';

/** A mailbox of received mail: the name is '' when the header gave none. */
export type ReceivedMailbox = Required<Mailbox>;

export interface ParsedAttachment {
  filename: string;
  contentType: string;
  contentId?: string;
  content: Buffer;
}

export interface ParsedMessage {
  /** Every From mailbox: classification and DMARC need to know when there are none or several. */
  fromAll: ReceivedMailbox[];
  to: ReceivedMailbox[];
  cc: ReceivedMailbox[];
  replyTo: ReceivedMailbox[];
  subject: string;
  text: string | null;
  html: string | null;
  attachments: ParsedAttachment[];
  /** Without angle brackets; null when the message has none. */
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  headers: HeaderFields;
  /** The box's own X-Mailwright-* fields (lower-case names), RFC 2047 words decoded: what a submitter asks of the box. */
  boxHeaders: Record<string, string>;
  /** What could not be read, when mailparser gave up on part of the message. */
  problem: string | null;
  /** The DSN or complaint a multipart/report carries (read here, off the event loop, for mail to a VERP address). */
  report: Report | null;
}

const MAX_HTML_TO_TEXT = 2 * 1024 * 1024;
const MAX_REFERENCES = 50;

export async function parseMessage(raw: Buffer): Promise<ParsedMessage> {
  try {
    const m = await simpleParser(raw, OPTIONS);
    return { ...fromParsed(m, null), report: await readReport(m) };
  } catch (err) {
    const problem = `the message could not be parsed in full (${err instanceof Error ? err.message : String(err)})`;
    try {
      // The header block alone usually still parses: addresses, subject and threading survive.
      return fromParsed(await simpleParser(Buffer.concat([headerBlock(raw), Buffer.from('\r\n\r\n')]), OPTIONS), problem);
    } catch {
      return { ...EMPTY, problem };
    }
  }
}

// The text-to-HTML conversion and link rewriting are for display, which the mailbox does itself; skipping
// them keeps the parse cheap. HTML-only mail still gets a text version, for search and previews. A DSN's
// message/delivery-status part stays a part of its own (an attachment) instead of text, for readReport.
// Attachments are not hashed (mailparser's MD5 `checksum`, which nothing here reads: about 1.5 ms per MiB).
const OPTIONS: SimpleParserOptions = {
  skipTextToHtml: true,
  skipTextLinks: true,
  skipImageLinks: true,
  maxHtmlLengthToParse: MAX_HTML_TO_TEXT,
  keepDeliveryStatus: true,
  checksumAlgo: false,
};

// Names for the parts of a report that come without one (a DSN's status part is kept apart, see OPTIONS).
const UNNAMED: Record<string, string> = {
  'message/delivery-status': 'delivery-status.txt',
  'message/global-delivery-status': 'delivery-status.txt',
  'message/feedback-report': 'feedback-report.txt',
  'message/rfc822': 'message.eml',
  'message/global': 'message.eml',
  'text/rfc822-headers': 'headers.txt',
};

const EMPTY: ParsedMessage = {
  fromAll: [],
  to: [],
  cc: [],
  replyTo: [],
  subject: '',
  text: null,
  html: null,
  attachments: [],
  messageId: null,
  inReplyTo: null,
  references: [],
  headers: {},
  boxHeaders: {},
  problem: null,
  report: null,
};

/**
 * The text with each U+0000 (a body's NUL byte, an encoded word's =00) as U+FFFD: no reader shows it, an HTML
 * parser makes the same replacement, and PostgreSQL's text cannot hold it. The raw bytes keep it.
 */
const readable = (s: string) => (s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s);

function fromParsed(m: ParsedMail, problem: string | null): ParsedMessage {
  const references = (Array.isArray(m.references) ? m.references : m.references ? [m.references] : []).map(readable).flatMap(messageIds);
  return {
    fromAll: fromHeaders(m),
    to: mailboxes(m.to),
    cc: mailboxes(m.cc),
    replyTo: mailboxes(m.replyTo),
    subject: readable(m.subject ?? ''),
    text: typeof m.text === 'string' ? readable(m.text) : null,
    html: typeof m.html === 'string' ? readable(m.html) : null,
    attachments: m.attachments.map((a) => ({
      filename: safeFilename(a.filename, UNNAMED[a.contentType?.toLowerCase()] ?? 'attachment'),
      contentType: a.contentType || 'application/octet-stream',
      contentId: a.cid,
      content: a.content,
    })),
    messageId: messageIds(readable(m.messageId ?? ''))[0] ?? null,
    inReplyTo: messageIds(readable(m.inReplyTo ?? ''))[0] ?? null,
    references: references.slice(-MAX_REFERENCES),
    headers: headerFields(m.headerLines),
    // mailparser leaves unknown fields encoded; a client like nodemailer encodes any value with quotes in it.
    boxHeaders: Object.fromEntries(
      [...m.headers].filter(([k, v]) => k.startsWith('x-mailwright-') && typeof v === 'string').map(([k, v]) => [k, readable(libmime.decodeWords(v as string))]),
    ),
    problem,
    report: null,
  };
}

// mailparser keeps only the last From field (catalogue F5), so each one is read from the header lines.
function fromHeaders(m: ParsedMail): ReceivedMailbox[] {
  const lines = m.headerLines.filter((h) => h.key === 'from');
  if (lines.length <= 1) return mailboxes(m.from);
  return lines.flatMap((h) => addressesIn(h.line.slice(h.line.indexOf(':') + 1)));
}

function addressesIn(value: string): ReceivedMailbox[] {
  return [...readable(value).matchAll(/[^\s<>,;:"()]+@[^\s<>,;:"()]+/g)].map((match) => ({ name: '', address: match[0].toLowerCase() }));
}

function mailboxes(header: AddressObject | AddressObject[] | undefined): ReceivedMailbox[] {
  const objects = Array.isArray(header) ? header : header ? [header] : [];
  const out: ReceivedMailbox[] = [];
  const visit = (entries: AddressObject['value']) => {
    for (const e of entries) {
      if (e.group) visit(e.group);
      else if (e.address) out.push({ name: readable(e.name ?? ''), address: readable(e.address.toLowerCase()) });
    }
  };
  for (const o of objects) visit(o.value);
  return out;
}

function messageIds(value: string): string[] {
  const ids = [...value.matchAll(/<([^<>\s]+)>/g)].map((m) => m[1]);
  if (ids.length === 0 && /^[^<>\s]+@[^<>\s]+$/.test(value.trim())) ids.push(value.trim());
  return ids;
}

/** The header block of a raw message, at most 1 MiB of it. */
const headerBlock = (raw: Buffer) => raw.subarray(0, Math.min(headerEnd(raw), 1024 * 1024));
