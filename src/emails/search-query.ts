// The `query` of GET /emails (any string a person types) -> its terms, and the full-text part of them -> a
// well-formed FTS5 expression. Nothing the user wrote reaches SQLite's query parser as syntax (catalogue F9,
// API-12): every term becomes a quoted string, with `"` doubled, so AND, OR, NOT, NEAR(, ^, parentheses and
// column names are plain words; the only columns named are this file's own (`subject:`, `filename:`). Kept:
// terms are ANDed, "quoted phrases" stay phrases, `-term` leaves out what has it, and a trailing * makes a
// prefix search when its last token has at least 3 characters (the prefix index's length; a shorter prefix
// would read every word it starts). Long inputs are refused before SQLite sees them, since a running query
// cannot be interrupted. The other operators (from:, label:, in:, dates...) are search-operators.ts's.
// On PostgreSQL the same terms become a tsquery (`tsquery`): its lexemes are the folded words, each quoted.
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
  /** The FTS5 expression of the terms searched for, or null when there are none. */
  match: string | null;
  /** The FTS5 expression of the terms with `-` (an email having any is left out), or null. */
  exclude: string | null;
  tokens: SearchToken[];
  /**
   * When a term ends with a prefix: the cheap way to walk it (email_search has no prefix index, FTS5 would
   * read and merge the list of every word a prefix starts). `match`: the other words for email_search (null
   * when there are none); `prefixes`: the first 3 letters of each prefix, which email_prefixes holds for
   * every email (search-index.ts); `check`: the terms an email found so must still be checked for (their
   * words in order, the last one a prefix), empty when the prefixes say it all (single words of 3 letters).
   */
  walk: { match: string | null; prefixes: string[]; check: string[][] } | null;
  /**
   * The same terms for PostgreSQL's index (db/postgres/0043_schema.sql email_search): `match` a tsquery of the
   * terms searched for, `exclude` one of the terms with `-`. A prefix is a lexeme with :*, which the GIN index
   * answers exactly: no walk.
   */
  tsquery: { match: string | null; exclude: string | null };
}

/** What a query with no searchable word is: it matches nothing. */
export const NOTHING: SearchQuery = { match: null, exclude: null, tokens: [], walk: null, tsquery: { match: null, exclude: null } };

// unicode61's token characters (categories L*, N*, Co); everything else separates tokens.
const TOKEN_CHAR = /[\p{L}\p{N}\p{Co}]/u;
const TOKENS = /[\p{L}\p{N}\p{Co}]+/gu;

/** Folds text the way the tokenizer does (unicode61 remove_diacritics 2), near enough for snippets. */
export const fold = (s: string) => s.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase();

/** The words of a text as the index has them (folded), in order. */
export const wordsOf = (text: string) => [...fold(text).matchAll(TOKENS)].map((w) => w[0]);

/**
 * One term of a query as typed: `-` in front (`not`), an operator name before a colon (`op`, lower case, null
 * for a word or phrase: an unknown name stays in `text`, so `foo:bar` is the words foo and bar), and its value,
 * quoted or not, with a trailing * (`star`).
 */
export interface Term {
  not: boolean;
  op: string | null;
  text: string;
  quoted: boolean;
  star: boolean;
}

/** The operators search-operators.ts knows; any other name before a colon is part of the words. */
export const OPERATORS = new Set(['from', 'to', 'subject', 'filename', 'label', 'has', 'in', 'is', 'category', 'after', 'before', 'newer', 'older', 'newer_than', 'older_than']);

/** The FTS5 column each column operator searches (search-index.ts writes them). */
const COLUMNS = new Map([
  ['subject', 'subject'],
  ['filename', 'attachments'],
]);

/** The weight that stands for each FTS5 column in PostgreSQL's tsvector (search-index.ts searchVector). */
export const WEIGHTS = { subject: 'A', body: 'B', participants: 'C', attachments: 'D' } as const;

/** PostgreSQL's limit on a lexeme: a longer word is neither indexed nor searched for. */
export const MAX_LEXEME_BYTES = 2046;
/** A lexeme no document has (the indexed words hold no space): a term that cannot match. */
const UNMATCHABLE = "' '";

/**
 * A term's folded words as a tsquery phrase: each word a quoted lexeme (they hold only token characters), the
 * next right after it (<->), the last one a prefix (:*) when asked, all in one column's weight when given.
 */
export function tsPhrase(words: string[], opts: { prefix?: boolean; weight?: string } = {}): string {
  if (!words.length || words.some((w) => Buffer.byteLength(w) > MAX_LEXEME_BYTES)) return UNMATCHABLE;
  const weight = opts.weight ?? '';
  const lexemes = words.map((w, i) => `'${w}'${opts.prefix && i === words.length - 1 ? `:*${weight}` : weight ? `:${weight}` : ''}`);
  return lexemes.length > 1 ? `(${lexemes.join(' <-> ')})` : lexemes[0];
}

/**
 * Splits a query into terms. Throws a 400 naming `query` when it is over MAX_QUERY_CHARS characters or holds
 * over MAX_QUERY_TERMS terms (words or operators); otherwise always succeeds.
 */
export function termsOf(input: string): Term[] {
  if ([...input].length > MAX_QUERY_CHARS) throw validationError('query', `must be at most ${MAX_QUERY_CHARS} characters`);
  // NUL and other control characters separate words like spaces do.
  const text = input.replace(/[\u0000-\u001f\u007f]/g, ' ');
  const terms: Term[] = [];
  // [-][name:] then a quoted phrase (an unclosed quote runs to the end) with an optional * after it, or a run
  // without quotes. A name is an operator only with a value right after its colon.
  for (const m of text.matchAll(/(-?)(?:([A-Za-z_]+):(?=[^\s]))?(?:"([^"]*)("?)(\*?)|([^\s"]+))/g)) {
    const [, minus, name, phrase, closed, phraseStar, bare] = m;
    const op = name && OPERATORS.has(name.toLowerCase()) ? name.toLowerCase() : null;
    const prefix = name && !op ? `${name}:` : '';
    if (bare !== undefined) {
      const word = bare.replace(/\*+$/, '');
      terms.push({ not: minus === '-', op, text: prefix + word, quoted: false, star: word.length < bare.length });
    } else {
      terms.push({ not: minus === '-', op, text: prefix + phrase, quoted: true, star: closed === '"' && phraseStar === '*' });
    }
  }
  // A term is kept when it holds a word, or is an operator with a value.
  const kept = terms.filter((t) => (t.op && !COLUMNS.has(t.op) ? t.text.trim() !== '' : TOKEN_CHAR.test(t.text)));
  if (kept.length > MAX_QUERY_TERMS) throw validationError('query', `must have at most ${MAX_QUERY_TERMS} terms`);
  return kept;
}

/** Whether a term is searched in the full-text index: words, phrases, and the column operators. */
export const isTextTerm = (t: Term) => t.op === null || COLUMNS.has(t.op);

/**
 * The full-text part of a query: its words, phrases, `subject:` and `filename:` terms (the others are left to
 * search-operators.ts). Words are ANDed; a term with `-` goes to `exclude`. Null when the terms hold none.
 */
export function textSearch(terms: Term[]): SearchQuery | null {
  const text = terms.filter(isTextTerm);
  if (text.length === 0) return null;
  const tokens: SearchToken[] = [];
  const exact: string[] = [];
  const words: string[] = [];
  const excluded: string[] = [];
  const prefixes = new Set<string>();
  const check: string[][] = [];
  const tsMatch: string[] = [];
  const tsExclude: string[] = [];
  for (const term of text) {
    const folded = wordsOf(term.text);
    const last = [...(folded.at(-1) ?? '')];
    // A prefix only on a bare word searched for: a column or an exclusion would read every word it starts.
    const prefix = term.star && !term.op && !term.not && last.length >= MIN_PREFIX_CHARS;
    const literal = `${term.op ? `${COLUMNS.get(term.op)} : ` : ''}"${term.text.replace(/"/g, '""')}"${prefix ? ' *' : ''}`;
    const column = term.op ? COLUMNS.get(term.op) : undefined;
    const ts = tsPhrase(folded, { prefix, weight: column ? WEIGHTS[column as keyof typeof WEIGHTS] : undefined });
    if (term.not) {
      excluded.push(literal);
      tsExclude.push(ts);
      continue;
    }
    tsMatch.push(ts);
    folded.forEach((token, i) => tokens.push({ token, prefix: prefix && i === folded.length - 1 }));
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
    match: exact.length ? exact.join(' AND ') : null,
    exclude: excluded.length ? excluded.join(' OR ') : null,
    tokens,
    walk: prefixes.size ? { match: words.length ? words.join(' AND ') : null, prefixes: [...prefixes], check } : null,
    tsquery: { match: tsMatch.length ? tsMatch.join(' & ') : null, exclude: tsExclude.length ? tsExclude.join(' | ') : null },
  };
}

/**
 * A query's full-text part alone (what the tests of the expression use): a SearchQuery that matches nothing
 * when the query holds no word.
 */
export function parseSearchQuery(input: string): SearchQuery {
  return textSearch(termsOf(input)) ?? NOTHING;
}

/** An FTS5 string for a literal value (an address): tokenized by the index's own tokenizer, matched as a phrase. */
export const ftsPhrase = (value: string) => `"${value.replace(/"/g, '""')}"`;
