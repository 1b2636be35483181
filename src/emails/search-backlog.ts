// The full-text index, a moment after the mail. An email is acknowledged with a row in search_backlog
// instead of its index rows, and the writer thread indexes the backlog in batches, in transactions that answer
// nobody (start/writer-jobs.ts `background`): FTS5 writes a segment per commit, so indexing 6 emails a group commit
// cost about twice what the same emails cost a hundred at a time, and the acknowledged commit is what every
// sender waits on. GET /emails indexes what is left before it searches (search-routes.ts), so a search never
// misses an email that was acknowledged; a list without words, `from` or `to` reads no index and waits for nothing.
// On PostgreSQL there is no backlog but what `mailwright migrate` leaves: an email is indexed in the transaction
// that stores it (queueIndexing).
//
// The writer thread keeps the documents it queued (the text is at hand then, not yet packed); a backlog row it
// holds no document for (queued by a writer that ended, before a restart, or on another connection) is indexed
// from the stored email.
//
// Queries for the caller's transaction (db/query.ts). The documents held are a cache beside them: each is
// used only for the backlog row of the same rowid and email, so a query run again after a rollback at worst
// reads a document back from the stored email.
import { isMainThread } from 'node:worker_threads';
import { all, column, dialect, get, run, value, type Query } from '../db/query.ts';
import { unpackBodies } from '../mail/packing.ts';
import { htmlText, indexEmail, type IndexedMailbox, type SearchDocument } from './search-index.ts';

/** Emails indexed per background transaction: most of the batching's gain (50 gets most of it, 200 a little more). */
export const INDEX_BATCH = 128;
/**
 * Characters of body text held in memory at most (the writer's heap, under the memory goal); past
 * this, documents are read back from the stored emails when indexed, which costs unpacking them.
 */
const MAX_HELD_CHARS = 2 * 1024 * 1024;

/** Documents queued by this thread, by search rowid, with the email they belong to (a rowid can be handed out again). */
const held = new Map<number, { emailId: string; doc: SearchDocument }>();
let heldChars = 0;

function release(rowid: number): { emailId: string; doc: SearchDocument } | undefined {
  const mine = held.get(rowid);
  if (mine) {
    held.delete(rowid);
    heldChars -= mine.doc.body.length;
  }
  return mine;
}

/** Puts a stored email on the backlog, in the caller's transaction, with its document. */
export function* queueIndexing(rowid: number, emailId: string, doc: SearchDocument): Query<void> {
  // PostgreSQL indexes a row at no cost that grows with the batch (a GIN insert), while the backlog would cost
  // five round trips an email (its row written, read, deleted; the email and its attachments read back): the
  // email is indexed at once, in the caller's transaction.
  if ((yield* dialect()) === 'postgres') return yield* indexEmail(rowid, doc);
  yield* run('INSERT INTO search_backlog (search_rowid, email_id) VALUES (?, ?) ON CONFLICT (search_rowid) DO UPDATE SET email_id = excluded.email_id', rowid, emailId);
  // Only the writer thread indexes: a document held anywhere else would never be let go.
  if (isMainThread) return;
  release(rowid); // a rowid handed out again by a batch run again
  if (heldChars + doc.body.length > MAX_HELD_CHARS) return;
  held.set(rowid, { emailId, doc });
  heldChars += doc.body.length;
}

/** Takes an email off the backlog (it is being deleted before it was indexed). */
export function* dropFromBacklog(rowid: number): Query<void> {
  yield* run('DELETE FROM search_backlog WHERE search_rowid = ?', rowid);
}

export function* hasBacklog(): Query<boolean> {
  return (yield* get('SELECT 1 FROM search_backlog LIMIT 1')) !== undefined;
}

/** How many emails wait for the index (metrics). */
export function* searchBacklog(): Query<number> {
  return (yield* value<number>('SELECT count(*) FROM search_backlog'))!;
}

/**
 * Indexes up to `limit` emails of the backlog, oldest first, in the caller's transaction; true when more are
 * left. An email deleted meanwhile is skipped.
 */
export function* indexBacklog(limit = INDEX_BATCH): Query<boolean> {
  const rows = yield* all<{ search_rowid: number; email_id: string }>('SELECT search_rowid, email_id FROM search_backlog ORDER BY search_rowid LIMIT ?', limit + 1);
  if (rows.length === 0) {
    // This connection sees its own transaction's rows, so anything still held was deleted before it was indexed.
    held.clear();
    heldChars = 0;
  }
  for (const row of rows.slice(0, limit)) {
    yield* run('DELETE FROM search_backlog WHERE search_rowid = ?', row.search_rowid);
    const mine = release(row.search_rowid);
    const doc = mine?.emailId === row.email_id ? mine.doc : yield* storedDocument(row.search_rowid, row.email_id);
    if (doc) yield* indexEmail(row.search_rowid, doc);
  }
  return rows.length > limit;
}

/** Indexes the whole backlog, in the caller's transaction. */
export function* indexAll(): Query<void> {
  while (yield* indexBacklog());
}

interface StoredEmail {
  workspace_id: string;
  subject: string;
  from_address: string | null;
  from_name: string | null;
  to_json: string;
  cc_json: string;
  bcc_json: string;
  reply_to_json: string;
  text_body: string | Uint8Array | null;
  html_body: string | Uint8Array | null;
}

/**
 * An email's document as its writer made it (store.ts), from what is stored: the text body, or the HTML's
 * text; every recipient; Reply-To. (A received message's further From mailboxes are not stored, so an email
 * indexed this way is not found by them.) Null when the email is gone.
 */
function* storedDocument(rowid: number, emailId: string): Query<SearchDocument | null> {
  const e = yield* get<StoredEmail>(
    `SELECT e.workspace_id, e.subject, e.from_address, e.from_name, e.to_json, e.cc_json, e.bcc_json, e.reply_to_json, c.text_body, c.html_body
     FROM emails e LEFT JOIN email_contents c ON c.email_id = e.id WHERE e.id = ? AND e.search_rowid = ?`,
    emailId,
    rowid,
  );
  if (!e) return null;
  const bodies = unpackBodies({ text: e.text_body, html: e.html_body });
  const mailboxes = (json: string | null) => (JSON.parse(json || '[]') as IndexedMailbox[] | null) ?? [];
  const attachments = yield* column<string>('SELECT filename FROM email_attachments WHERE email_id = ? ORDER BY position', emailId);
  return {
    workspaceId: e.workspace_id,
    subject: e.subject,
    body: bodies.text ?? (bodies.html !== null ? htmlText(bodies.html) : ''),
    from: { address: e.from_address ?? '', name: e.from_name },
    recipients: [...mailboxes(e.to_json), ...mailboxes(e.cc_json), ...mailboxes(e.bcc_json)],
    others: mailboxes(e.reply_to_json),
    attachments,
  };
}
