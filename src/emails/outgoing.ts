// Mail at rest, read back for composing and delivery: a sent email's row and stored signed copy, its bodies and
// attachments as a ComposeInput, and the signed copy stored once, packed (mail/packing.ts). Queries on the
// emails tables only (db/query.ts; a copy is read in one query, then unpacked off it); it decides nothing about
// queueing or personal copies (send/ does) and imports nothing from send/.
import { all, change, get, type Query, run, value } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import type { Mailbox } from '../mail/addresses.ts';
import type { ComposeInput } from '../mail/compose.ts';
import { copyPackedAgainst, unpackAgainstCopy, unpackBodies, unpackMessageAsync, type StoredBodies } from '../mail/packing.ts';
import type { EmailRow } from './rows.ts';
import { bodiesForStore, PACK_BODIES } from './contents-rowids.ts';

/**
 * A sent email as composing reads it. storeSentEmail always writes a sent email's sending domain and envelope
 * sender, so those two are never null here.
 */
export type OutgoingEmail = Pick<
  EmailRow,
  | 'id' | 'workspace_id' | 'domain_id' | 'domain' | 'message_id' | 'in_reply_to' | 'refs' | 'from_address' | 'from_name'
  | 'to_json' | 'cc_json' | 'reply_to_json' | 'subject' | 'headers_json' | 'message_class' | 'created_at'
> & { domain: string; envelope_from: string };

/**
 * The columns of a sent email `e` as composing reads it (OutgoingEmail), for a statement that reads more beside
 * them FROM OUTGOING_FROM: `signed`, 1 when its shared signed copy is stored, and with the named value `copy` 1
 * the copy itself (`copy_*`, which signedCopyOf unpacks), and `attached`, 0 when it has no attachments for
 * composeInput to read. Not its bodies, unless a copy is packed against them: composeInput reads them.
 */
export const OUTGOING_COLUMNS = `e.id, e.workspace_id, e.domain_id, e.domain, e.message_id, e.in_reply_to, e.refs, e.from_address, e.from_name,
  e.to_json, e.cc_json, e.reply_to_json, e.subject, e.headers_json, e.message_class, e.envelope_from, e.created_at,
  CASE WHEN c.raw IS NOT NULL THEN 1 ELSE 0 END AS signed, CASE WHEN @copy = 1 THEN c.raw END AS copy_raw,
  CASE WHEN @copy = 1 AND c.raw IS NOT NULL THEN c.text_body END AS copy_text, CASE WHEN @copy = 1 AND c.raw IS NOT NULL THEN c.html_body END AS copy_html,
  CASE WHEN EXISTS (SELECT 1 FROM email_attachments a WHERE a.email_id = e.id) THEN 1 ELSE 0 END AS attached`;

export const OUTGOING_FROM = 'emails e LEFT JOIN email_contents c ON c.email_id = e.id';

/** The signed copy of a row read with OUTGOING_COLUMNS: the bytes as signed, or null when none is stored. */
export const signedCopyOf = (row: { copy_raw: Buffer | null; copy_text: StoredBodies['text']; copy_html: StoredBodies['html'] }): Promise<Buffer | null> =>
  row.copy_raw ? unpackMessageAsync(row.copy_raw, { text: row.copy_text, html: row.copy_html }) : Promise.resolve(null);

/** The email's text and HTML bodies as stored (both null when it has none). */
export function* storedBodies(emailId: string): Query<{ text: string | null; html: string | null }> {
  const stored = yield* get<StoredBodies>('SELECT text_body AS text, html_body AS html FROM email_contents WHERE email_id = ?', emailId);
  return stored ? unpackBodies(stored) : { text: null, html: null };
}

/** The email's signed copy for all its recipients, once stored: the bytes as signed. */
export async function signedCopy(store: Pick<Store, 'read'>, emailId: string): Promise<Buffer | null> {
  const row = await store.read(get<StoredBodies & { raw: Buffer | null }>('SELECT raw, text_body AS text, html_body AS html FROM email_contents WHERE email_id = ?', emailId));
  return row?.raw ? unpackMessageAsync(row.raw, row) : null;
}

/** A recipient's own signed copy of a personalised email (delivery_contents), once stored: the bytes as signed. */
export async function personalCopy(store: Pick<Store, 'read'>, deliveryId: number): Promise<Buffer | null> {
  const stored = await store.read(storedPersonalCopy(deliveryId));
  return stored ? unpackCopy(stored) : null;
}

function* storedPersonalCopy(deliveryId: number): Query<StoredCopy | null> {
  const row = yield* get<StoredBodies & { raw: Buffer }>(
    'SELECT dc.raw, c.text_body AS text, c.html_body AS html FROM delivery_contents dc JOIN deliveries d ON d.id = dc.delivery_id JOIN email_contents c ON c.email_id = d.email_id WHERE dc.delivery_id = ?',
    deliveryId,
  );
  return row ? yield* withBase(row.raw, row) : null;
}

/** A stored personal copy with what it is unpacked against: the email's bodies, and the other copy when it was packed against one. */
export interface StoredCopy {
  raw: Buffer;
  bodies: StoredBodies;
  base: Buffer | null;
}

/**
 * A stored personal copy with the other copy of the email it was packed against, if it was (mail/packing.ts):
 * read in the same query, so the copy is unpacked without another. Copies are deleted only with their email,
 * all at once, so that one is there.
 */
export function* withBase(stored: Buffer, bodies: StoredBodies): Query<StoredCopy> {
  const against = copyPackedAgainst(stored);
  if (against === null) return { raw: stored, bodies, base: null };
  const base = yield* value<Buffer>('SELECT raw FROM delivery_contents WHERE delivery_id = ?', against);
  if (!base) throw new Error(`packed mail: the copy this one was packed against (delivery ${against}) is missing`);
  return { raw: stored, bodies, base };
}

/** A stored personal copy unpacked: against the email's bodies, or against the other copy it was packed against. */
export async function unpackCopy(c: StoredCopy): Promise<Buffer> {
  if (c.base === null) return unpackMessageAsync(c.raw, c.bodies);
  return unpackAgainstCopy(c.raw, await unpackMessageAsync(c.base, c.bodies));
}

/**
 * The copy of a personalised email that its other copies are packed against (the first stored that was packed
 * against the bodies), with its delivery id and bytes; null before any is stored.
 */
export async function baseCopy(store: Pick<Store, 'read'>, emailId: string): Promise<{ id: number; raw: Buffer } | null> {
  const row = await store.read(
    get<StoredBodies & { id: number; raw: Buffer }>(
      `SELECT dc.delivery_id AS id, dc.raw, c.text_body AS text, c.html_body AS html
       FROM deliveries d JOIN delivery_contents dc ON dc.delivery_id = d.id JOIN email_contents c ON c.email_id = d.email_id
       WHERE d.email_id = ? AND substr(dc.raw, 1, 2) IS DISTINCT FROM ? ORDER BY d.id LIMIT 1`,
      emailId,
      AGAINST_COPY_MARK,
    ),
  );
  return row ? { id: row.id, raw: await unpackMessageAsync(row.raw, row) } : null;
}

/**
 * Stores a recipient's own signed copy, packed against the email's bodies or its base copy (mail/packing.ts);
 * false (nothing written) when one is stored already: the first one stands. For the caller's transaction.
 */
export function* storePersonalCopy(deliveryId: number, packed: Buffer): Query<boolean> {
  return (yield* run('INSERT INTO delivery_contents (delivery_id, raw) VALUES (?, ?) ON CONFLICT DO NOTHING', deliveryId, packed)) > 0;
}

/**
 * Replaces a send's bodies, stored as strings at submission, with the same text packed (mail/packing.ts: the
 * signing worker packs them), unless they are packed already, and moves the row among the packed ones
 * (contents-rowids.ts). Never other text: the stored copies' bytes are packed against what these bodies hold.
 */
export function* packStoredBodies(emailId: string, bodies: { text: string | Buffer | null; html: string | Buffer | null }): Query<void> {
  const { text, html } = yield* bodiesForStore(bodies);
  yield* change(PACK_BODIES, text, html, emailId);
}

export function* hasSignedCopy(emailId: string): Query<boolean> {
  return (yield* get('SELECT 1 FROM email_contents WHERE email_id = ? AND raw IS NOT NULL', emailId)) !== undefined;
}

/**
 * Stores the signed copy all recipients get, packed against the email's bodies (mail/packing.ts), with its size
 * (unpacked) and when it was signed; false (nothing written) when a copy is already stored, the first one
 * standing, or when the email was planned as one copy per recipient meanwhile (personalised_emails: one or the
 * other, never both). For the caller's transaction.
 */
export function* storeSignedCopy(emailId: string, packed: Buffer, size: number, now: number): Query<boolean> {
  // One statement for both checks: on PostgreSQL each one the query waits for is a round trip under the write lock.
  const stored = yield* run(
    'UPDATE email_contents SET raw = ? WHERE email_id = ? AND raw IS NULL AND NOT EXISTS (SELECT 1 FROM personalised_emails WHERE email_id = ?)',
    packed,
    emailId,
    emailId,
  );
  if (!stored) return false;
  yield* change('UPDATE emails SET size = ?, signed_at = ? WHERE id = ?', size, now, emailId);
  return true;
}

/** An email sent as one copy per recipient: its size and signing time are those of the first copy signed. */
export function* noteFirstCopySigned(emailId: string, size: number, now: number): Query<void> {
  yield* change('UPDATE emails SET size = ?, signed_at = ? WHERE id = ? AND signed_at IS NULL', size, now, emailId);
}

/** The first two bytes of a copy packed against another copy (mail/packing.ts packAgainstCopy), as a parameter both stores compare bytes with. */
const AGAINST_COPY_MARK = Buffer.from([0x00, 0x02]);

const mailboxes = (json: string) => JSON.parse(json) as Mailbox[];

/** What the composer makes the message from: the row's headers, the stored bodies and attachments in order. */
export function* composeInput(row: OutgoingEmail & { attached?: number }): Query<ComposeInput> {
  const body = unpackBodies((yield* get<StoredBodies>('SELECT text_body AS text, html_body AS html FROM email_contents WHERE email_id = ?', row.id))!);
  const attachments =
    row.attached === 0
      ? []
      : yield* all<{ filename: string; content_type: string; content_id: string | null; content: Buffer }>(
          'SELECT filename, content_type, content_id, content FROM email_attachments WHERE email_id = ? ORDER BY position',
          row.id,
        );
  return {
    messageId: row.message_id,
    date: row.created_at,
    from: { ...(row.from_name ? { name: row.from_name } : {}), address: row.from_address },
    to: mailboxes(row.to_json),
    cc: mailboxes(row.cc_json),
    replyTo: mailboxes(row.reply_to_json),
    subject: row.subject,
    ...(body.text !== null ? { text: body.text } : {}),
    ...(body.html !== null ? { html: body.html } : {}),
    headers: JSON.parse(row.headers_json) as Record<string, string>,
    attachments: attachments.map((a) => ({ filename: a.filename, content: a.content, contentType: a.content_type, ...(a.content_id ? { contentId: a.content_id } : {}) })),
    ...(row.in_reply_to ? { inReplyTo: row.in_reply_to, references: JSON.parse(row.refs) as string[] } : {}),
  };
}
