// The snippet of each email in a page of GET /emails: around the first searched word, or the preview; and the
// page's extractedText. The full-text index is contentless, so a search's snippet is cut here from the page's
// bodies (stored packed).
// Read-only queries (db/query.ts); list.ts calls them.
import { all, type Query } from '../db/query.ts';
import { fold, type SearchToken } from './search-query.ts';
import { PREVIEW_CHARS, htmlText, previewOf } from './search-index.ts';
import { unpackHtml, unpackText, type StoredBody } from '../mail/packing.ts';

const SNIPPET_CHARS = 160;
const SNIPPET_LEAD = 50;
const SNIPPET_SCAN_CHARS = 64 * 1024;

/** What a snippet is cut for: an email of the page and its stored preview. */
interface PageRow {
  id: string;
  preview: string | null;
}


/** The body text of each email (its HTML's text where it has no text part), unpacked. */
export function* bodies(ids: string[]): Query<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = yield* all<{ email_id: string; text_body: StoredBody; html_body: StoredBody }>(
    'SELECT email_id, text_body, CASE WHEN text_body IS NULL THEN html_body END AS html_body FROM email_contents WHERE email_id IN (SELECT value FROM json_each(?))',
    JSON.stringify(ids),
  );
  // Stored packed (mail/packing.ts); an HTML body read here has no text, so it was packed without one.
  return new Map(rows.map((r) => [r.email_id, unpackText(r.text_body) ?? (r.html_body !== null ? htmlText(unpackHtml(r.html_body, null)!) : '')]));
}

/** The stored new text (migration 0043) of each received email of the page that has one. */
export function* extractedTexts(ids: string[]): Query<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = yield* all<{ email_id: string; extracted_text: string }>(
    'SELECT email_id, extracted_text FROM email_contents WHERE email_id IN (SELECT value FROM json_each(?)) AND extracted_text IS NOT NULL',
    JSON.stringify(ids),
  );
  return new Map(rows.map((r) => [r.email_id, r.extracted_text]));
}

/** Cut from the preview when a searched word is in it (no body to read), else from the body. */
export function* searchSnippets(page: PageRow[], tokens: SearchToken[]): Query<Map<string, string>> {
  const out = new Map<string, string>();
  for (const r of page) {
    const early = r.preview ? snippetAround(r.preview, tokens, r.preview.length >= PREVIEW_CHARS) : null;
    if (early !== null) out.set(r.id, early);
  }
  const rest = page.filter((r) => !out.has(r.id));
  const texts = yield* bodies(rest.map((r) => r.id));
  for (const r of rest) out.set(r.id, snippetAround(texts.get(r.id) ?? '', tokens) ?? r.preview ?? previewOf(texts.get(r.id) ?? ''));
  return out;
}

/** Rows written without a preview (none are, today) get one from their text. */
export function* fallbackSnippets(page: PageRow[]): Query<Map<string, string>> {
  const missing = page.filter((r) => r.preview === null).map((r) => r.id);
  const texts = yield* bodies(missing);
  return new Map(missing.map((id) => [id, previewOf(texts.get(id) ?? '')]));
}

/**
 * About SNIPPET_CHARS characters of the text around the first place a searched token starts a word (and, unless
 * it is a prefix, ends one), whitespace collapsed, with … where it was cut (or where the text `continues`
 * beyond what was given); null when no token is in the text.
 */
export function snippetAround(text: string, tokens: SearchToken[], continues = false): string | null {
  if (!tokens.length || !text) return null;
  const scanned = text.length > SNIPPET_SCAN_CHARS ? text.slice(0, SNIPPET_SCAN_CHARS) : text;
  const { folded, origin } = foldWithOrigin(scanned);
  let at = -1;
  for (const t of tokens) {
    const found = wordAt(folded, t);
    if (found >= 0 && (at < 0 || found < at)) at = found;
  }
  if (at < 0) return null;
  const hit = origin ? origin[at] : at;
  let start = Math.max(0, hit - SNIPPET_LEAD);
  if (start > 0) {
    const space = scanned.slice(start, hit).search(/\s/);
    if (space >= 0) start += space + 1;
  }
  let end = Math.min(scanned.length, start + SNIPPET_CHARS);
  if (end < scanned.length) {
    const lastSpace = scanned.slice(hit, end).search(/\s\S*$/);
    if (lastSpace > 0) end = hit + lastSpace;
  }
  const body = scanned.slice(start, end).replace(/\s+/g, ' ').trim();
  return `${start > 0 ? '…' : ''}${body}${end < text.length || continues ? '…' : ''}`;
}

/** Some word of the text, folded as the index folds it, starts with `prefix` (already folded). */
export const startsAWord = (text: string, prefix: string) => wordAt(foldWithOrigin(text).folded, { token: prefix, prefix: true }) >= 0;

const TOKEN_CHAR = /[\p{L}\p{N}\p{Co}]/u;

/**
 * The text folded as the index folds it, and where each folded character came from (null: the same place,
 * as for ASCII text, the common case, where lower-casing is all there is to do).
 */
function foldWithOrigin(text: string): { folded: string; origin: number[] | null } {
  if (!/[^\u0000-\u007f]/.test(text)) return { folded: text.toLowerCase(), origin: null };
  let folded = '';
  const origin: number[] = [];
  for (let i = 0; i < text.length; ) {
    const code = text.charCodeAt(i);
    if (code < 0x80) {
      folded += code >= 65 && code <= 90 ? String.fromCharCode(code + 32) : text[i];
      origin.push(i);
      i++;
      continue;
    }
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    const f = fold(ch);
    for (let k = 0; k < f.length; k++) origin.push(i);
    folded += f;
    i += ch.length;
  }
  return { folded, origin };
}

function wordAt(folded: string, t: SearchToken): number {
  for (let from = 0; ; ) {
    const i = folded.indexOf(t.token, from);
    if (i < 0) return -1;
    const before = i === 0 ? '' : folded[i - 1];
    const after = folded[i + t.token.length] ?? '';
    if (!TOKEN_CHAR.test(before) && (t.prefix || !TOKEN_CHAR.test(after))) return i;
    from = i + 1;
  }
}
