// Writes what GET /emails searches by, for the emails the writer thread takes off the backlog
// (search-backlog.ts): the email's row in the full-text index (email_search, contentless FTS5) and the first 3
// letters of its words (email_prefixes) under its rowid, and its senders and recipients in `correspondents`;
// on PostgreSQL, one tsvector of the same words under the email's search_rowid (searchVector), and the
// correspondents alone (their trigram index is the table's own).
// Queries of single-row statements for the writer's own transaction (db/query.ts). (Not a trigger: a statement
// that fires one opens a savepoint, and FTS5 then flushes its pending rows, one tiny segment per email.)
import { change, dialect, get, type Query, run, transactionMemo, value } from '../db/query.ts';
import type { Mailbox } from '../mail/addresses.ts';
import { MAX_LEXEME_BYTES, WEIGHTS, wordsOf } from './search-query.ts';

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
 * The rowid of the next email: one past the newest, so rowid order is the order emails were written (the
 * list's newest first) and each doclist entry of the full-text index stores a gap of a byte or two (the time
 * in ms * 1024 that earlier releases used cost 3-4 bytes an entry once mail came minutes apart: 0025).
 * Where a creation time lies in rowid order is kept in search_clock: the first rowid written once the newest
 * created_at so far reached each minute, so `after` and `before` still bound a walk (list.ts timeBounds).
 */
export function* nextSearchRowid(now: number): Query<number> {
  // Read once per PostgreSQL transaction, which the next emails it carries go on from (a round trip each under
  // the write lock otherwise); one statement for both reads.
  const memo = yield* transactionMemo();
  const last =
    (memo?.get('searchRowid') as { top: number; newest: number | null } | undefined) ??
    (yield* get<{ top: number | null; newest: number | null }>('SELECT (SELECT max(search_rowid) FROM emails) AS top, (SELECT max(minute) FROM search_clock) AS newest'))!;
  const rowid = (last.top ?? 0) + 1;
  const minute = Math.floor(now / 60_000);
  // One row a minute at most, written only when the clock passes the newest minute so far. A read, then a
  // one-row INSERT when due, never an INSERT ... SELECT: that opens a statement savepoint, and FTS5 writes the
  // rows the backlog's indexing has pending in the same group commit out as a segment of their own there (in
  // the writer, 26-82 µs at its first run in each job; 510 µs after four indexed letters in a scratch test).
  const newest = last.newest;
  const due = newest === null || minute > newest;
  if (due) yield* change('INSERT INTO search_clock (minute, first_rowid) VALUES (?, ?)', minute, rowid);
  memo?.set('searchRowid', { top: rowid, newest: due ? minute : newest });
  return rowid;
}

/**
 * Inserts the email's full-text row under `rowid` (which the caller stores as emails.search_rowid), the first
 * 3 letters of its words into email_prefixes under the same rowid, and notes its sender and recipients as
 * correspondents of the workspace. GET /emails relies on all three: the `from` and `to` filters find the
 * addresses a value can mean among the correspondents, then walk the full-text rows that carry those
 * addresses' role tokens, so every stored from and recipient address must pass through here.
 */
export function* indexEmail(rowid: number, doc: SearchDocument): Query<void> {
  const body = doc.body.length > MAX_INDEXED_BODY ? doc.body.slice(0, MAX_INDEXED_BODY) : doc.body;
  const people = peopleText(doc.from, doc.recipients, doc.others ?? []);
  const attachments = doc.attachments.join('\n');
  const participants = `${people}\n${roleTokens(doc.from, doc.recipients)}`;
  const postgres = (yield* dialect()) === 'postgres';
  if (postgres) {
    const vector = searchVector({ subject: doc.subject, participants, attachments, body });
    yield* change('INSERT INTO email_search (search_rowid, workspace_id, document) VALUES (?, ?, CAST(? AS tsvector))', rowid, doc.workspaceId, vector);
  } else {
    yield* change('INSERT INTO email_search (rowid, subject, body, participants, attachments) VALUES (?, ?, ?, ?, ?)', rowid, doc.subject, body, participants, attachments);
    yield* change('INSERT INTO email_prefixes (rowid, prefixes) VALUES (?, ?)', rowid, prefixesOf([doc.subject, body, people, attachments]));
  }
  const named = new Map<string, { address: string; name: string }>();
  for (const m of [doc.from, ...doc.recipients]) {
    const address = m.address.toLowerCase();
    const name = m.name ?? '';
    if (address) named.set(`${address}\n${name}`, { address, name });
  }
  const insert = 'INSERT INTO correspondents (workspace_id, address, name) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';
  if (postgres) {
    // Sent without waiting, and a group commit's rows go as one statement (db/postgres-merge.ts); search reads
    // them with pg_trgm, no second index.
    for (const { address, name } of named.values()) yield* change(insert, doc.workspaceId, address, name);
    return;
  }
  for (const { address, name } of named.values()) {
    if (!(yield* run(insert, doc.workspaceId, address, name))) continue;
    // The new row's id read by a statement of its own, not by RETURNING id: a statement with RETURNING opens a
    // statement savepoint, and FTS5 then writes the rows the batch has pending out as a segment of their own.
    const id = yield* value<number>('SELECT last_insert_rowid()');
    yield* change('INSERT INTO correspondents_search (rowid, address, name) VALUES (?, ?, ?)', id, address, name);
  }
}

/** Removes an email's rows from both indexes (the email is being deleted); on PostgreSQL its one row. */
export function* unindexEmail(rowid: number): Query<void> {
  if ((yield* dialect()) === 'postgres') return void (yield* run('DELETE FROM email_search WHERE search_rowid = ?', rowid));
  yield* run('DELETE FROM email_search WHERE rowid = ?', rowid);
  yield* run('DELETE FROM email_prefixes WHERE rowid = ?', rowid);
}

// What PostgreSQL takes in a tsvector: positions up to 16383 (later words share the last), 256 of them per
// lexeme, and 1 MB in all. Words past what fits are left out rather than fail the indexing transaction.
const MAX_POSITION = 16_383;
const MAX_POSITIONS = 256;
const MAX_VECTOR_BYTES = 1_000_000;
const WEIGHT_NUMBERS = 'DCBA';

/**
 * The email's tsvector for PostgreSQL's email_search, as a tsvector's text: the words of each FTS5 column cut
 * and folded as SQLite's tokenizer does (wordsOf), each at its position with its column's weight (WEIGHTS).
 * The columns follow each other with a position left free between them, so a phrase never runs across two;
 * the body comes last, since a long body's positions run out (PostgreSQL keeps 16383).
 */
export function searchVector(columns: { subject: string; participants: string; attachments: string; body: string }): string {
  /** Each lexeme's positions, each as position * 4 + its column's weight (0-3: D, C, B, A as the letters go). */
  const lexemes = new Map<string, number[]>();
  let position = 0;
  // A lexeme's bytes, its entry, its positions' count and alignment; then 2 bytes a position.
  let bytes = 0;
  for (const column of ['subject', 'participants', 'attachments', 'body'] as const) {
    const weight = WEIGHT_NUMBERS.indexOf(WEIGHTS[column]);
    position++;
    for (const word of wordsOf(columns[column])) {
      position = Math.min(position + 1, MAX_POSITION);
      let at = lexemes.get(word);
      if (at === undefined) {
        const size = Buffer.byteLength(word) + 8;
        if (size - 8 > MAX_LEXEME_BYTES || bytes + size > MAX_VECTOR_BYTES) continue;
        bytes += size;
        lexemes.set(word, (at = []));
      }
      if (at.length >= MAX_POSITIONS || (at.length > 0 && at[at.length - 1] >> 2 === position) || bytes + 2 > MAX_VECTOR_BYTES) continue;
      at.push(position * 4 + weight);
      bytes += 2;
    }
  }
  const out: string[] = [];
  for (const [word, at] of lexemes) {
    let entry = `'${word}':`;
    for (let i = 0; i < at.length; i++) entry += `${i ? ',' : ''}${at[i] >> 2}${WEIGHT_NUMBERS[at[i] & 3]}`;
    out.push(entry);
  }
  return out.join(' ');
}

const PREFIX_CHARS = 3;

/** Lower-case ASCII letters and digits, numbered: a 3-letter ASCII prefix is a number below 36^3. */
const ALNUM = '0123456789abcdefghijklmnopqrstuvwxyz';
/** Each ASCII character's number in ALNUM, upper case as lower; -1 for all but letters and digits. */
const ALNUM_INDEX = new Int8Array(128).fill(-1);
for (let i = 0; i < ALNUM.length; i++) {
  ALNUM_INDEX[ALNUM.charCodeAt(i)] = i;
  ALNUM_INDEX[ALNUM.toUpperCase().charCodeAt(i)] = i;
}
const isAlnum = (code: number) => code < 0x80 && ALNUM_INDEX[code] >= 0;
/** Which ASCII prefixes the running prefixesOf has met, by number; it clears its own before returning. */
const met = new Uint8Array(ALNUM.length ** 3);

/**
 * The distinct first 3 letters of every word of 3 or more in the texts, folded as the index folds them
 * (lower case, no diacritics), space-separated: what email_prefixes indexes, so a 3-letter prefix search is one
 * short doclist (detail=none: rowids only) instead of FTS5's prefix index, which kept every position of every
 * prefix again (half of email_search). A loop over characters, since it runs in the writer's transaction: runs
 * of ASCII letters and digits are words as they are, their prefixes numbered and marked in a table rather than
 * kept as strings in a Set; the runs that hold anything beyond ASCII are folded and split as search-query.ts
 * does, all in one go. 9 KB of English text: 85-150 µs against 180-265 with a Set; 6 KB of German, French and
 * Japanese: 330-480 against 910-1,530 folding run by run.
 */
export function prefixesOf(texts: string[]): string {
  const ascii: number[] = [];
  const other = new Set<string>();
  /** The runs of word characters that hold something beyond ASCII. */
  const beyondAscii: string[] = [];
  const meet = (n: number) => {
    if (met[n]) return;
    met[n] = 1;
    ascii.push(n);
  };
  const numberOf = (text: string, at: number) => ALNUM_INDEX[text.charCodeAt(at)] * 1296 + ALNUM_INDEX[text.charCodeAt(at + 1)] * 36 + ALNUM_INDEX[text.charCodeAt(at + 2)];
  try {
    for (const text of texts) {
      let start = -1;
      let plain = true;
      for (let i = 0; i <= text.length; i++) {
        const code = i < text.length ? text.charCodeAt(i) : 32;
        if (code >= 0x80 || isAlnum(code)) {
          if (start < 0) start = i;
          if (code >= 0x80) plain = false;
          continue;
        }
        if (start < 0) continue;
        if (!plain) beyondAscii.push(text.slice(start, i));
        else if (i - start >= PREFIX_CHARS) meet(numberOf(text, start));
        start = -1;
        plain = true;
      }
    }
    // Folded and split in one call: a call costs several µs however short its text.
    for (const word of wordsOf(beyondAscii.join(' '))) {
      // The first 3 characters: code points, not UTF-16 units.
      let end = 0;
      let chars = 0;
      for (; chars < PREFIX_CHARS && end < word.length; chars++) end += word.codePointAt(end)! > 0xffff ? 2 : 1;
      if (chars < PREFIX_CHARS) continue;
      const prefix = word.slice(0, end);
      if (end === PREFIX_CHARS && isAlnum(prefix.charCodeAt(0)) && isAlnum(prefix.charCodeAt(1)) && isAlnum(prefix.charCodeAt(2))) meet(numberOf(prefix, 0));
      else other.add(prefix);
    }
    // Written as bytes and read as one string: a string per prefix cost as much as finding them.
    const out = Buffer.allocUnsafe(ascii.length * 4);
    let at = 0;
    for (const n of ascii) {
      out[at++] = ALNUM.charCodeAt(Math.floor(n / 1296));
      out[at++] = ALNUM.charCodeAt(Math.floor(n / 36) % 36);
      out[at++] = ALNUM.charCodeAt(n % 36);
      out[at++] = 32;
    }
    const words = out.toString('latin1', 0, Math.max(0, at - 1));
    return other.size ? [...other, ...(words ? [words] : [])].join(' ') : words;
  } finally {
    for (const n of ascii) met[n] = 0;
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
  return `${peopleText(from, recipients, others)}\n${roleTokens(from, recipients)}`;
}

const peopleText = (from: IndexedMailbox, recipients: IndexedMailbox[], others: IndexedMailbox[]) =>
  [...new Set([from, ...recipients, ...others].map((b) => (b.name ? `${b.name} ${b.address}` : b.address)))].join('\n');

const roleTokens = (from: IndexedMailbox, recipients: IndexedMailbox[]) =>
  [...new Set([...(from.address ? [roleToken('from', from.address)] : []), ...recipients.filter((r) => r.address).map((r) => roleToken('to', r.address))])].join(' ');

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
