// Reads what a report at a VERP bounce address says, from mailparser's output: a delivery status notification
// (RFC 3464, or its UTF-8 form RFC 6533) or a complaint in the Abuse Reporting Format (RFC 5965). Pure data,
// no database: the analyze worker calls it while parsing, and bounces.ts acts on the result. The MIME work is
// mailparser's (the report part arrives as an attachment); each field block of a part is read by mailparser
// too. Hostile input yields null or fewer fields, never an exception.
import { simpleParser, type ParsedMail } from 'mailparser';
import addressparser from 'nodemailer/lib/addressparser';
import { headerFields, type HeaderFields } from './headers.ts';

export interface DsnRecipient {
  /** Lower-case addresses of Original-Recipient and Final-Recipient (RFC 3464 2.3.1, 2.3.2), when given as addresses. */
  originalRecipient: string | null;
  finalRecipient: string | null;
  /** failed, delayed, delivered, relayed or expanded (lower case). */
  action: string;
  /** The RFC 3463 status code, e.g. "5.1.1"; null when missing or malformed. */
  status: string | null;
  /** Diagnostic-Code without its type, e.g. "550 5.1.1 <bob@example.com>: User unknown". */
  diagnostic: string | null;
  remoteMta: string | null;
}

export type Report =
  | { kind: 'dsn'; reportingMta: string | null; recipients: DsnRecipient[] }
  | {
      kind: 'arf';
      /** abuse, fraud, virus, other, not-spam, auth-failure, ... (lower case). */
      feedbackType: string;
      userAgent: string | null;
      /** Lower-case addresses of every Original-Rcpt-To field (often redacted, so often empty). */
      originalRcptTo: string[];
      sourceIp: string | null;
      arrivalDate: string | null;
    };

// A DSN lists the recipients of one of our transactions (at most 150 per email); anything far beyond is junk.
const MAX_BLOCKS = 500;
// Field blocks are a few hundred bytes each; the rest of a larger part is not read.
const MAX_PART_BYTES = 512 * 1024;
const MAX_VALUE = 1000;
const DSN_PARTS = new Set(['message/delivery-status', 'message/global-delivery-status']);

/** The report a message carries as a direct part of its multipart/report, or null for anything else. */
export async function readReport(m: ParsedMail): Promise<Report | null> {
  try {
    const type = m.headers.get('content-type') as { value?: string } | undefined;
    if (type?.value?.toLowerCase() !== 'multipart/report') return null;
    // A direct child of the report (partId "2", not "3.2"): a report quoted inside a returned message is not ours.
    const part = (types: Set<string>) => m.attachments.find((a) => types.has(a.contentType.toLowerCase()) && a.partId !== null && !a.partId.includes('.'));
    const dsn = part(DSN_PARTS);
    if (dsn) return readDsn(await fieldBlocks(dsn.content));
    const arf = part(new Set(['message/feedback-report']));
    if (arf) return readArf((await fieldBlocks(arf.content))[0] ?? {});
    return null;
  } catch {
    return null;
  }
}

/** RFC 3464 2.1: a per-message block, then one block per recipient. */
function readDsn(blocks: HeaderFields[]): Report | null {
  const [perMessage, ...perRecipient] = blocks;
  if (!perMessage) return null;
  const recipients = perRecipient.flatMap((b): DsnRecipient[] => {
    const action = first(b, 'action')?.toLowerCase();
    if (!action) return [];
    const status = /^[245]\.\d{1,3}\.\d{1,3}\b/.exec(first(b, 'status') ?? '')?.[0] ?? null;
    return [
      {
        originalRecipient: address(typed(first(b, 'original-recipient'))),
        finalRecipient: address(typed(first(b, 'final-recipient'))),
        action,
        status,
        diagnostic: typed(first(b, 'diagnostic-code')),
        remoteMta: typed(first(b, 'remote-mta')),
      },
    ];
  });
  return { kind: 'dsn', reportingMta: typed(first(perMessage, 'reporting-mta')), recipients };
}

/** RFC 5965 3.1: one block of fields; Feedback-Type is required. */
function readArf(fields: HeaderFields): Report | null {
  const feedbackType = first(fields, 'feedback-type')?.toLowerCase();
  if (!feedbackType) return null;
  return {
    kind: 'arf',
    feedbackType,
    userAgent: first(fields, 'user-agent'),
    originalRcptTo: (fields['original-rcpt-to'] ?? []).map(address).filter((a): a is string => a !== null),
    sourceIp: first(fields, 'source-ip'),
    arrivalDate: first(fields, 'arrival-date'),
  };
}

/** The blank-line separated blocks of a report part, each read as header fields by mailparser. */
async function fieldBlocks(content: Buffer): Promise<HeaderFields[]> {
  const blocks = content
    .subarray(0, MAX_PART_BYTES)
    .toString('utf8')
    .split(/\r?\n(?:[ \t]*\r?\n)+/)
    .filter((b) => b.trim() !== '')
    .slice(0, MAX_BLOCKS);
  const parsed: HeaderFields[] = [];
  // One at a time: a block is tiny, and hundreds of parsers at once would only contend.
  for (const block of blocks) parsed.push(headerFields((await simpleParser(Buffer.from(`${block}\r\n\r\n`))).headerLines));
  return parsed;
}

const first = (fields: HeaderFields, name: string): string | null => {
  const value = fields[name]?.[0]?.trim();
  return value ? value.slice(0, MAX_VALUE) : null;
};

/** The value of a typed field ("rfc822; a@b", "dns; mx.example", "smtp; 550 ..."), without its type. */
function typed(value: string | null): string | null {
  if (value === null) return null;
  const semi = value.indexOf(';');
  return value.slice(semi + 1).trim() || null;
}

/** One bare address, lower case, or null when the value is not exactly one. */
function address(value: string | null): string | null {
  if (!value) return null;
  const parsed = addressparser(value);
  const only = parsed.length === 1 ? parsed[0].address : undefined;
  return only && /^[^@\s]+@[^@\s]+$/.test(only) ? only.toLowerCase() : null;
}
