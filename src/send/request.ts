// The send request (POST /emails and each batch item) validated once, at the edge, into a typed value:
// every error names its field, and no value that would become a header may carry CR, LF or NUL (a 400,
// never an injected header). What compose would refuse later (a Message-ID, a media type) is refused here.
// Limits of API-SPEC.md section 8 use DESIGN.md's codes; the box's own caps are validation errors.
import contentType from 'content-type';
import { z } from 'zod';
import { ApiError, validationError, type FieldError } from '../errors.ts';
import { parseMailbox } from '../mail/addresses.ts';
import { msgIdProblem } from '../mail/compose.ts';
import { labelRef, MAX_LABELS_PER_EMAIL } from '../labels/labels.ts';
import type { OutgoingContent, StoredAttachment } from '../emails/store.ts';

export type Attachment = StoredAttachment;

/** A send: what the email stores of itself (emails/store.ts), and how the send path files and addresses it. */
export interface SendRequest extends OutgoingContent {
  labels: string[];
  /** An em_ id of this workspace or a Message-ID (with or without angle brackets; the API edge strips them). */
  inReplyTo?: string;
  /**
   * Who gets the message, when that is not to + cc + bcc: SMTP submission delivers to exactly the RCPT TO
   * addresses, whatever the headers say. The HTTP API never sets it.
   */
  envelopeTo?: string[];
  /** A send by hosted template: send/submit renders its active release into subject, html and text. */
  template?: TemplateUse;
  /** When to release it to the queue (ms); absent or past: now. */
  scheduledAt?: number;
}

// DESIGN.md: ISO 8601 with an offset, so the caller's "9:00" is never read in the box's time zone.
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;
export const scheduledAt = z
  .string()
  .max(40)
  .refine((s) => ISO_WITH_OFFSET.test(s) && !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 time with an offset, such as 2026-11-25T09:30:00Z or 2026-11-25T10:30:00+01:00')
  .transform((s) => Date.parse(s));

export interface TemplateUse {
  /** A tmpl_ id or a template key. */
  ref: string;
  /** Own keys only (a null-prototype object), so `constructor` or `toString` are variable names like any other. */
  data: Record<string, unknown>;
  /** Where the caller gave the data (`template.data` or Resend's `template.variables`): what a field error names. */
  dataPath?: string;
  /** The caller's message_class; the template's own when absent. */
  messageClass?: 'transactional' | 'marketing';
  /** The caller's subject, in place of the template's. */
  subject?: string;
}

/** A JSON object of template data as a null-prototype copy; a validation error naming `path` otherwise. */
export function templateData(value: unknown, path: string): Record<string, unknown> {
  if (value === undefined || value === null) return Object.create(null) as Record<string, unknown>;
  if (typeof value !== 'object' || Array.isArray(value)) throw validationError(path, 'must be an object of variable values');
  const keys = Object.keys(value);
  if (keys.length > MAX_TEMPLATE_DATA_KEYS) throw validationError(path, `at most ${MAX_TEMPLATE_DATA_KEYS} values`);
  const data = Object.create(null) as Record<string, unknown>;
  for (const key of keys) data[key] = (value as Record<string, unknown>)[key];
  return data;
}

const MAX_TEMPLATE_DATA_KEYS = 1000;

export const MAX_RECIPIENTS_PER_FIELD = 50;
export const MAX_ATTACHMENTS = 10;
export const MAX_ATTACHMENT_BYTES = 10 * 1000 * 1000;
export const MAX_CUSTOM_HEADERS = 100;

// Set by the box or derived from other fields; a caller may not supply them as custom headers.
export const RESERVED_HEADERS = new Set([
  'from', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'reply-to', 'in-reply-to', 'references', 'sender',
  'mime-version', 'content-type', 'content-transfer-encoding', 'content-disposition', 'content-id',
  'dkim-signature', 'arc-seal', 'arc-message-signature', 'arc-authentication-results', 'authentication-results',
  'received', 'return-path', 'delivered-to', 'x-mailer',
]);
export const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,76}$/;
export const NO_CONTROL = /^[^\u0000-\u0008\u000a-\u001f\u007f]*$/; // tab is allowed in header values, CR/LF/NUL never
const headerSafe = (max: number) => z.string().max(max).regex(NO_CONTROL, 'must not contain CR, LF, NUL or other control characters');

const mailbox = z.string({ error: 'must be an address, as a@example.com or Name <a@example.com>' }).transform((s, ctx) => {
  const parsed = parseMailbox(s);
  if (parsed.ok) return parsed.mailbox;
  ctx.addIssue({ code: 'custom', message: parsed.reason });
  return z.NEVER;
});
// One address or an array of them; each failure names its place (`to.1`), a lone string its field (`to`).
const mailboxes = z
  .union([z.string(), z.array(z.string())], { error: 'must be an address or an array of addresses' })
  .transform((value, ctx) => {
    const list = typeof value === 'string' ? [value] : value;
    const parsed = list.map((s, i) => {
      const one = parseMailbox(s);
      if (!one.ok) ctx.addIssue({ code: 'custom', message: one.reason, path: typeof value === 'string' ? [] : [i] });
      return one;
    });
    return parsed.every((p) => p.ok) ? parsed.map((p) => p.mailbox) : z.NEVER;
  });
const tagPart = z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, 'must be 1 to 256 ASCII letters, digits, underscores or dashes');

// RFC 7231 3.1.1.1 media type with parameters, written back in one canonical form (type and parameter names
// in lower case, values quoted only where they must be); nodemailer adds name= from the file name.
const mediaType = z.string().max(255, 'is longer than 255 characters').transform((s, ctx) => {
  const refuse = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  if (!/^[\x20-\x7e]*$/.test(s)) return refuse('must be printable ASCII, without CR, LF or other control characters');
  let parsed: { type: string; parameters: Record<string, string> };
  try {
    parsed = contentType.parse(s);
  } catch {
    return refuse('must be a media type such as application/pdf or text/plain; charset=utf-8 (parameters as name=value or name="quoted value")');
  }
  // Each ; outside a quoted string starts one parameter: fewer names than that means one was given twice.
  const separators = s.replace(/"(?:[^"\\]|\\.)*"/g, '').split(';').length - 1;
  if (Object.keys(parsed.parameters).length !== separators) return refuse('names a parameter twice');
  // A multipart type would make the file's bytes a MIME structure of the caller's making.
  if (parsed.type.startsWith('multipart/')) return refuse('must be the type of a file, not multipart/*');
  return contentType.format(parsed);
});

// in_reply_to: an em_ id or one Message-ID, bare or in one pair of angle brackets, that compose will take.
const inReplyTo = headerSafe(998).transform((s, ctx) => {
  const id = /^<(.*)>$/s.exec(s)?.[1] ?? s;
  const problem = msgIdProblem(id);
  if (!problem) return id;
  ctx.addIssue({ code: 'custom', message: `give an em_ id of this workspace or one Message-ID (<id@example.com> or id@example.com); this one ${problem}` });
  return z.NEVER;
});

const Body = z
  .object({
    from: mailbox,
    to: mailboxes.refine((l) => l.length > 0, 'needs at least one recipient'),
    cc: mailboxes.optional(),
    bcc: mailboxes.optional(),
    reply_to: mailboxes.optional(),
    subject: headerSafe(998).optional(),
    text: z.string().optional(),
    html: z.string().optional(),
    headers: z.record(z.string().regex(HEADER_NAME, 'must be a header name (letters, digits and -)'), headerSafe(2000)).optional(),
    attachments: z
      .array(
        z
          .object({
            filename: headerSafe(255).min(1).regex(/^[^/\\]*$/, 'must be a file name, without / or \\'),
            content: z.string().regex(/^[A-Za-z0-9+/\s]*={0,2}\s*$/, 'must be base64'),
            content_type: mediaType.optional(),
            content_id: headerSafe(255).regex(/^[^<>\s]+$/, 'must be a plain content id, without <> or spaces').optional(),
          })
          .strict(),
      )
      .optional(),
    tags: z.array(z.object({ name: tagPart, value: tagPart }).strict()).max(50).optional(),
    labels: z.array(labelRef).optional(),
    message_class: z.enum(['transactional', 'marketing']).optional(),
    // `{id or key, data}`, or Resend's `{id, variables}` (its SDK's shape): `variables` is the data by another name.
    template: z
      .object(
        { id: z.string().trim().min(1).max(200).optional(), key: z.string().trim().min(1).max(200).optional(), data: z.unknown().optional(), variables: z.unknown().optional() },
        { error: 'must be {id or key, data} or {id, variables}' },
      )
      .strict()
      .refine((t) => (t.id === undefined) !== (t.key === undefined), 'give the template\'s id or its key, not both')
      .refine((t) => t.data === undefined || t.variables === undefined, 'give data or variables (the same thing, as Resend names it), not both')
      .optional(),
    in_reply_to: inReplyTo.optional(),
    scheduled_at: scheduledAt.optional(),
  })
  .strict();

/**
 * A composer draft's fields: a send body without files (a draft's are uploaded) or a time (given when it is
 * sent), every field optional and `to` possibly empty, so a composer can save as the user types; each value
 * is held to the rules of a send, so nothing a draft holds could inject a header when it is sent.
 */
export const DraftFields = Body.omit({ attachments: true, scheduled_at: true }).extend({ to: mailboxes.optional() }).partial();

/** A media type in canonical form, or the reason it is not one. */
export function canonicalMediaType(value: string): { ok: true; type: string } | { ok: false; reason: string } {
  const parsed = mediaType.safeParse(value);
  return parsed.success ? { ok: true, type: parsed.data } : { ok: false, reason: parsed.error.issues[0].message };
}

const fail = (errors: FieldError[], code = 'validation_error', status = 400): never => {
  throw new ApiError(status, code, `${errors[0].path}: ${errors[0].message}`, { errors });
};

/** Validates one send body; throws ApiError (400 naming the field, 400 limit_exceeded, 413) otherwise. */
export function parseSendRequest(input: unknown): SendRequest {
  const result = Body.safeParse(input ?? {});
  if (!result.success) {
    fail(result.error.issues.map((i) => ({ path: i.path.length ? i.path.map(String).join('.') : 'body', message: i.message })));
  }
  const b = result.data!;
  let template: TemplateUse | undefined;
  if (b.template) {
    for (const field of ['html', 'text'] as const) if (b[field] !== undefined) fail([{ path: field, message: 'comes from the template; leave it out or send without one' }]);
    const given = (input as { template: { data?: unknown; variables?: unknown } }).template;
    const dataField = given.variables !== undefined ? 'variables' : 'data';
    const data = templateData(given[dataField], `template.${dataField}`);
    template = {
      ref: (b.template.id ?? b.template.key)!,
      data,
      dataPath: `template.${dataField}`,
      ...(b.message_class ? { messageClass: b.message_class } : {}),
      ...(b.subject !== undefined ? { subject: b.subject } : {}),
    };
  } else {
    if (b.subject === undefined) fail([{ path: 'subject', message: 'is required (or send with a template)' }]);
    if (b.text === undefined && b.html === undefined) fail([{ path: 'html', message: 'give html, text or both' }]);
  }
  for (const field of ['to', 'cc', 'bcc'] as const) {
    if ((b[field]?.length ?? 0) > MAX_RECIPIENTS_PER_FIELD) fail([{ path: field, message: `at most ${MAX_RECIPIENTS_PER_FIELD} addresses` }]);
  }
  // A JSON "__proto__" key would vanish from the parsed record instead of being judged: name it here.
  const rawHeaders = (input as { headers?: unknown } | null | undefined)?.headers;
  if (rawHeaders && typeof rawHeaders === 'object' && Object.hasOwn(rawHeaders, '__proto__')) fail([{ path: 'headers.__proto__', message: 'is not a header name' }]);
  const headerCount = Object.keys(b.headers ?? {}).length;
  if (headerCount > MAX_CUSTOM_HEADERS) fail([{ path: 'headers', message: `at most ${MAX_CUSTOM_HEADERS} custom headers, got ${headerCount}` }]);
  for (const name of Object.keys(b.headers ?? {})) {
    if (RESERVED_HEADERS.has(name.toLowerCase())) fail([{ path: `headers.${name}`, message: 'is set by the box; use the matching field instead' }]);
  }
  if ((b.attachments?.length ?? 0) > MAX_ATTACHMENTS) fail([{ path: 'attachments', message: `at most ${MAX_ATTACHMENTS} files per message` }], 'limit_exceeded');
  if ((b.labels?.length ?? 0) > MAX_LABELS_PER_EMAIL) fail([{ path: 'labels', message: `at most ${MAX_LABELS_PER_EMAIL} labels per email` }], 'limit_exceeded');
  const attachments = (b.attachments ?? []).map((a) => ({
    filename: a.filename,
    content: Buffer.from(a.content.replace(/\s+/g, ''), 'base64'),
    contentType: a.content_type ?? 'application/octet-stream',
    ...(a.content_id ? { contentId: a.content_id } : {}),
  }));
  const total = attachments.reduce((n, a) => n + a.content.length, 0);
  if (total > MAX_ATTACHMENT_BYTES) fail([{ path: 'attachments', message: `total size ${total} bytes exceeds ${MAX_ATTACHMENT_BYTES}` }], 'payload_too_large', 413);
  return {
    from: b.from,
    to: b.to,
    cc: b.cc ?? [],
    bcc: b.bcc ?? [],
    replyTo: b.reply_to ?? [],
    subject: b.subject ?? '',
    ...(b.text !== undefined ? { text: b.text } : {}),
    ...(b.html !== undefined ? { html: b.html } : {}),
    headers: b.headers ?? {},
    attachments,
    tags: b.tags ?? [],
    labels: [...new Set(b.labels ?? [])],
    messageClass: b.message_class ?? 'transactional',
    ...(b.in_reply_to ? { inReplyTo: b.in_reply_to } : {}),
    ...(template ? { template } : {}),
    ...(b.scheduled_at !== undefined ? { scheduledAt: b.scheduled_at } : {}),
  };
}

/** POST /emails/:id/reply and /forward (send/reply.ts): the caller's part; the box fills in from, subject and the quote. */
export interface AnswerFields {
  replyAll: boolean;
  /** Checked as a send's fields are; `from` and `subject` in it are placeholders, `to` one too on a reply. */
  req: SendRequest;
  /** The caller gave no text and no html (a forward without a note). */
  noNote: boolean;
  /** Save the answer as a draft for a person to review and send, instead of sending it. */
  draft: boolean;
}

const ANSWER_FIELDS = { cc: true, bcc: true, text: true, html: true, attachments: true, tags: true, labels: true, headers: true, scheduled_at: true } as const;
const ReplyBody = Body.pick(ANSWER_FIELDS).extend({ reply_all: z.boolean().optional(), draft: z.boolean().optional() }).strict();
const ForwardBody = Body.pick({ ...ANSWER_FIELDS, to: true }).extend({ draft: z.boolean().optional() }).strict();
const PLACEHOLDER = 'placeholder@example.com';

/** Validates a reply's or a forward's body; throws ApiError (400 naming the field, 400 limit_exceeded, 413) otherwise. */
export function parseAnswerRequest(input: unknown, kind: 'reply' | 'forward'): AnswerFields {
  const body = (input ?? {}) as Record<string, unknown>;
  // A forward kept as a draft may leave its recipients to the person who sends it.
  const unaddressed = kind === 'forward' && typeof body === 'object' && body.draft === true && body.to === undefined;
  const result = (kind === 'reply' ? ReplyBody : ForwardBody).safeParse(unaddressed ? { ...body, to: PLACEHOLDER } : body);
  if (!result.success) fail(result.error.issues.map((i) => ({ path: i.path.length ? i.path.map(String).join('.') : 'body', message: i.message })));
  const { reply_all, draft, ...given } = body;
  const noNote = given.text === undefined && given.html === undefined;
  if (kind === 'reply' && noNote) fail([{ path: 'text', message: 'give text, html or both: what the reply says above the quoted message' }]);
  if (draft === true && given.attachments !== undefined) fail([{ path: 'attachments', message: 'a draft takes its files by upload (POST /drafts/:id/attachments), not in the reply' }]);
  if (draft === true && given.scheduled_at !== undefined) fail([{ path: 'scheduled_at', message: 'a draft is given its time when it is sent (POST /drafts/:id/send)' }]);
  // The send's own checks (files, headers, labels and their limits), each failure naming the caller's field.
  const req = parseSendRequest({ ...given, from: PLACEHOLDER, ...(kind === 'reply' || unaddressed ? { to: PLACEHOLDER } : {}), subject: '', ...(noNote ? { text: '' } : {}) });
  return { replyAll: reply_all === true, req: unaddressed ? { ...req, to: [] } : req, noNote, draft: draft === true };
}
