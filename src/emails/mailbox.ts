// One email of the mailbox, sent or received: its SQL and its record (DESIGN.md "email record"), the owner's
// changes to it (read, archived, category, important, and what that teaches about the sender; moving it to the
// Trash and back), deleting it for good with every row that belongs to it, its raw bytes, its attachments and
// its thread. Queries (db/query.ts): the routes run the writes in a store.write. It must not call a flow (send/,
// receive/).
import type { Category, EmailContentsRow, EmailRow } from './rows.ts';
import { COUNTED_COLUMNS, countedRow, recount, type CountedRow } from './counts.ts';
import { all, get, run, value, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import { iso, isoOrNull } from '../clock.ts';
import { ApiError, validationError } from '../errors.ts';
import { labelsOf, labelsOfEach, type Label } from '../labels/labels.ts';
import { unpackBodies, unpackMessageAsync } from '../mail/packing.ts';
import { unindexEmail } from './search-index.ts';
import { dropFromBacklog } from './search-backlog.ts';
import { unpackCopy, withBase, type StoredCopy } from './outgoing.ts';
import { recipientsOf, summarize, type RecipientDelivery } from './delivery.ts';
import type { SpamRecord } from '../filter/combine.ts';
import { queueTraining } from '../filter/learning.ts';
import { noteKept, noteReported } from '../filter/history.ts';

type MailboxRow = Pick<
  EmailRow,
  | 'id' | 'direction' | 'status' | 'domain' | 'message_id' | 'thread_id' | 'in_reply_to' | 'from_address' | 'from_name' | 'to_json' | 'cc_json'
  | 'bcc_json' | 'reply_to_json' | 'subject' | 'tags_json' | 'message_class' | 'template_id' | 'template_version_id' | 'is_test' | 'scheduled_at' | 'created_at' | 'inbox_id' | 'category'
  | 'important' | 'classification' | 'read_at' | 'archived_at' | 'trashed_at' | 'authentication' | 'preview' | 'labels_json' | 'sent_by' | 'spam'
> &
  Pick<EmailContentsRow, 'text_body' | 'html_body' | 'extracted_text'>;

interface AttachmentRow {
  id: string;
  email_id: string;
  filename: string;
  content_type: string;
  content_id: string | null;
  size: number;
}

const EMAIL_COLUMNS = `e.id, e.direction, e.status, e.domain, e.message_id, e.thread_id, e.in_reply_to, e.from_address, e.from_name,
  e.to_json, e.cc_json, e.bcc_json, e.reply_to_json, e.subject, e.tags_json, e.message_class, e.template_id, e.template_version_id, e.is_test, e.scheduled_at, e.created_at,
  e.inbox_id, e.category, e.important, e.classification, e.read_at, e.archived_at, e.trashed_at, e.authentication, e.preview, e.labels_json, e.sent_by, e.spam, c.text_body, c.html_body, c.extracted_text`;

const ATTACHMENT_COLUMNS = 'a.id, a.email_id, a.filename, a.content_type, a.content_id, a.size';

const SNIPPET_CHARS = 200;

/**
 * The email with its attachments and, sent, where each recipient stands (delivery.ts), or null when the
 * workspace has no such email. `recipients: false` leaves those out (null) for readers that never show them.
 */
export function* getEmail(workspaceId: string, id: string, opts: { recipients?: boolean } = {}) {
  const found = yield* emailParts(workspaceId, id, opts);
  if (!found) return null;
  const { row, attachments, recipients } = found;
  return presentEmail(row, attachments, yield* labelsOf(workspaceId, row.labels_json), recipients);
}

/** What the email's record is made of but its labels: its row, attachments and, sent, its recipients. */
function* emailParts(workspaceId: string, id: string, opts: { recipients?: boolean }) {
  const row = yield* get<MailboxRow>(`SELECT ${EMAIL_COLUMNS} FROM emails e LEFT JOIN email_contents c ON c.email_id = e.id WHERE e.workspace_id = ? AND e.id = ?`, workspaceId, id);
  if (!row) return null;
  const attachments = yield* all<AttachmentRow>(`SELECT ${ATTACHMENT_COLUMNS} FROM email_attachments a WHERE a.email_id = ? ORDER BY a.position`, id);
  const recipients = row.direction === 'out' && opts.recipients !== false ? ((yield* recipientsOf([id])).get(id) ?? []) : null;
  return { row, attachments, recipients };
}

/**
 * The messages of a thread (sent and received), oldest first: those outside the Trash, or with `trashed` those
 * in it (DESIGN.md "trash"), so a conversation read from the Inbox never shows what was thrown away, and one
 * read from the Trash shows what is there. Null when the workspace has no message in that thread at all. Ids
 * are time-ordered (DESIGN.md), so id order is arrival order, and the thread index serves it.
 */
export function* getThread(workspaceId: string, threadId: string, trashed = false) {
  const found = yield* threadParts(workspaceId, threadId, trashed);
  if (!found) return null;
  const { rows, byEmail, recipients } = found;
  const labels = yield* labelsOfEach(workspaceId, rows.map((r) => r.labels_json));
  return rows.map((row, i) => presentEmail(row, byEmail.get(row.id) ?? [], labels[i]!, row.direction === 'out' ? (recipients.get(row.id) ?? []) : null));
}

/** The thread's messages and their attachments and recipients; null when the workspace has no such thread. */
function* threadParts(workspaceId: string, threadId: string, trashed: boolean) {
  const inTrash = trashed ? 'e.trashed_at IS NOT NULL' : 'e.trashed_at IS NULL';
  const rows = yield* all<MailboxRow>(
    `SELECT ${EMAIL_COLUMNS} FROM emails e LEFT JOIN email_contents c ON c.email_id = e.id WHERE e.workspace_id = ? AND e.thread_id = ? AND ${inTrash} ORDER BY e.id`,
    workspaceId,
    threadId,
  );
  const byEmail = new Map<string, AttachmentRow[]>();
  if (!rows.length) return (yield* get('SELECT 1 FROM emails WHERE workspace_id = ? AND thread_id = ? LIMIT 1', workspaceId, threadId)) ? { rows, byEmail, recipients: new Map<string, RecipientDelivery[]>() } : null;
  const attachments = yield* all<AttachmentRow>(
    `SELECT ${ATTACHMENT_COLUMNS} FROM email_attachments a JOIN emails e ON e.id = a.email_id WHERE e.workspace_id = ? AND e.thread_id = ? AND ${inTrash} ORDER BY a.email_id, a.position`,
    workspaceId,
    threadId,
  );
  for (const a of attachments) byEmail.set(a.email_id, [...(byEmail.get(a.email_id) ?? []), a]);
  const recipients = yield* recipientsOf(rows.filter((r) => r.direction === 'out').map((r) => r.id));
  return { rows, byEmail, recipients };
}

/** `recipients`: sent mail's, null for received mail (or when not read). */
function presentEmail(row: MailboxRow, attachments: AttachmentRow[], labels: Label[], recipients: RecipientDelivery[] | null) {
  const body = unpackBodies({ text: row.text_body, html: row.html_body });
  return {
    id: row.id,
    providerMessageId: `<${row.message_id}>`,
    threadId: row.thread_id,
    direction: row.direction,
    status: row.status,
    scheduledAt: row.scheduled_at === null ? null : iso(row.scheduled_at),
    from: { name: row.from_name || null, address: row.from_address },
    to: mailboxes(row.to_json),
    cc: mailboxes(row.cc_json),
    bcc: mailboxes(row.bcc_json),
    replyTo: mailboxes(row.reply_to_json),
    subject: row.subject,
    text: body.text,
    html: body.html,
    snippet: row.preview ?? snippet(body.text ?? ''),
    // Received mail: the new text without quoted history and signature (mail/reply.ts); null for sent mail and
    // for mail received before the box worked it out.
    extractedText: row.direction === 'in' ? row.extracted_text : null,
    createdAt: iso(row.created_at),
    messageId: row.message_id,
    inReplyTo: row.in_reply_to,
    inboxId: row.inbox_id,
    domain: row.domain,
    messageClass: row.message_class,
    tags: JSON.parse(row.tags_json) as Array<{ name: string; value: string }>,
    templateId: row.template_id,
    templateVersionId: row.template_version_id,
    isTest: row.is_test === 1,
    readAt: isoOrNull(row.read_at),
    archivedAt: isoOrNull(row.archived_at),
    trashedAt: isoOrNull(row.trashed_at),
    category: row.category,
    important: row.important === 1,
    classification: row.classification,
    labels,
    authentication: row.authentication ? (JSON.parse(row.authentication) as Record<string, unknown>) : null,
    // The spam filter's verdict as the message was filed: {score, threshold, signals}; null for sent mail.
    spam: row.direction === 'in' && row.spam ? (JSON.parse(row.spam) as SpamRecord) : null,
    // `available` as a draft's file has it (API-SPEC.md 2): GET /attachments/:id serves the bytes. An email's files
    // are kept as long as the email (retention drops raw messages early, never files), so it is always true here.
    attachments: attachments.map((a) => ({ id: a.id, filename: a.filename, contentType: a.content_type, contentId: a.content_id, sizeBytes: a.size, available: true })),
    sentBy: row.sent_by,
    delivery: recipients && summarize(recipients),
    recipients,
  };
}

export type EmailRecord = ReturnType<typeof presentEmail>;

const mailboxes = (json: string) => (JSON.parse(json) as Array<{ name?: string; address: string }>).map((m) => ({ name: m.name || null, address: m.address }));

const snippet = (text: string) => text.slice(0, SNIPPET_CHARS * 8).replace(/\s+/g, ' ').trim().slice(0, SNIPPET_CHARS);

/**
 * The stored RFC 5322 bytes: received mail as received (with our trace fields), sent mail as signed. Mail that
 * went out as one copy per recipient (its links name the recipient) has no single message: `perRecipient` says
 * so, and `recipient` picks that recipient's copy. Read in one go, then unpacked (mail/packing.ts) byte for byte
 * as stored, a large message off the event loop.
 */
export async function emailRaw(store: Pick<Store, 'read'>, workspaceId: string, id: string, recipient?: string): Promise<{ raw: Buffer | null; perRecipient: boolean; expired: boolean } | null> {
  const found = await store.read(storedRaw(workspaceId, id, recipient));
  if (!found) return null;
  const { row, copy } = found;
  const bodies = { text: row.text_body, html: row.html_body };
  // Received mail always has its bytes, and sent mail once signed: missing then, retention dropped them.
  const expired = row.raw === null && (row.direction === 'in' || (row.signed_at !== null && !row.per_recipient));
  if (!row.per_recipient) return { raw: row.raw && (await unpackMessageAsync(row.raw, bodies)), perRecipient: false, expired };
  return { raw: copy ? await unpackCopy(copy) : null, perRecipient: true, expired: false };
}

/** The email's stored bytes and bodies, and the copy of `recipient` when it went out as one per recipient. */
function* storedRaw(workspaceId: string, id: string, recipient: string | undefined) {
  const row = yield* get<Pick<EmailContentsRow, 'raw' | 'text_body' | 'html_body'> & { direction: string; signed_at: number | null; per_recipient: number }>(
    `SELECT c.raw, c.text_body, c.html_body, e.direction, e.signed_at, EXISTS (SELECT 1 FROM personalised_emails p WHERE p.email_id = e.id) AS per_recipient
       FROM emails e LEFT JOIN email_contents c ON c.email_id = e.id WHERE e.workspace_id = ? AND e.id = ?`,
    workspaceId,
    id,
  );
  if (!row) return null;
  const copy =
    !row.per_recipient || recipient === undefined
      ? undefined
      : yield* value<Buffer>('SELECT dc.raw FROM deliveries d JOIN delivery_contents dc ON dc.delivery_id = d.id WHERE d.email_id = ? AND lower(d.recipient) = lower(?)', id, recipient);
  return { row, copy: copy ? yield* withBase(copy, { text: row.text_body, html: row.html_body }) : (null as StoredCopy | null) };
}

/** An attachment of one of the workspace's emails, with its bytes. */
export function* getAttachment(workspaceId: string, id: string) {
  return (yield* get<{ id: string; filename: string; content_type: string; content: Buffer }>('SELECT id, filename, content_type, content FROM email_attachments WHERE workspace_id = ? AND id = ?', workspaceId, id)) ?? null;
}

export interface EmailPatch {
  read?: boolean;
  archived?: boolean;
  category?: Category;
  important?: boolean;
  /** true: into the Trash (hidden from every list and count, deleted for good after trash_days); false: back out. */
  trashed?: boolean;
  /** false: change this message only; otherwise a category or importance is also learned for the sender. */
  learn?: boolean;
}

interface FlagsRow {
  id: string;
  status: string;
  direction: 'in' | 'out';
  from_address: string;
  category: Category | null;
  important: number;
  classification: string | null;
  read_at: number | null;
  archived_at: number | null;
  trashed_at: number | null;
}

/**
 * API-SPEC.md 4.2 PATCH rules. `read` / `archived` set the time once (true again keeps the first time) or
 * clear it. `category` is for received mail only. Spam is never important: moving to spam clears it, and
 * asking for both is a 400. A given `category` or `important` on received mail is also written to the
 * sender's row of sender_rules (address in lower case, the other column kept), which classification reads
 * for every later message from that address, unless `learn` is false; a message with no sender address
 * changes alone. `classification` is rewritten to say what the owner did. Null: no such email.
 */
export function* patchEmail(now: number, workspaceId: string, id: string, patch: EmailPatch) {
  const changed = yield* changeFlags(now, workspaceId, id, patch);
  if (!changed) return null;
  const { row, category } = changed;
  if (row.direction === 'in') yield* teachFilter(now, workspaceId, row, patch, category!);
  return changed.answer;
}

/** patchEmail's change to the email, the sender's rule and the counts: the email before it, and the answer. */
function* changeFlags(now: number, workspaceId: string, id: string, patch: EmailPatch) {
  const row = yield* get<FlagsRow & CountedRow>(`SELECT id, status, from_address, classification, ${COUNTED_COLUMNS} FROM emails WHERE workspace_id = ? AND id = ?`, workspaceId, id);
  if (!row) return null;
  // The Trash hides mail; it does not stop a send. A send waiting for its time is canceled first, on purpose.
  if (patch.trashed === true && row.status === 'scheduled' && row.trashed_at === null) {
    throw new ApiError(409, 'email_scheduled', 'This email is scheduled to be sent: cancel the send first (POST /emails/:id/cancel), then move it to the Trash');
  }
  if (patch.category !== undefined && row.direction !== 'in') throw validationError('category', 'applies to received mail only; this email was sent');
  const category = patch.category ?? row.category;
  if (patch.important === true && category === 'spam') throw validationError('important', 'a message in spam cannot be important: move it out of spam with category');
  const important = category === 'spam' ? false : (patch.important ?? row.important === 1);

  const sender = row.from_address.trim().toLowerCase();
  const learned = patch.learn !== false && row.direction === 'in' && sender !== '';
  if (learned && (patch.category !== undefined || patch.important !== undefined)) {
    yield* run(
      `INSERT INTO sender_rules (workspace_id, address, category, important, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, address) DO UPDATE SET category = coalesce(excluded.category, sender_rules.category),
         important = coalesce(excluded.important, sender_rules.important), updated_at = excluded.updated_at`,
      workspaceId, sender, patch.category ?? null, patch.important === undefined ? null : patch.important ? 1 : 0, now,
    );
  }

  const readAt = patch.read === undefined ? row.read_at : patch.read ? (row.read_at ?? now) : null;
  const archivedAt = patch.archived === undefined ? row.archived_at : patch.archived ? (row.archived_at ?? now) : null;
  const trashedAt = patch.trashed === undefined ? row.trashed_at : patch.trashed ? (row.trashed_at ?? now) : null;
  const classification = row.direction === 'in' ? explain(row, patch, learned, category!) : row.classification;
  yield* run(
    'UPDATE emails SET read_at = ?, archived_at = ?, trashed_at = ?, category = ?, important = ?, classification = ? WHERE id = ?',
    readAt, archivedAt, trashedAt, category, important ? 1 : 0, classification, id,
  );
  yield* recount(row, { ...row, read_at: readAt, archived_at: archivedAt, trashed_at: trashedAt, category, important: important ? 1 : 0 });
  return { row, category, answer: { id, readAt: isoOrNull(readAt), archivedAt: isoOrNull(archivedAt), trashedAt: isoOrNull(trashedAt), category, important, classification } };
}

/**
 * What an owner's change teaches the spam filter (DESIGN.md "spam verdict"), whatever `learn` says: a category
 * the owner sets is learned, spam as spam and primary or updates as not spam (Report spam, Not spam, a move),
 * queued for the model in this transaction (filter/learning.ts). Reading a message outside Spam, or moving it
 * out, keeps its sender; a report undoes that (filter/history.ts).
 */
function* teachFilter(now: number, workspaceId: string, row: FlagsRow, patch: EmailPatch, category: Category): Query<void> {
  if (patch.category !== undefined) yield* queueTraining({ workspaceId, emailId: row.id, class: patch.category === 'spam' ? 'spam' : 'ham', source: 'owner', now });
  if (!row.from_address) return;
  if (patch.category === 'spam') yield* noteReported(workspaceId, row.from_address, now);
  else if ((patch.category !== undefined && row.category === 'spam') || (patch.read === true && row.read_at === null && category !== 'spam')) yield* noteKept(workspaceId, row.from_address, now);
}

// The importance part that classification (receive/classify.ts) or an earlier PATCH appended: "<reason>; <why>".
const WHY = /; (you marked this (?:sender|message) as (?:not )?important|important because [^;]*)$/;

/** The reason for the category after the change, and why it is (not) important when that was decided. */
function explain(row: FlagsRow, patch: EmailPatch, learned: boolean, category: Category): string {
  const old = row.classification ?? '';
  const oldWhy = WHY.exec(old)?.[1] ?? null;
  const reason = patch.category !== undefined ? categoryReason(patch.category, learned, row.category) : oldWhy ? old.slice(0, -oldWhy.length - 2) : old;
  if (category === 'spam') return reason;
  const why = patch.important !== undefined ? `you marked this ${learned ? 'sender' : 'message'} as ${patch.important ? '' : 'not '}important` : oldWhy;
  return why ? `${reason}; ${why}` : reason;
}

// The learned wording matches what classification says of the sender's next message.
function categoryReason(category: Category, learned: boolean, previous: Category | null): string {
  const who = learned ? 'sender' : 'message';
  if (category === 'spam') return learned ? 'You marked this sender as spam' : 'You moved this message to Spam';
  if (previous === 'spam') return category === 'primary' ? `You marked this ${who} as not spam` : `You marked this ${who} as not spam and moved it to Updates`;
  return `You moved this ${who} to ${category === 'primary' ? 'Primary' : 'Updates'}`;
}

/**
 * Deletes the email for good (DELETE /emails/:id, emptying the Trash, retention) and everything that belongs to it: its full-text row (or its place on the index's
 * backlog) here, and by foreign-key cascade its bodies and raw bytes, attachments, events, queue rows and
 * bounce reports. Deliveries of sent mail that are still queued or deferred are cancelled with it; while one
 * is being attempted the delete is refused (409), since the attempt would then record its outcome for an
 * email that no longer exists.
 * False: no such email.
 */
export function* deleteEmail(workspaceId: string, id: string): Query<boolean> {
  const row = yield* deletable(workspaceId, id);
  if (!row) return false;
  if (row.search_rowid !== null) {
    yield* unindexEmail(row.search_rowid);
    yield* dropFromBacklog(row.search_rowid);
  }
  yield* deleteRows(id);
  return true;
}

/** The email to delete, or null when there is none; 409 while one of its deliveries is being attempted. */
function* deletable(workspaceId: string, id: string) {
  const row = yield* get<{ id: string; search_rowid: number | null }>('SELECT id, search_rowid FROM emails WHERE workspace_id = ? AND id = ?', workspaceId, id);
  if (!row) return null;
  if (yield* get("SELECT 1 FROM deliveries WHERE email_id = ? AND state = 'sending' LIMIT 1", id)) {
    throw new ApiError(409, 'delivery_in_progress', 'This email is being delivered right now; delete it again in a moment');
  }
  return row;
}

function* deleteRows(id: string): Query<void> {
  // Unsubscribe links in copies already delivered keep working (0012_unsubscribe_after_delete.sql). The
  // position is the recipient's among the email's deliveries, as its token says (feedback/link-token.ts).
  yield* run(
    `INSERT INTO unsubscribe_links (email_id, position, workspace_id, recipient, domain)
     SELECT d.email_id, row_number() OVER (ORDER BY d.id) - 1, e.workspace_id, d.recipient, e.domain
     FROM deliveries d JOIN emails e ON e.id = d.email_id
     WHERE d.email_id = ? AND EXISTS (SELECT 1 FROM personalised_emails p WHERE p.email_id = d.email_id AND p.unsubscribe = 1)
     ON CONFLICT DO NOTHING`,
    id,
  );
  yield* recount((yield* countedRow(id)) ?? null, null);
  yield* run('DELETE FROM emails WHERE id = ?', id);
}
