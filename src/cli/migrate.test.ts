// Moving up: a box that ran on SQLite (received mail, sent mail, a webhook, a template, a label, keys) is
// copied by `mailwright migrate --to` into an empty PostgreSQL database, and then serves the same answers from
// it: the same lists, the same email, the same search, the same key, and it keeps sending. The refusals: while
// serve runs, into a database that is not empty, a box already on PostgreSQL.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, rmSync } from 'node:fs';
import { ownStores, request, runCli, startAppProcess, tempDir, testEnv, type AppProcess } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { freshDatabase } from '../testkit/postgres.ts';
import { eventually } from '../testkit/outbound.ts';
import { compareCopy } from '../db/copy.ts';
import { openDatabase } from '../db/open.ts';
import { openPool } from '../db/postgres.ts';

let s: InboundScene;
let target: { url: string; drop: () => Promise<void> };
test.before(async () => {
  // On SQLite whatever store the suite runs on: the box to move.
  s = await startInboundScene({ env: { MAILWRIGHT_DATABASE_URL: '' } });
  target = await freshDatabase();
});
test.after(async () => {
  await s.stop();
  await target.drop();
});

/** What a user of the API sees of the box, read through `api` with the scene's key. */
async function seen(api: string) {
  const get = async (path: string) => {
    const r = await request(`${api}${path}`, { key: s.key });
    assert.is(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const emails = await get('/emails?limit=100');
  const first = await get(`/emails/${emails.data.at(-1).id}`);
  return {
    emails: emails.data.map((e: { id: string; subject: string; status: string }) => [e.id, e.subject, e.status]),
    first: { subject: first.subject, text: first.text, from: first.from },
    labelled: (await get('/emails?label=finance')).data.map((e: { id: string }) => e.id),
    search: (await get('/emails?query=lighthouse')).data.map((e: { id: string }) => e.id),
    domains: (await get('/domains')).data.map((d: { name: string; status: string }) => [d.name, d.status]),
    inboxes: (await get('/inboxes')).data.map((i: { address: string }) => i.address),
    webhooks: (await get('/webhooks')).data.map((w: { url: string }) => w.url),
    templates: (await get('/templates')).data.map((t: { name: string }) => t.name),
    labels: (await get('/labels')).data.map((l: { name: string }) => l.name),
  };
}

let before: Awaited<ReturnType<typeof seen>>;
ownStores(test)('a box on SQLite with mail of every kind; migrate refuses while serve runs on it', async () => {
  s.routeTo('dest.test');
  await s.receive('The lighthouse keeper', { body: 'The lighthouse keeper writes about the storm.' });
  const other = await s.receive('Quarterly numbers', { body: 'Figures for the quarter.' });
  for (const i of [1, 2]) assert.is((await s.send({ from: `app@${s.domain.name}`, to: [`reader${i}@dest.test`], subject: `Hello ${i}`, text: 'From the lighthouse' })).status, 200);
  await eventually(() => s.sink.messages.length === 2, 10_000, 'both sends delivered');
  assert.is((await request(`${s.t.api}/webhooks`, { key: s.key, body: { url: 'https://hooks.example/in', events: ['email.received'] } })).status, 201);
  assert.is((await request(`${s.t.api}/templates`, { key: s.key, body: { name: 'Welcome', key: 'welcome', starter: 'welcome' } })).status, 201);
  const labelled = await request(`${s.t.api}/emails/${other}/labels`, { key: s.key, body: { add: ['Finance'] } });
  assert.is(labelled.status, 200, JSON.stringify(labelled.body));
  before = await seen(s.t.api);
  assert.is(before.emails.length, 4);
  assert.is(before.search.length, 3, 'the received letter and both sends name the lighthouse');

  const refused = await runCli(['migrate', '--to', target.url], s.t.env);
  assert.is(refused.code, 78, refused.stderr);
  assert.match(refused.stderr, /serve is running on .* stop it first/);
});

ownStores(test)('migrate --to copies every table, checks each, and says what to change; the password is never printed', async () => {
  await s.t.running.stop();
  const res = await runCli(['migrate', '--to', target.url], s.t.env);
  assert.is(res.code, 0, res.stderr + res.stdout);
  assert.match(res.stdout, /emails: 4 rows/);
  assert.match(res.stdout, /every table's count and checksum match/);
  assert.match(res.stdout, /database_url = "postgres:\/\/mailwright:\*+@/);
  assert.not.match(res.stdout + res.stderr, /:mailwright@/, 'the password');

  const again = await runCli(['migrate', '--to', target.url], s.t.env);
  assert.is(again.code, 78);
  assert.match(again.stderr, /is not empty/);
  const onPostgres = await runCli(['migrate', '--to', target.url], { ...s.t.env, MAILWRIGHT_DATABASE_URL: target.url });
  assert.is(onPostgres.code, 78);
  assert.match(onPostgres.stderr, /already keeps its state in PostgreSQL/);
  const unreachable = await runCli(['migrate', '--to', 'postgres://mailwright:secretpw@127.0.0.1:1/box'], s.t.env);
  assert.is(unreachable.code, 78);
  assert.match(unreachable.stderr, /cannot reach the database postgres:\/\/mailwright@127\.0\.0\.1:1\/box/);
  assert.not.match(unreachable.stderr, /secretpw/);
  const empty = tempDir();
  const none = await runCli(['migrate', '--to', target.url], { ...s.t.env, MAILWRIGHT_DATA_DIR: empty });
  assert.is(none.code, 78);
  assert.match(none.stderr, /no database at/);
  assert.equal(readdirSync(empty), [], 'nothing made in an empty data directory');
  rmSync(empty, { recursive: true, force: true });
});

ownStores(test)('the check finds a row that differs, and only its table', async () => {
  const db = openDatabase(s.t.dataDir);
  const pool = openPool(target.url, { max: 2 });
  try {
    await pool.query("UPDATE emails SET subject = 'Changed' WHERE subject = 'Quarterly numbers'");
    // The move itself is in PostgreSQL's audit log only.
    const checked = (await compareCopy(db, pool)).filter((c) => c.table !== 'audit_log');
    const wrong = checked.filter((c) => !c.same);
    assert.equal(wrong.map((c) => [c.table, c.sqliteRows, c.postgresRows]), [['emails', 4, 4]]);
    await pool.query("UPDATE emails SET subject = 'Quarterly numbers' WHERE subject = 'Changed'");
    assert.ok((await compareCopy(db, pool)).every((c) => c.same || c.table === 'audit_log'));
  } finally {
    db.close();
    await pool.end();
  }
});

ownStores(test)('the box started on PostgreSQL answers as before, searches, and keeps sending', async () => {
  const dir = tempDir();
  let node: AppProcess | null = null;
  try {
    node = await startAppProcess(testEnv(dir, { ...s.t.env, MAILWRIGHT_DATA_DIR: dir, MAILWRIGHT_DATABASE_URL: target.url }));
    assert.equal(await seen(`${node.url}/api/v1`), before);
    const sent = await request(`${node.url}/api/v1/emails`, { key: s.key, body: { from: `app@${s.domain.name}`, to: ['reader3@dest.test'], subject: 'After the move', text: 'Still here' } });
    assert.is(sent.status, 200, JSON.stringify(sent.body));
    await eventually(() => s.sink.messages.length === 3, 10_000, 'a send after the move delivered');
    const list = (await request(`${node.url}/api/v1/emails?limit=100`, { key: s.key })).body.data;
    assert.is(list[0].id, sent.body.id, 'the newest first');
  } finally {
    await node?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
