// The full-text index a moment after the mail (search-backlog.ts), against the real app: a search finds every
// email the moment it was acknowledged (sent through the API or received over SMTP), a deleted email never
// reaches the index, a clean stop leaves no backlog, and a backlog left behind is indexed at the next start
// from the stored emails, answering every kind of search as the index made at the time did. Searches in parallel
// with sends never fail, never cross workspaces, and bad input is a 400. On either store: the rows are read
// through the app's store, and a stopped box's through a connection of the test's own.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { startApp, type RunningApp } from '../app.ts';
import { loadConfig } from '../config/config.ts';
import { createLog } from '../log.ts';
import { databasePath } from '../db/open.ts';
import { openPool } from '../db/postgres.ts';
import { postgresStore } from '../db/store.ts';
import { all, dialect, run, value, type Query } from '../db/query.ts';
import { runOn } from '../db/sqlite-query.ts';
import { request, seedWorkspace, TEST_STORE } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';

let s: InboundScene;
let api: string;
let restarted: RunningApp | null = null;

test.before(async () => {
  s = await startInboundScene();
  s.routeTo('far.example');
  api = s.t.api;
});
test.after(async () => {
  await restarted?.stop();
  await s.stop();
});

const call = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${api}${path}`, { key: s.key, ...opts });
const found = async (query: string): Promise<string[]> => {
  const res = await call(`/emails?${query}&include_spam=true&limit=100`);
  assert.is(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
  return (res.body.data as Array<{ id: string }>).map((e) => e.id).sort();
};
const send = async (body: Record<string, unknown>): Promise<string> => {
  const res = await call('/emails', { body: { from: 'Hello <hello@in.example>', ...body } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.id;
};
const receive = async (raw: string, from = 'carol@sender.example') => {
  assert.is((await s.deliver(raw, { from })).code, 250);
};
/** Reads through the running app's store. */
const read = <T>(q: Query<T>) => (restarted?.app ?? s.t.app).store.read(q);
const backlog = () => read(value<number>('SELECT count(*) FROM search_backlog'));

/** Runs a query in a transaction on the stopped box's database: its SQLite file, or its PostgreSQL database. */
async function onStoppedBox<T>(make: () => Query<T>): Promise<T> {
  if (TEST_STORE === 'postgres') {
    const pool = openPool(s.t.env.MAILWRIGHT_DATABASE_URL!, { max: 1 });
    try {
      return await postgresStore(pool).write(make);
    } finally {
      await pool.end();
    }
  }
  const db = new Database(databasePath(s.t.dataDir));
  try {
    return db.transaction(() => runOn(db, make()))();
  } finally {
    db.close();
  }
}

/**
 * The emails whose subject has `tag`, as a kill -9 would have left them: stored, on the backlog, not yet in
 * the full-text index or among the correspondents. How many there are.
 */
function* leftOnBacklog(tag: string): Query<number> {
  const emails = yield* all<{ id: string; search_rowid: number }>('SELECT id, search_rowid FROM emails WHERE subject LIKE ?', `%${tag}%`);
  const postgres = (yield* dialect()) === 'postgres';
  for (const e of emails) {
    if (postgres) yield* run('DELETE FROM email_search WHERE search_rowid = ?', e.search_rowid);
    else {
      yield* run('DELETE FROM email_search WHERE rowid = ?', e.search_rowid);
      yield* run('DELETE FROM email_prefixes WHERE rowid = ?', e.search_rowid);
    }
    yield* run('INSERT INTO search_backlog (search_rowid, email_id) VALUES (?, ?)', e.search_rowid, e.id);
  }
  if (!postgres) yield* run('DELETE FROM correspondents_search WHERE rowid IN (SELECT id FROM correspondents WHERE address LIKE ?)', `%${tag}%`);
  yield* run('DELETE FROM correspondents WHERE address LIKE ?', `%${tag}%`);
  return emails.length;
}

test('a search finds every email the moment it was acknowledged, sent or received', async () => {
  const word = `quokka${Date.now()}`;
  const sent = await Promise.all(Array.from({ length: 30 }, (_, i) => send({ to: [`reader${i}@far.example`], subject: `Sent ${i}`, text: `the ${word} report ${i}` })));
  for (let i = 0; i < 3; i++) await receive(`From: carol@sender.example\r\nTo: ${s.inbox.address}\r\nSubject: Received ${i}\r\n\r\nabout the ${word} too\r\n`);
  // No waiting: the search itself has the writer index what is still on the backlog.
  const all = await found(`query=${word}`);
  assert.is(all.length, 33);
  for (const id of sent) assert.ok(all.includes(id), id);
  assert.equal(await found(`query=${word}&to=reader7@far.example`), [sent[7]]);
  assert.is((await found(`query=${word}&from=carol@sender.example`)).length, 3);
  assert.is((await found(`query=${word.slice(0, 3)}*&direction=out`)).length >= 30, true, 'a prefix too');
  await eventually(async () => (await backlog()) === 0, 5_000, 'the backlog emptied');
});

test('searches in parallel while sends stream in: every one answers, none sees another workspace, bad input is a 400', async () => {
  const word = `wombat${Date.now()}`;
  const other = await seedWorkspace(s.t, { workspace: 'backlog-other' });
  let sending = true;
  const sent: string[] = [];
  const sender = (async () => {
    for (let i = 0; sending && i < 200; i++) sent.push(await send({ to: [`stream${i}@far.example`], subject: `Stream ${i}`, text: `a ${word} in flight` }));
  })();
  const foreign: number[] = [];
  for (let round = 0; round < 5; round++) {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 4 === 3
          ? call(`/emails?query=${word}&to=stream1@far.example`, { key: other.key })
          : call(`/emails?${['query', 'from', 'to'][i % 3]}=${i % 3 ? 'hello@in.example' : word}&limit=100`),
      ),
    );
    for (const r of replies) assert.is(r.status, 200, JSON.stringify(r.body).slice(0, 200));
    replies.forEach((r, i) => i % 4 === 3 && foreign.push(r.body.count));
  }
  const bad = await call(`/emails?query=${'x'.repeat(2000)}&from=${encodeURIComponent('\u0001')}`);
  assert.is(bad.status, 400);
  assert.is(bad.body.error.code, 'validation_error');
  sending = false;
  await sender;
  assert.ok(foreign.every((n) => n === 0), 'another workspace finds none of it');
  assert.is((await found(`query=${word}`)).length, sent.length, 'after the stream, every send is found');
});

test('an email deleted before it was indexed never reaches the index', async () => {
  const word = `narwhal${Date.now()}`;
  await receive(`From: carol@sender.example\r\nTo: ${s.inbox.address}\r\nSubject: Short lived\r\n\r\na ${word} here\r\n`);
  const id = (await read(value<string>('SELECT id FROM emails WHERE subject = ? ORDER BY id DESC', 'Short lived')))!;
  assert.is((await call(`/emails/${id}`, { method: 'DELETE' })).status, 200);
  assert.is(await read(value<number>('SELECT count(*) FROM emails WHERE id = ?', id)), 0, 'the email is gone');
  assert.is(await read(value<number>('SELECT count(*) FROM search_backlog WHERE email_id = ?', id)), 0, 'and its place on the backlog');
  await new Promise((r) => setTimeout(r, 300)); // past the writer's next background run
  assert.equal(await found(`query=${word}`), []);
  const matches = {
    sqlite: 'SELECT count(*) FROM email_search WHERE email_search MATCH ?',
    postgres: "SELECT count(*) FROM email_search WHERE document @@ CAST(? AS tsquery)",
  };
  assert.is(await read(value<number>(matches, word)), 0);
});

test('a backlog left by a stop is indexed at the next start from the stored emails, answering as the index did', async () => {
  const tag = `ibis${Date.now()}`;
  const sent = await send({
    to: [`Tom Reader <tom.${tag}@far.example>`],
    cc: [`cc.${tag}@far.example`],
    bcc: [`bcc.${tag}@far.example`],
    reply_to: `answers.${tag}@in.example`,
    subject: `Sent ${tag} plans`,
    html: `<p>Only <b>HTML</b> about the ${tag}heron migration</p>`,
    attachments: [{ filename: `${tag}-minutes.pdf`, content: Buffer.from('%PDF-1.4').toString('base64') }],
  });
  await receive(
    [
      `From: Dora Sender <dora.${tag}@sender.example>`,
      `To: ${s.inbox.address}`,
      `Cc: Eve <eve.${tag}@sender.example>`,
      `Reply-To: desk.${tag}@sender.example`,
      `Subject: Received ${tag} notes`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `Notes on the ${tag}crane survey, café included.`,
      '--b1',
      `Content-Type: text/csv; name="${tag}-survey.csv"`,
      `Content-Disposition: attachment; filename="${tag}-survey.csv"`,
      '',
      'a,b',
      '--b1--',
      '',
    ].join('\r\n'),
    `dora.${tag}@sender.example`,
  );
  const queries = [
    `query=${tag}heron`, `query=${tag}crane`, `query=cafe ${tag}crane`, `query=${tag}`, `query=plans`, `query=${tag}-minutes.pdf`, `query=${tag}-survey.csv`,
    `query=${tag.slice(0, 4)}*`, `query="Tom Reader"`,
    `to=tom.${tag}@far.example`, `to=cc.${tag}@far.example`, `to=bcc.${tag}@far.example`, `query=answers.${tag}@in.example`, `to=eve.${tag}@sender.example`,
    `from=dora.${tag}@sender.example`, `from=Dora Sender`, `query=desk.${tag}@sender.example`,
  ].map((q) => q.replace(/ /g, '%20'));
  const before = await Promise.all(queries.map(found));
  before.forEach((ids, i) => assert.ok(ids.length > 0, `${queries[i]} finds something before: ${JSON.stringify(ids)}`));
  await s.t.running.stop();
  assert.is(await onStoppedBox(() => value<number>('SELECT count(*) FROM search_backlog')), 0, 'a clean stop leaves no backlog');

  assert.is(await onStoppedBox(() => leftOnBacklog(tag)), 2);

  restarted = await startApp(loadConfig(s.t.env), { log: createLog({ level: 'error', write: () => {} }) });
  api = `http://127.0.0.1:${restarted.http.port}/api/v1`;
  await eventually(async () => (await backlog()) === 0, 10_000, 'indexed at start, before any search');
  const again = await Promise.all(queries.map(found));
  queries.forEach((q, i) => assert.equal(again[i], before[i], q));
  assert.ok(again[0].includes(sent));
});

test.run();
