// Mail at rest, read back for composing and delivery: a sent email's row and stored signed copy, its bodies and
// attachments as a ComposeInput, and the signed copy stored once. Synchronous SQL on the emails tables only;
// it decides nothing about queueing or personal copies (send/ does) and imports nothing from send/.
import type { Db } from '../db/open.ts';
import type { Mailbox } from '../mail/addresses.ts';
import type { ComposeInput } from '../mail/compose.ts';
import type { EmailContentsRow, EmailRow } from './rows.ts';

/**
 * A sent email as composing reads it, with its signed copy once stored. storeSentEmail always writes a sent
 * email's sending domain and envelope sender, so those two are never null here.
 */
export type OutgoingEmail = Pick<
  EmailRow,
  | 'id' | 'workspace_id' | 'domain_id' | 'domain' | 'message_id' | 'in_reply_to' | 'refs' | 'from_address' | 'from_name'
  | 'to_json' | 'cc_json' | 'reply_to_json' | 'subject' | 'headers_json' | 'message_class' | 'created_at'
> &
  Pick<EmailContentsRow, 'raw'> & { domain: string; envelope_from: string };

/** The email and its signed copy (null until one is stored); not its bodies: composeInput reads those. */
export function outgoingEmail(db: Db, emailId: string): OutgoingEmail {
  return db
    .prepare(
      `SELECT e.id, e.workspace_id, e.domain_id, e.domain, e.message_id, e.in_reply_to, e.refs, e.from_address, e.from_name,
         e.to_json, e.cc_json, e.reply_to_json, e.subject, e.headers_json, e.message_class, e.envelope_from, e.created_at, c.raw
       FROM emails e JOIN email_contents c ON c.email_id = e.id WHERE e.id = ?`,
    )
    .get(emailId) as OutgoingEmail;
}

export function htmlBody(db: Db, emailId: string): string | null {
  return db.prepare('SELECT html_body FROM email_contents WHERE email_id = ?').pluck().get(emailId) as string | null;
}

/** The email's signed copy for all its recipients, once stored. */
export function signedCopy(db: Db, emailId: string): Buffer | null {
  return db.prepare('SELECT raw FROM email_contents WHERE email_id = ?').pluck().get(emailId) as Buffer | null;
}

export function hasSignedCopy(db: Db, emailId: string): boolean {
  return db.prepare('SELECT 1 FROM email_contents WHERE email_id = ? AND raw IS NOT NULL').get(emailId) !== undefined;
}

/**
 * Stores the signed copy all recipients get, with its size and when it was signed; false (nothing written) when
 * a copy is already stored: the first one stands. For the caller's transaction.
 */
export function storeSignedCopy(db: Db, emailId: string, raw: Buffer, now: number): boolean {
  if (!db.prepare('UPDATE email_contents SET raw = ? WHERE email_id = ? AND raw IS NULL').run(raw, emailId).changes) return false;
  db.prepare('UPDATE emails SET size = ?, signed_at = ? WHERE id = ?').run(raw.length, now, emailId);
  return true;
}

/** An email sent as one copy per recipient: its size and signing time are those of the first copy signed. */
export function noteFirstCopySigned(db: Db, emailId: string, size: number, now: number): void {
  db.prepare('UPDATE emails SET size = ?, signed_at = ? WHERE id = ? AND signed_at IS NULL').run(size, now, emailId);
}

const mailboxes = (json: string) => JSON.parse(json) as Mailbox[];

/** What the composer makes the message from: the row's headers, the stored bodies and attachments in order. */
export function composeInput(db: Db, row: OutgoingEmail): ComposeInput {
  const body = db.prepare('SELECT text_body, html_body FROM email_contents WHERE email_id = ?').get(row.id) as Pick<EmailContentsRow, 'text_body' | 'html_body'>;
  const attachments = db
    .prepare('SELECT filename, content_type, content_id, content FROM email_attachments WHERE email_id = ? ORDER BY position')
    .all(row.id) as Array<{ filename: string; content_type: string; content_id: string | null; content: Buffer }>;
  return {
    messageId: row.message_id,
    date: row.created_at,
    from: { ...(row.from_name ? { name: row.from_name } : {}), address: row.from_address },
    to: mailboxes(row.to_json),
    cc: mailboxes(row.cc_json),
    replyTo: mailboxes(row.reply_to_json),
    subject: row.subject,
    ...(body.text_body !== null ? { text: body.text_body } : {}),
    ...(body.html_body !== null ? { html: body.html_body } : {}),
    headers: JSON.parse(row.headers_json) as Record<string, string>,
    attachments: attachments.map((a) => ({ filename: a.filename, content: a.content, contentType: a.content_type, ...(a.content_id ? { contentId: a.content_id } : {}) })),
    ...(row.in_reply_to ? { inReplyTo: row.in_reply_to, references: JSON.parse(row.refs) as string[] } : {}),
  };
}
