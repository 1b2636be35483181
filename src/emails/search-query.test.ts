// The search box's input -> FTS5 expression, run against the real email_search table (the migrations in an
// in-memory database): every hostile input of the catalogue (API-12, F9) is either a 400 naming `query` or a
// well-formed expression that SQLite accepts, with literal results; quoting, phrases, prefixes, the column
// operators subject: and filename:, and -term as promised. (The other operators: search-operators.test.ts.)
// Under MAILWRIGHT_TEST_STORE=postgres, the same documents in PostgreSQL's email_search: every input of these
// tests finds there what it finds in FTS5.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { migrate } from '../db/migrate.ts';
import { ApiError } from '../errors.ts';
import { MAX_QUERY_CHARS, MAX_QUERY_TERMS, parseSearchQuery } from './search-query.ts';
import { prefixesOf, searchVector } from './search-index.ts';
import { TEST_STORE } from '../testkit/app.ts';
import { freshDatabase } from '../testkit/postgres.ts';
import { openPool } from '../db/postgres.ts';
import { migratePostgres } from '../db/postgres-migrate.ts';

const db = new Database(':memory:');
migrate(db);
const docs: Array<[string, string, string, string]> = [
  ['Quarterly report', 'The multi-agent systems paper, who\'s reading it? Or not.', 'Alice Liddell alice@example.com', 'q3-report.pdf'],
  ['Lunch', 'Shall we meet at the café? NEAR the station, subject to rain. a:b', 'Bob bob@example.org', ''],
  ['Reporting', 'Reports are due; see subject x and the 🎉 party', 'Carol carol@example.net', 'notes.txt'],
];
docs.forEach(([subject, body, participants, attachments], i) => {
  db.prepare('INSERT INTO email_search (rowid, subject, body, participants, attachments) VALUES (?, ?, ?, ?, ?)').run(i + 1, subject, body, participants, attachments);
  db.prepare('INSERT INTO email_prefixes (rowid, prefixes) VALUES (?, ?)').run(i + 1, prefixesOf([subject, body, participants, attachments]));
});

/** Rowids (ascending) the query finds, or the 400's message; any other failure fails the test. */
function searchOnce(input: string): number[] | string {
  let q;
  try {
    q = parseSearchQuery(input);
  } catch (err) {
    assert.instance(err, ApiError);
    assert.is((err as ApiError).status, 400);
    assert.equal((err as ApiError).errors?.[0].path, 'query');
    return (err as ApiError).message;
  }
  if (q.match === null && q.exclude === null) return [];
  if (q.match === null) return db.prepare('SELECT rowid FROM email_search WHERE rowid NOT IN (SELECT rowid FROM email_search WHERE email_search MATCH ?) ORDER BY rowid').pluck().all(q.exclude) as number[];
  const match = q.exclude ? `(${q.match}) NOT (${q.exclude})` : q.match;
  return db.prepare('SELECT rowid FROM email_search WHERE email_search MATCH ? ORDER BY rowid').pluck().all(match) as number[];
}

/** Every input the tests below search for, to search again on PostgreSQL. */
const searched = new Set<string>();
function search(input: string): number[] | string {
  searched.add(input);
  return searchOnce(input);
}

const HOSTILE = [
  '"foo', 'foo"', 'NEAR(', 'NEAR(a b, -1)', 'a AND', 'OR', 'NOT x', '*', 'a*', '^a', 'subject:x', 'nosuchcol:x', '{subject body}:x',
  'multi-agent', "who's", '(', ')', 'a:b', '', ' ', '"', '""', '"*"', '* * *', '-', '--x', 'x -y', ':', 'AND OR NOT', 'report)', '(report',
  'col:"x" OR y', 'rowid:1', 'rank:1', 'x\u0000y', '\u0000', '🎉', '🎉🎉 report', 'café', 'CAFE', 'ǅ', '\\', "'", '`', ';--', 'email_search',
  'NEAR("a" "b", 1)', '"a" + "b"', 'a + b', '^', 'x^y', 'report*"', '"report"*', '"unclosed*', '((((report))))',
  '(' .repeat(2000) + 'x' + ')'.repeat(2000), 'x '.repeat(MAX_QUERY_TERMS + 1), Array.from({ length: 5000 }, (_, i) => `w${i}`).join(' OR '),
  'a'.repeat(100 * 1024), `${'('.repeat(400)}report`, 'OR '.repeat(30) + 'report',
  'subject:"a" NOT b', 'subject:NEAR(', 'filename:NEAR("a" "b")', '-subject:x', '-"a b"', 'subject:{body}', 'subject:body:x', 'filename:*', 'subject:"', '-', '- x',
  '-NOT', '-OR report', 'subject:"x" OR body:y', 'filename:"""', 'SUBJECT:report', 'subject:rep*', '-rep*', 'subject:^x', 'from:alice', '-from:"a" OR b',
];

test('every hostile input is a 400 naming query or a well-formed expression; never an SQLite error', () => {
  for (const input of HOSTILE) {
    const result = search(input);
    if (typeof result === 'string') assert.match(result, /^query: must (be at most|have at most)/, JSON.stringify(input.slice(0, 40)));
    else assert.ok(Array.isArray(result), JSON.stringify(input.slice(0, 40)));
  }
});

test('over-long and over-many inputs are refused before SQLite sees them', () => {
  assert.is(search('a'.repeat(MAX_QUERY_CHARS + 1)), `query: must be at most ${MAX_QUERY_CHARS} characters`);
  assert.is(search('(' .repeat(2000) + 'x' + ')'.repeat(2000)), `query: must be at most ${MAX_QUERY_CHARS} characters`);
  assert.is(search('x '.repeat(MAX_QUERY_TERMS + 1)), `query: must have at most ${MAX_QUERY_TERMS} terms`);
  assert.equal(search('report '.repeat(MAX_QUERY_TERMS)), [1]);
  assert.equal(search('a'.repeat(MAX_QUERY_CHARS)), []);
});

test('operators, column names and punctuation are plain words', () => {
  assert.equal(search('OR'), [1], 'the word "or"');
  assert.equal(search('NOT'), [1], 'the word "not"');
  assert.equal(search('NEAR('), [2], 'the word "near"');
  assert.equal(search('nosuchcol:x'), []);
  assert.equal(search('a:b'), [2], 'an unknown operator: the adjacent words "a b"');
  assert.equal(search('multi-agent'), [1]);
  assert.equal(search("who's"), [1]);
  assert.equal(search('(report'), [1]);
  assert.equal(search('"foo'), []);
  assert.equal(search('🎉 report'), [1], 'a word with no letters or digits is dropped');
});

test('subject: and filename: search one column; the others name none', () => {
  assert.equal(search('subject:x'), [], 'x is in the body of 3, not in a subject');
  assert.equal(search('subject:reporting'), [3]);
  assert.equal(search('SUBJECT:Report'), [1]);
  assert.equal(search('subject:"quarterly report"'), [1]);
  assert.equal(search('subject:"report quarterly"'), []);
  assert.equal(search('subject:lunch subject:café'), [], 'each must match');
  assert.equal(search('filename:pdf'), [1], 'q3-report.pdf');
  assert.equal(search('filename:report'), [1]);
  assert.equal(search('filename:notes.txt'), [3]);
  assert.equal(search('filename:reading'), [], 'a body word');
  assert.equal(search('subject:rep*'), [], 'no prefix in a column: the word "rep"');
  assert.is(parseSearchQuery('subject:"a" b filename:"x y"').match, 'subject : "a" AND "b" AND attachments : "x y"');
  assert.is(parseSearchQuery('from:alice').match, null, 'from: is not a word: search-operators.ts has it');
});

test('-term leaves out what has it: words, phrases, columns', () => {
  assert.equal(search('-report'), [2, 3], 'reporting and reports are other words');
  assert.equal(search('rep* -quarterly'), [3]);
  assert.equal(search('-"meet at the"'), [1, 3]);
  assert.equal(search('-subject:lunch'), [1, 3]);
  assert.equal(search('-filename:pdf'), [2, 3]);
  assert.equal(search('-rep*'), [1, 2, 3], 'no prefix in an exclusion: the word "rep", which none has');
  assert.equal(search('- report'), [1], 'a lone minus is no term');
  assert.is(parseSearchQuery('x -y -"a b" -subject:c').exclude, '"y" OR "a b" OR subject : "c"');
});

test('input with no searchable word matches nothing', () => {
  for (const input of ['*', '(', ')', ':', '"', '""', '-', '🎉', '\u0000', '* * *', '^']) {
    const q = parseSearchQuery(input);
    assert.is(q.match, null, JSON.stringify(input));
    assert.equal(search(input), []);
  }
});

test('terms are ANDed; quoted phrases stay phrases; diacritics and case are ignored', () => {
  assert.equal(search('report alice'), [1]);
  assert.equal(search('report bob'), []);
  assert.equal(search('"meet at the"'), [2]);
  assert.equal(search('"the meet"'), []);
  assert.equal(search('CAFE'), [2]);
  assert.equal(search('Café'), [2]);
  assert.equal(search('q3-report.pdf'), [1], 'an attachment name');
  assert.equal(search('carol@example.net'), [3], 'a participant address');
  assert.is(parseSearchQuery('report alice').match, '"report" AND "alice"');
  assert.is(parseSearchQuery('say "hi ""there"" x"').match, '"say" AND "hi " AND "there" AND " x"');
});

test('a trailing * is a prefix search when its last token has 3 characters or more', () => {
  assert.equal(search('rep*'), [1, 3], 'report, reporting, reports');
  assert.equal(search('repo*'), [1, 3]);
  assert.equal(search('"quarterly rep"*'), [1], 'a phrase whose last word is a prefix');
  assert.equal(search('re*'), [], 're* is the word "re": a 2-letter prefix would read every word it starts');
  assert.is(parseSearchQuery('re*').match, '"re"');
  assert.is(parseSearchQuery('rep**').match, '"rep" *');
  assert.is(parseSearchQuery('*rep').match, '"*rep"');
  assert.equal(search('*rep'), []);
  assert.equal(parseSearchQuery('Repo*').tokens, [{ token: 'repo', prefix: true }]);
  assert.equal(parseSearchQuery('rep*').walk, { match: null, prefixes: ['rep'], check: [] }, '3 letters: email_prefixes answers');
  assert.equal(parseSearchQuery('Repor* alice "multi agen"*').walk, {
    match: '"alice" AND "multi"',
    prefixes: ['rep', 'age'],
    check: [['repor'], ['multi', 'agen']],
  });
  assert.is(parseSearchQuery('alice "quarterly report"').walk, null, 'no prefix: nothing to walk apart');
  const walk = parseSearchQuery('repor*').walk!;
  const prefixed = db.prepare('SELECT rowid FROM email_prefixes WHERE email_prefixes MATCH ? ORDER BY rowid').pluck();
  assert.equal(prefixed.all(walk.prefixes.map((x) => `"${x}"`).join(' AND ')), [1, 3], 'the first 3 letters find a superset');
  assert.equal(parseSearchQuery('multi-ag*').tokens, [
    { token: 'multi', prefix: false },
    { token: 'ag', prefix: false },
  ]);
});

test('prefixesOf: the first 3 letters of each word of 3 or more, folded as the index folds them', () => {
  const got = prefixesOf(['Hello WORLD fo naïve', 'Zürich “quoted” 🎉 abc hello', 'x2024 ÉCOLE 日本語です']).split(' ').sort();
  assert.equal(got, ['abc', 'eco', 'hel', 'nai', 'quo', 'wor', 'x20', 'zur', '日本語'].sort());
  assert.is(prefixesOf(['', 'a b cd']), '');
});

test('prefixesOf: each prefix once, whichever way it was written; every call starts afresh', () => {
  // "Naive", "naïve" and "NAÏVE" fold to one prefix; "Café" and "cafeteria" too; 𠀀 is one character of two UTF-16 units.
  const texts = ['Naive naïve NAÏVE', 'Café cafeteria CAFE 𠀀yz 𠀀y', 'Ärger arg'];
  const first = prefixesOf(texts).split(' ').sort();
  assert.equal(first, ['arg', 'caf', 'nai', '𠀀yz'].sort());
  assert.equal(prefixesOf(texts).split(' ').sort(), first);
  assert.equal(prefixesOf(['Naive']), 'nai');
  assert.equal(prefixesOf(['Zürich', 'zur']), 'zur');
});

(TEST_STORE === 'postgres' ? test : test.skip)('PostgreSQL: every input finds in email_search what it finds in FTS5', async () => {
  const fresh = await freshDatabase();
  const pool = openPool(fresh.url, { max: 1 });
  try {
    await migratePostgres(pool);
    await pool.query("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_q', 'q', 0)");
    for (const [i, [subject, body, participants, attachments]] of docs.entries()) {
      await pool.query("INSERT INTO email_search (search_rowid, workspace_id, document) VALUES ($1, 'ws_q', $2::tsvector)", [i + 1, searchVector({ subject, body, participants, attachments })]);
    }
    for (const input of [...searched, ...HOSTILE, 'rep*', 'repor*', '"quarterly rep"*', 'Repor* alice "multi agen"*', 'multi-ag*']) {
      const want = searchOnce(input);
      if (typeof want === 'string') continue;
      const q = parseSearchQuery(input);
      let got: number[] = [];
      if (q.tsquery.match !== null || q.tsquery.exclude !== null) {
        const query = [q.tsquery.match ?? '', q.tsquery.exclude ? `${q.tsquery.match ? ' & ' : ''}!(${q.tsquery.exclude})` : ''].join('');
        got = (await pool.query('SELECT search_rowid FROM email_search WHERE document @@ $1::tsquery ORDER BY search_rowid', [query])).rows.map((r) => Number(r.search_rowid));
      }
      assert.equal(got, want, JSON.stringify(input.slice(0, 60)));
    }
  } finally {
    await pool.end();
    await fresh.drop();
  }
});

test.run();
