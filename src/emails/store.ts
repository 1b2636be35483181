// Mail at rest, written: a received message for one inbox, or a send, with its row, bodies, attachments and
// its place on the full-text index's backlog (search-backlog.ts). Queries for the caller's transaction
// (db/query.ts; the writer's group commit), so an email is stored whole or not at all. It decides nothing:
// the flows classify, thread and queue.
import type { Clock } from '../clock.ts';
import { change, type Query } from '../db/query.ts';
import { newId } from '../db/ids.ts';
import type { Mailbox } from '../mail/addresses.ts';
import type { ParsedMessage } from '../mail/parse.ts';
import type { PackedMail } from '../mail/packing.ts';
import { addEvent } from './events.ts';
import { countedRow, recount, type CountedRow } from './counts.ts';
import type { Category, SentBy } from './rows.ts';
import { htmlText, nextSearchRowid, previewOf } from './search-index.ts';
import { queueIndexing } from './search-backlog.ts';
import { bodiesForStore, insertContents } from './contents-rowids.ts';
import type { TemplateOrigin } from '../templates/content.ts';

export interface ReceivedEmail {
  workspaceId: string;
  /** Null: the workspace's mailbox, no inbox of it (a delivery notice for a sender without one). */
  inboxId: string | null;
  inboxAddress: string;
  domainId: string | null;
  domain: string | null;
  parsed: ParsedMessage;
  /** The new text without quoted history and signature (mail/reply.ts extractReply); null when none. */
  extractedText?: string | null;
  /** The message as stored (our trace fields, then the bytes as received), packed with its bodies (mail/packing.ts). */
  stored: PackedMail;
  envelopeFrom: string;
  /** The authentication verdicts, stored as JSON. */
  authentication: unknown;
  verdict: { category: Category; important: boolean; classification: string };
  /** The spam filter's verdict (filter/combine.ts SpamRecord), stored as JSON for the record's `spam`. */
  spam?: unknown;
  threadId: string | null;
  /**
   * The box's own delivery notice (feedback/notices.ts): nothing arrived, so no `received` event (nor its
   * webhook, nor its count in analytics); the event that caused it (bounced, complained) is the one there is.
   */
  notice?: boolean;
}

/** Stores a received message for one inbox with its `received` event (not for a notice); returns its ids. */
export function* storeReceivedEmail(clock: Clock, m: ReceivedEmail): Query<{ id: string; threadId: string }> {
  const now = clock.now();
  const id = newId('em', now);
  const p = m.parsed;
  const from = p.fromAll[0] ?? { name: '', address: m.envelopeFrom || '' };
  const text = p.text ?? '';
  const searchRowid = yield* nextSearchRowid(now);
  const threadId = yield* insertReceived(clock, { id, now, searchRowid, from, text }, m);
  yield* queueIndexing(searchRowid, id, {
    workspaceId: m.workspaceId,
    subject: p.subject,
    body: text,
    from,
    recipients: [...p.to, ...p.cc],
    others: [...p.fromAll.slice(1), ...p.replyTo],
    attachments: p.attachments.map((a) => a.filename),
  });
  return { id, threadId };
}

/** The received email's row, bodies and attachments, its `received` event and its counts; its thread id. */
function* insertReceived(clock: Clock, e: { id: string; now: number; searchRowid: number; from: Mailbox; text: string }, m: ReceivedEmail): Query<string> {
  const { id, now, searchRowid, from, text } = e;
  const threadId = m.threadId ?? id;
  const p = m.parsed;
  yield* change(
    `INSERT INTO emails (id, workspace_id, direction, status, domain_id, domain, inbox_id, message_id, thread_id, in_reply_to, refs,
       from_address, from_name, to_json, cc_json, reply_to_json, subject, envelope_from, size,
       category, important, classification, authentication, preview, search_rowid, created_at, spam)
     VALUES (?, ?, 'in', 'received', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    id, m.workspaceId, m.domainId, m.domain, m.inboxId, p.messageId ?? `${id.slice(3).toLowerCase()}@received.invalid`, threadId, p.inReplyTo,
    JSON.stringify(p.references), from.address, from.name || null, JSON.stringify(p.to), JSON.stringify(p.cc), JSON.stringify(p.replyTo),
    p.subject, m.envelopeFrom, m.stored.size, m.verdict.category, m.verdict.important ? 1 : 0, m.verdict.classification,
    JSON.stringify(m.authentication), previewOf(text), searchRowid, now, m.spam === undefined ? null : JSON.stringify(m.spam),
  );
  yield* storeBodies(id, m.workspaceId, now, { text: m.stored.text, html: m.stored.html, raw: m.stored.raw, attachments: p.attachments, extractedText: m.extractedText ?? null }, false);
  if (!m.notice) yield* addEvent(clock, { workspaceId: m.workspaceId, emailId: id, type: 'received', recipient: m.inboxAddress, data: { from: from.address, size: m.stored.size } });
  // Counted as written (labels come later, by rule, and recount then): the row need not be read back.
  const written: CountedRow = { workspace_id: m.workspaceId, direction: 'in', category: m.verdict.category, read_at: null, archived_at: null, important: m.verdict.important ? 1 : 0, labels_json: '[]', trashed_at: null };
  yield* recount(null, written);
  return threadId;
}

export interface StoredAttachment {
  filename: string;
  contentType: string;
  contentId?: string;
  content: Buffer;
}

/** What a send stores of itself (send/request.ts's SendRequest has these fields). */
export interface OutgoingContent {
  from: Mailbox;
  to: Mailbox[];
  cc: Mailbox[];
  bcc: Mailbox[];
  replyTo: Mailbox[];
  subject: string;
  text?: string;
  html?: string;
  headers: Record<string, string>;
  attachments: StoredAttachment[];
  tags: Array<{ name: string; value: string }>;
  messageClass: 'transactional' | 'marketing';
  /** Set when the content was rendered from a hosted template. */
  origin?: TemplateOrigin;
  /** How the send came in (the front door says; the box's own mail has none). */
  sentBy?: SentBy;
  /** The API key it came in with (API or SMTP submission): a sending key reads back its own sends alone. */
  sentByKey?: string;
  /** Mail the box sends of its own (a forwarding confirmation): not the workspace's sending, so not counted. */
  notice?: boolean;
}

export interface SentEmail {
  id: string;
  workspaceId: string;
  threadId: string;
  domainId: string;
  domain: string;
  /** Without angle brackets. */
  messageId: string;
  inReplyTo: string | null;
  refs: string[];
  envelopeFrom: string;
  labelIds: string[];
  content: OutgoingContent;
}

/** Whether a send counts as the workspace's own sending (emails.counted): not a test send, nor the box's notice. */
export const countedSend = (c: Pick<OutgoingContent, 'origin' | 'notice'>) => !(c.origin?.test || c.notice);

/** Stores a send (status `sent`) with its bodies and attachments, on the full-text backlog; its queue rows are the send flow's. */
export function* storeSentEmail(clock: Clock, e: SentEmail): Query<void> {
  const now = clock.now();
  const c = e.content;
  // Its full-text rowid, taken in commit order (the list's newest-first key).
  const searchRowid = yield* nextSearchRowid(now);
  const text = c.text ?? (c.html !== undefined ? htmlText(c.html) : '');
  yield* insertSent(now, searchRowid, text, e);
  yield* queueIndexing(searchRowid, e.id, {
    workspaceId: e.workspaceId,
    subject: c.subject,
    body: text,
    from: c.from,
    recipients: [...c.to, ...c.cc, ...c.bcc],
    others: c.replyTo,
    attachments: c.attachments.map((a) => a.filename),
  });
}

/** The send's row, bodies and attachments, and its labels' counts. */
function* insertSent(now: number, searchRowid: number, text: string, e: SentEmail): Query<void> {
  const c = e.content;
  yield* change(
    `INSERT INTO emails (id, workspace_id, direction, status, domain_id, domain, message_id, thread_id, in_reply_to, refs,
       from_address, from_name, to_json, cc_json, bcc_json, reply_to_json, subject, headers_json,
       tags_json, labels_json, message_class, envelope_from, preview, search_rowid, created_at, template_id, template_version_id, is_test, counted, sent_by, sent_by_key)
     VALUES (?, ?, 'out', 'sent', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    e.id, e.workspaceId, e.domainId, e.domain, e.messageId, e.threadId, e.inReplyTo, JSON.stringify(e.refs),
    c.from.address, c.from.name ?? null, JSON.stringify(c.to), JSON.stringify(c.cc), JSON.stringify(c.bcc), JSON.stringify(c.replyTo),
    c.subject, JSON.stringify(c.headers), JSON.stringify(c.tags), JSON.stringify(e.labelIds),
    c.messageClass, e.envelopeFrom, previewOf(text), searchRowid, now,
    c.origin?.templateId ?? null, c.origin?.versionId ?? null, c.origin?.test ? 1 : 0, countedSend(c) ? 1 : 0, c.sentBy ?? null, c.sentByKey ?? null,
  );
  yield* storeBodies(e.id, e.workspaceId, now, { text: c.text ?? null, html: c.html ?? null, raw: null, attachments: c.attachments }, true);
  if (e.labelIds.length) yield* recount(null, (yield* countedRow(e.id))!);
}

/**
 * The bodies are written here once and never changed: a stored message's bytes are packed against them
 * (mail/packing.ts). Received mail's come packed; a send's are strings until the queue stores them packed with
 * its signed copy (emails/outgoing.ts), the same text in fewer bytes, so they wait apart (contents-rowids.ts).
 */
function* storeBodies(emailId: string, workspaceId: string, now: number, b: { text: string | Buffer | null; html: string | Buffer | null; raw: Buffer | null; attachments: StoredAttachment[]; extractedText?: string | null }, waiting: boolean): Query<void> {
  const { text, html } = yield* bodiesForStore({ text: b.text, html: b.html });
  yield* change(insertContents(waiting), emailId, text, html, b.raw, b.extractedText ?? null);
  for (const [i, a] of b.attachments.entries()) {
    yield* change(
      'INSERT INTO email_attachments (id, email_id, workspace_id, position, filename, content_type, content_id, size, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      newId('att', now), emailId, workspaceId, i, a.filename, a.contentType, a.contentId ?? null, a.content.length, a.content,
    );
  }
}
