// Writes what GET /emails searches by for every writer of emails (emails/store.ts): the email's row
// in the full-text index (email_search, contentless FTS5) under its time-ordered rowid, and its senders and
// recipients in `correspondents`. Synchronous single-row statements for the writer's own transaction. (Not a
// trigger: a statement that fires one opens a savepoint, and FTS5 then flushes its pending rows, one tiny
// segment per email of a group commit, which cost 35-70 µs per email more.)
import type { Db } from '../db/open.ts';
import type { Mailbox } from '../mail/addresses.ts';

// Past this much text a body is stored whole but indexed only in part: tokenizing costs CPU in the
// transaction every concurrent writer waits on.
export const MAX_INDEXED_BODY = 1024 * 1024;
export const PREVIEW_CHARS = 200;

/** A mailbox as the writers have it: a stored row's name may be null. */
export type IndexedMailbox = Omit<Mailbox, 'name'> & { name?: string | null };

export interface SearchDocument {
  workspaceId: string;
  subject: string;
  /** The text of the message (for HTML-only mail: htmlText(html)). */
  body: string;
  /** The stored sender: emails.from_address and from_name (the envelope sender when the message has no From). */
  from: IndexedMailbox;
  /** Every mailbox of to_json, cc_json and bcc_json. */
  recipients: IndexedMailbox[];
  /** Others the message names whom a search should find: Reply-To, further From mailboxes. */
  others?: IndexedMailbox[];
  /** Attachment file names. */
  attachments: string[];
}

/**
 * A time-ordered rowid: `now` (ms) * 1024, or one past the newest when that is later (several in one
 * millisecond, or a clock that stepped back), so rowid order is the order emails were written and
 * rowid >= created_at * 1024 always holds (list.ts bounds `after` with it).
 */
export function nextSearchRowid(db: Db, now: number): number {
  const newest = (db.prepare('SELECT max(search_rowid) FROM emails').pluck().get() as number | null) ?? 0;
  return Math.max(now * 1024, newest + 1);
}

/**
 * Inserts the email's full-text row under `rowid` (which the caller stores as emails.search_rowid) and notes
 * its sender and recipients as correspondents of the workspace. GET /emails relies on both: the `from` and
 * `to` filters find the addresses a value can mean among the correspondents, then walk the full-text rows
 * that carry those addresses' role tokens, so every stored from and recipient address must pass through here.
 */
export function indexEmail(db: Db, rowid: number, doc: SearchDocument): void {
  db.prepare('INSERT INTO email_search (rowid, subject, body, participants, attachments) VALUES (?, ?, ?, ?, ?)').run(
    rowid,
    doc.subject,
    doc.body.length > MAX_INDEXED_BODY ? doc.body.slice(0, MAX_INDEXED_BODY) : doc.body,
    participantsText(doc.from, doc.recipients, doc.others ?? []),
    doc.attachments.join('\n'),
  );
  const seen = new Set<string>();
  for (const m of [doc.from, ...doc.recipients]) {
    const address = m.address.toLowerCase();
    const name = m.name ?? '';
    const key = `${address}\n${name}`;
    if (!address || seen.has(key)) continue;
    seen.add(key);
    const added = db.prepare('INSERT INTO correspondents (workspace_id, address, name) VALUES (?, ?, ?) ON CONFLICT DO NOTHING').run(doc.workspaceId, address, name);
    if (added.changes) db.prepare('INSERT INTO correspondents_search (rowid, address, name) VALUES (?, ?, ?)').run(added.lastInsertRowid, address, name);
  }
}

/**
 * One token that says "this address sent it" (`f`) or "this address received it" (`t`): the hex of the
 * address in lower case, which FTS5 keeps as a single word. A `from` or `to` filter is then an OR of a few
 * single-word doclists instead of phrases whose words (gmail, com) are in every email. The migration writes
 * the same with SQL: 'f' || lower(hex(lower(address))).
 */
export const roleToken = (role: 'from' | 'to', address: string) => `${role === 'from' ? 'f' : 't'}${Buffer.from(address.toLowerCase(), 'utf8').toString('hex')}`;

/** The participants column: everyone by name and address, the sender first, then a line of role tokens. */
export function participantsText(from: IndexedMailbox, recipients: IndexedMailbox[], others: IndexedMailbox[] = []): string {
  const people = [...new Set([from, ...recipients, ...others].map((b) => (b.name ? `${b.name} ${b.address}` : b.address)))];
  const tokens = [...new Set([...(from.address ? [roleToken('from', from.address)] : []), ...recipients.filter((r) => r.address).map((r) => roleToken('to', r.address))])];
  return [...people, tokens.join(' ')].join('\n');
}

/** The first words of the text, whitespace collapsed: emails.preview, the snippet of a list that is not a search. */
export const previewOf = (text: string) => text.slice(0, PREVIEW_CHARS * 8).replace(/\s+/g, ' ').trim().slice(0, PREVIEW_CHARS);

/**
 * The words of an HTML body, for indexing and previews of mail sent without a text part: no tags, comments,
 * scripts or styles, the common entities decoded. Deliberately cheap (it runs in the send transaction); the
 * text part a message is composed with is html-to-text's (mail/compose.ts).
 */
export function htmlText(html: string): string {
  return html
    .slice(0, MAX_INDEXED_BODY * 2)
    .replace(/<(script|style|head|title)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(br|p|div|li|tr|h[1-6])\b[^>]*>/gi, '\n')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (entity, name: string) => decodeEntity(entity, name))
    .replace(/[ \t\f\v\r]+/g, ' ')
    .replace(/ ?\n[\s]*/g, '\n')
    .trim();
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', mdash: '—', ndash: '–', hellip: '…', copy: '©', reg: '®', euro: '€' };

function decodeEntity(entity: string, name: string): string {
  if (name[0] === '#') {
    const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : ' ';
  }
  return ENTITIES[name.toLowerCase()] ?? entity;
}
