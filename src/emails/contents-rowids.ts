// How an email's row of email_contents is written on each store.
// On SQLite, where the row goes (its rowid), so that the table's pages stay full (the goal: storage near the
// message size). A send's bodies are stored as strings at submission and replaced packed, several times
// smaller, once its first signed copy is stored (outgoing.ts packStoredBodies). Rewritten in place, each packed
// row left a hole in a page that rows appended after it never fill: about 230 bytes a send on the storage
// benchmark. So the rows still to be packed are kept apart, from WAITING up, and each is moved down when
// packed, past the newest packed row: the pages there fill in order, and those of the waiting rows are freed as
// they empty. Nothing else reads these rowids: every reader finds a row by its email_id. PostgreSQL's tables
// have no rowid to choose (its rows are placed by the server), so there the row is written without one.
// A body is TEXT or BLOB in one SQLite column (a string as written, a Buffer packed: mail/packing.ts); the
// PostgreSQL column is BYTEA, so a string body is written there as its UTF-8 bytes, which the readers
// (packing.ts unpackText/unpackHtml) read back as the same text: a stored body reads alike from either store.
import { dialect, type Query, type Sql } from '../db/query.ts';

/** The first rowid of the rows waiting to be packed: 2^52, far past any count of emails and exact in a double. */
const WAITING = 4503599627370496;

/** SQL for the rowid of a row stored packed: one past the newest packed row. */
const PACKED_ROWID = `(SELECT coalesce(max(rowid), 0) + 1 FROM email_contents WHERE rowid < ${WAITING})`;

/** SQL for the rowid of a row stored to be packed later: one past the newest row, and WAITING at least. */
const WAITING_ROWID = `(SELECT max(coalesce(max(rowid), 0) + 1, ${WAITING}) FROM email_contents)`;

const COLUMNS = 'email_id, text_body, html_body, raw, extracted_text';

/** The INSERT of an email's row (values: email_id, text_body, html_body, raw, extracted_text), among the waiting rows or the packed ones. */
export const insertContents = (waiting: boolean): Sql => ({
  sqlite: `INSERT INTO email_contents (rowid, ${COLUMNS}) VALUES (${waiting ? WAITING_ROWID : PACKED_ROWID}, ?, ?, ?, ?, ?)`,
  postgres: `INSERT INTO email_contents (${COLUMNS}) VALUES (?, ?, ?, ?, ?)`,
});

/**
 * Replaces the bodies of a row (values: text_body, html_body, email_id) unless either is packed already, and
 * on SQLite moves it among the packed rows. PostgreSQL tells packed bytes by their mark, a first NUL (packing.ts
 * isPacked; a body that is text starts with a character).
 */
export const PACK_BODIES: Sql = {
  sqlite: `UPDATE email_contents SET rowid = ${PACKED_ROWID}, text_body = ?, html_body = ? WHERE email_id = ? AND typeof(text_body) IS NOT 'blob' AND typeof(html_body) IS NOT 'blob'`,
  postgres: `UPDATE email_contents SET text_body = ?, html_body = ? WHERE email_id = ?
    AND substr(text_body, 1, 1) IS DISTINCT FROM '\\x00'::bytea AND substr(html_body, 1, 1) IS DISTINCT FROM '\\x00'::bytea`,
};

/** Bodies as the store's column takes them: as they are on SQLite, a string as its UTF-8 bytes on PostgreSQL. */
export function* bodiesForStore<B extends Record<string, string | Buffer | null>>(bodies: B): Query<{ [K in keyof B]: string | Buffer | null }> {
  if ((yield* dialect()) === 'sqlite') return bodies;
  const out: Record<string, string | Buffer | null> = {};
  for (const [k, v] of Object.entries(bodies)) out[k] = typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
  return out as { [K in keyof B]: string | Buffer | null };
}
