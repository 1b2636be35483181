// The `query` of GET /emails (any string a person types) -> a well-formed FTS5 expression. Nothing the user
// wrote reaches SQLite's query parser as syntax (catalogue F9, API-12): every term becomes a quoted string,
// with `"` doubled, so AND, OR, NOT, NEAR(, ^, :, parentheses and column names are plain words. Kept: terms
// are ANDed, "quoted phrases" stay phrases, and a trailing * makes a prefix search when its last token has at
// least 3 characters (the prefix index's length; a shorter prefix would read every word it starts). Long
// inputs are refused before SQLite sees them, since a running query cannot be interrupted.
import { validationError } from '../errors.ts';

export const MAX_QUERY_CHARS = 1000;
export const MAX_QUERY_TERMS = 32;
export const MIN_PREFIX_CHARS = 3;

/** One searched token, folded as the index folds it (lower case, no diacritics): what snippets look for. */
export interface SearchToken {
  token: string;
  prefix: boolean;
}

export interface SearchQuery {
  /** The FTS5 expression, or null when the input holds no searchable word (it then matches nothing). */
  match: string | null;
  tokens: SearchToken[];
  /**
   * When a term ends with a prefix: the cheap way to walk it (email_search has no prefix index, FTS5 would
   * read and merge the list of every word a prefix starts). `match`: the other words for email_search (null
   * when there are none); `prefixes`: the first 3 letters of each prefix, which email_prefixes holds for
   * every email (search-index.ts); `check`: the terms an email found so must still be checked for (their
   * words in order, the last one a prefix), empty when the prefixes say it all (single words of 3 letters).
   */
  walk: { match: string | null; prefixes: string[]; check: string[][] } | null;
}

// unicode61's token characters (categories L*, N*, Co); everything else separates tokens.
const TOKEN_CHAR = /[\p{L}\p{N}\p{Co}]/u;
const TOKENS = /[\p{L}\p{N}\p{Co}]+/gu;

/** Folds text the way the tokenizer does (unicode61 remove_diacritics 2), near enough for snippets. */
export const fold = (s: string) => s.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase();

/** The words of a text as the index has them (folded), in order. */
export const wordsOf = (text: string) => [...fold(text).matchAll(TOKENS)].map((w) => w[0]);

/**
 * Parses a non-empty user query. Throws a 400 naming `query` when it is over MAX_QUERY_CHARS characters or
 * MAX_QUERY_TERMS terms; otherwise always succeeds.
 */
export function parseSearchQuery(input: string): SearchQuery {
  if ([...input].length > MAX_QUERY_CHARS) throw validationError('query', `must be at most ${MAX_QUERY_CHARS} characters`);
  // NUL and other control characters separate words like spaces do.
  const text = input.replace(/[\u0000-\u001f\u007f]/g, ' ');
  const pieces: Array<{ text: string; star: boolean }> = [];
  // A quoted phrase (an unclosed quote runs to the end) with an optional * after it, or a run without quotes.
  for (const m of text.matchAll(/"([^"]*)("?)(\*?)|([^\s"]+)/g)) {
    if (m[4] !== undefined) {
      const bare = m[4];
      const word = bare.replace(/\*+$/, '');
      pieces.push({ text: word, star: word.length < bare.length });
    } else {
      pieces.push({ text: m[1], star: m[2] === '"' && m[3] === '*' });
    }
  }
  const terms = pieces.filter((p) => TOKEN_CHAR.test(p.text));
  if (terms.length > MAX_QUERY_TERMS) throw validationError('query', `must have at most ${MAX_QUERY_TERMS} terms`);
  if (terms.length === 0) return { match: null, tokens: [], walk: null };

  const tokens: SearchToken[] = [];
  const exact: string[] = [];
  const words: string[] = [];
  const prefixes = new Set<string>();
  const check: string[][] = [];
  for (const term of terms) {
    const folded = wordsOf(term.text);
    const last = [...(folded.at(-1) ?? '')];
    const prefix = term.star && last.length >= MIN_PREFIX_CHARS;
    folded.forEach((token, i) => tokens.push({ token, prefix: prefix && i === folded.length - 1 }));
    const literal = `"${term.text.replace(/"/g, '""')}"${prefix ? ' *' : ''}`;
    exact.push(literal);
    if (!prefix) {
      words.push(literal);
      continue;
    }
    prefixes.add(last.slice(0, MIN_PREFIX_CHARS).join(''));
    // The folded words hold only token characters: quoting them is enough.
    if (folded.length > 1) words.push(`"${folded.slice(0, -1).join(' ')}"`);
    if (folded.length > 1 || last.length > MIN_PREFIX_CHARS) check.push(folded);
  }
  return {
    match: exact.join(' AND '),
    tokens,
    walk: prefixes.size ? { match: words.length ? words.join(' AND ') : null, prefixes: [...prefixes], check } : null,
  };
}

/** An FTS5 string for a literal value (an address): tokenized by the index's own tokenizer, matched as a phrase. */
export const ftsPhrase = (value: string) => `"${value.replace(/"/g, '""')}"`;
