// GET /emails's lists and searches (list.ts) on both stores at once: the same emails written to a SQLite
// database (FTS5) and a fresh PostgreSQL database (a tsvector per email, trigrams for correspondents), some
// indexed at once and some through the backlog, then every kind of query answered alike on both, words, phrases,
// prefixes, diacritics, columns, from/to, the operators, words too long to index; and a deleted email found by
// neither. (The HTTP tests, list.test.ts and search-operators.test.ts, run on one store at a time.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { run } from '../db/query.ts';
import { onBothStores } from '../testkit/postgres.ts';
import { indexEmail, nextSearchRowid, unindexEmail } from './search-index.ts';
import { indexAll, queueIndexing } from './search-backlog.ts';
import { listEmails } from './list.ts';
import { parseListParams } from './search-routes.ts';

const T0 = Date.UTC(2026, 0, 1);

interface Letter {
  id: string;
  from: [name: string, address: string];
  to: Array<{ name?: string; address: string }>;
  subject: string;
  text: string;
  files?: string[];
  out?: boolean;
  spam?: boolean;
  /** Indexed through the backlog rather than at once. */
  queued?: boolean;
}

const LETTERS: Letter[] = [
  { id: 'em_1', from: ['Alice Liddell', 'alice@sender.example'], to: [{ name: 'Hello', address: 'hello@in.example' }], subject: 'Quarterly report draft', text: 'Please find the quarterly numbers attached. The budget grew a lot.', files: ['q3-report.pdf'] },
  { id: 'em_2', from: ['Bob Builder', 'bob@sender.example'], to: [{ address: 'hello@in.example' }], subject: 'Lunch on Friday?', text: 'Shall we meet at the café near the station at noon?' },
  { id: 'em_3', from: ['Prize Desk', 'prizes@sender.example'], to: [{ address: 'hello@in.example' }], subject: 'You won a prize', text: 'Claim your prize budget now.', spam: true },
  { id: 'em_4', from: ['Hello Desk', 'hello@in.example'], to: [{ name: 'Carol Customer', address: 'carol.customer@dest.example' }], subject: 'Invoice 1001', text: 'Your invoice 1001 is attached. Total: 12 EUR.', files: ['invoice-1001.pdf'], out: true, queued: true },
  { id: 'em_5', from: ['Ünïcode Ñame', 'uni@sender.example'], to: [{ address: 'hello@in.example' }], subject: 'Zürich naïve', text: `${'filler words go here and there. '.repeat(20)}The unicorn budget is approved. 日本語です`, queued: true },
];


function* write(letter: Letter, i: number) {
  const at = T0 + i * 60_000;
  const rowid = yield* nextSearchRowid(at);
  yield* run(
    `INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, from_name, to_json, subject, preview, created_at, search_rowid, category)
     VALUES (?, 'ws_a', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    letter.id, letter.out ? 'out' : 'in', letter.out ? 'sent' : 'received', `${letter.id}@x`, letter.id, letter.from[1], letter.from[0], JSON.stringify(letter.to),
    letter.subject, letter.text.slice(0, 200), at, rowid, letter.out ? null : letter.spam ? 'spam' : 'primary',
  );
  yield* run('INSERT INTO email_contents (email_id, text_body) VALUES (?, ?)', letter.id, Buffer.from(letter.text));
  for (const [k, name] of (letter.files ?? []).entries()) {
    yield* run("INSERT INTO email_attachments (id, email_id, workspace_id, position, filename, content_type, size, content) VALUES (?, ?, 'ws_a', ?, ?, 'application/pdf', 1, ?)", `att_${letter.id}_${k}`, letter.id, k, name, Buffer.from('x'));
  }
  const doc = { workspaceId: 'ws_a', subject: letter.subject, body: letter.text, from: { address: letter.from[1], name: letter.from[0] }, recipients: letter.to, attachments: letter.files ?? [] };
  if (letter.queued) yield* queueIndexing(rowid, letter.id, doc);
  else yield* indexEmail(rowid, doc);
}

const { stores } = onBothStores((store) =>
  store.write(function* () {
    yield* run("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_a', 'a', 0), ('ws_b', 'b', 0)");
    for (const [i, letter] of LETTERS.entries()) yield* write(letter, i);
    yield* indexAll();
  }),
);

/** The page GET /emails answers with these parameters, on each store: SQLite's, then PostgreSQL's. */
const lists = (params: Record<string, string>, workspace = 'ws_a') => Promise.all(stores.map((s) => s.read(listEmails(workspace, parseListParams(params, T0)))));

const QUERIES: Array<Record<string, string>> = [
  {}, { query: 'quarterly' }, { query: 'budget' }, { query: 'budget', include_spam: 'true' }, { query: 'liddell' }, { query: 'carol.customer@dest.example' },
  { query: 'invoice-1001.pdf' }, { query: '"near the station"' }, { query: '"the station near"' }, { query: 'cafe' }, { query: 'quart*' }, { query: 'QUARTERL*' },
  { query: 'zurich' }, { query: 'naive' }, { query: 'ñame' }, { query: '日本語です' }, { query: 'unicorn' }, { query: 'budget -quarterly' }, { query: '-budget' },
  { query: '"numbers attached"' }, { query: '"attached the"' }, { query: '"draft alice"' }, { query: 'budg* quarte*' }, { query: '"the quarterly numb"*' }, { query: 'qu*' },
  { from: 'alice' }, { from: 'LIDDELL' }, { from: 'ÑAME' }, { to: 'carol' }, { to: 'hello@in' }, { from: 'e' }, { from: 'bo' }, { query: 'budget', from: 'alice' },
  { query: 'from:alice' }, { query: '-from:alice' }, { query: 'to:carol' }, { query: '-to:hello' }, { query: 'subject:report' }, { query: 'subject:"report draft"' },
  { query: 'filename:pdf' }, { query: 'filename:report' }, { query: 'has:attachment' }, { query: '-is:unread' }, { query: 'in:anywhere budget' }, { query: 'category:primary' },
  { query: '-category:primary' }, { query: 'in:sent' }, { query: 'after:2026-01-01 budget' }, { query: 'before:2026-01-01' }, { query: 'x'.repeat(900) }, { query: '日'.repeat(900) },
  { query: `-${'日'.repeat(900)}` }, { query: 'budget', limit: '1', offset: '1' },
];

test('every query answers alike on SQLite and PostgreSQL', async () => {
  for (const params of QUERIES) {
    const [sqlite, postgres] = await lists(params);
    assert.equal(postgres, sqlite, JSON.stringify(params).slice(0, 80));
  }
  const [sqlite] = await lists({ query: 'budget' });
  assert.equal(sqlite.data.map((e) => e.id), ['em_5', 'em_1'], 'the comparison compares something');
});

test('another workspace finds none of it on either store', async () => {
  for (const params of [{ query: 'budget' }, { from: 'alice' }, { query: 'quart*' }] as Array<Record<string, string>>) {
    for (const page of await lists(params, 'ws_b')) assert.is(page.count, 0, JSON.stringify(params));
  }
});

test('an email taken out of the index is found by neither', async () => {
  const rowid = LETTERS.findIndex((l) => l.id === 'em_5') + 1;
  for (const store of stores) {
    await store.write(function* () {
      yield* unindexEmail(rowid);
      yield* run("DELETE FROM emails WHERE id = 'em_5'");
    });
  }
  for (const params of [{ query: 'unicorn' }, { query: 'budget' }, { from: 'uni' }] as Array<Record<string, string>>) {
    const [sqlite, postgres] = await lists(params);
    assert.equal(postgres, sqlite, JSON.stringify(params));
    assert.ok(!sqlite.data.some((e) => e.id === 'em_5'));
  }
});

test.run();
