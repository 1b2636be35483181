// The store (store.ts) on both engines: the same queries against a data directory's SQLite database and a fresh
// PostgreSQL database (Debian's server, testkit/postgres.ts), each with the box's whole schema. What a resource
// reads must not depend on the engine: numbers, 1/0 for booleans, Buffers, rows changed, refusals, rollbacks.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { migratePostgres } from './postgres-migrate.ts';
import { listMigrations } from './migrate.ts';
import { fileURLToPath } from 'node:url';
import { openPool, readOn, type PgPool } from './postgres.ts';
import { all, change, column, constraintViolated, dialect, get, plannedForValues, run, value, type Query } from './query.ts';
import { freshDatabase, onBothStores } from '../testkit/postgres.ts';
import { listEmails } from '../emails/list.ts';
import { parseListParams } from '../emails/search-routes.ts';

const { both, opened } = onBothStores();

function* addWorkspace(id: string, name: string): Query<number> {
  return yield* run('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)', id, name, 1_800_000_000_123);
}

both('rows come back alike: 64-bit integers and sums as numbers, EXISTS as 1 or 0, bytes as Buffers', async (s) => {
  assert.is(await s.write(() => addWorkspace('ws_rows', 'rows')), 1);
  const row = await s.read(get<{ id: string; created_at: number; there: number; missing: number; total: number }>(
    `SELECT id, created_at, EXISTS (SELECT 1 FROM workspaces WHERE id = ?) AS there, EXISTS (SELECT 1 FROM workspaces WHERE id = 'none') AS missing,
       (SELECT sum(created_at) FROM workspaces WHERE id = ?) AS total FROM workspaces WHERE id = ?`,
    'ws_rows', 'ws_rows', 'ws_rows',
  ));
  assert.equal(row, { id: 'ws_rows', created_at: 1_800_000_000_123, there: 1, missing: 0, total: 1_800_000_000_123 });
  const bytes = Buffer.from([0, 1, 2, 255]);
  await s.write(() => run('INSERT INTO box_settings (key, value) VALUES (?, ?)', 'bytes', bytes));
  const back = await s.read(value<Buffer>('SELECT value FROM box_settings WHERE key = ?', 'bytes'));
  assert.ok(Buffer.isBuffer(back) && back.equals(bytes), 'a Buffer');
  assert.is(await s.read(value('SELECT count(*) FROM workspaces WHERE id = ?', 'ws_rows')), 1);
  assert.is(await s.read(value('SELECT id FROM workspaces WHERE id = ?', 'none')), undefined);
  assert.is(await s.read(get('SELECT id FROM workspaces WHERE id = ?', 'none')), undefined);
});

both('a camelCase alias keeps its case, wherever the statement names it; strings and named placeholders are left alone', async (s) => {
  await s.write(() => addWorkspace('ws_alias', 'camelCase'));
  const row = await s.read(get<{ workspaceId: string; madeAt: number; said: string }>(
    "SELECT * FROM (SELECT id AS workspaceId, created_at AS madeAt, 'keep someName as it is' AS said FROM workspaces) w WHERE w.workspaceId = @workspaceId",
    { workspaceId: 'ws_alias' },
  ));
  assert.equal(row, { workspaceId: 'ws_alias', madeAt: 1_800_000_000_123, said: 'keep someName as it is' });
});

both('named placeholders, a column, rows changed, the dialect', async (s) => {
  await s.write(function* () {
    for (const n of [1, 2, 3]) yield* addWorkspace(`ws_named_${n}`, `named ${n}`);
  });
  const ids = await s.read(column<string>("SELECT id FROM workspaces WHERE name LIKE 'named %' AND created_at = @at AND id <> @not ORDER BY id", { at: 1_800_000_000_123, not: 'ws_named_2' }));
  assert.equal(ids, ['ws_named_1', 'ws_named_3']);
  assert.is(await s.write(() => run("UPDATE workspaces SET sending_paused_at = 1 WHERE name LIKE 'named %'")), 3);
  assert.is(await s.read(dialect()), s.dialect);
  // A question mark inside a quoted string is not a placeholder.
  assert.equal(await s.read(all("SELECT 'what?' AS q, name FROM workspaces WHERE id = ?", 'ws_named_1')), [{ q: 'what?', name: 'named 1' }]);
});

both('a broken constraint is named alike, and a write that throws leaves nothing behind', async (s) => {
  await s.write(() => addWorkspace('ws_unique', 'unique'));
  const err = await s.write(() => addWorkspace('ws_unique_2', 'unique')).catch((e: unknown) => e);
  assert.is(constraintViolated(err), 'unique');
  const fk = await s.write(() => run("INSERT INTO users (id, workspace_id, email, password_hash, created_at) VALUES ('u_x', 'ws_none', 'x@example.com', 'h', 1)")).catch((e: unknown) => e);
  assert.is(constraintViolated(fk), 'foreign_key');
  const thrown = await s
    .write(function* () {
      yield* addWorkspace('ws_undone', 'undone');
      throw new Error('changed my mind');
    })
    .catch((e: Error) => e.message);
  assert.is(thrown, 'changed my mind');
  assert.is(await s.read(value('SELECT count(*) FROM workspaces WHERE id = ?', 'ws_undone')), 0, 'rolled back');
  // A query can catch a refusal and answer with its own.
  const answered = await s.write(function* () {
    try {
      yield* addWorkspace('ws_unique_3', 'unique');
      return 'added';
    } catch (e) {
      return constraintViolated(e) ?? 'other';
    }
  });
  assert.is(answered, 'unique');
});

both('changes sent without waiting are all made, in order, and the first to fail is the failure, where it is read', async (s) => {
  const made = await s.write(function* () {
    for (let i = 0; i < 20; i++) yield* change('INSERT INTO box_settings (key, value) VALUES (?, ?)', `change_${i}`, Buffer.from([i]));
    yield* change('UPDATE box_settings SET value = ? WHERE key = ?', Buffer.from([99]), 'change_19');
    return yield* column<Buffer>("SELECT value FROM box_settings WHERE key LIKE 'change\\_%' ESCAPE '\\' ORDER BY key");
  });
  assert.is(made.length, 20);
  assert.equal(made.find((v) => v[0] === 99) && made.filter((v) => v[0] === 19).length, 0, 'the update came after its insert');
  // A change that fails: the statement after it throws that failure, not "transaction aborted", and the whole
  // write is undone.
  const failed = await s
    .write(function* () {
      yield* change('INSERT INTO box_settings (key, value) VALUES (?, ?)', 'change_new', Buffer.from([1]));
      yield* change('INSERT INTO box_settings (key, value) VALUES (?, ?)', 'change_0', Buffer.from([1]));
      yield* change('INSERT INTO box_settings (key, value) VALUES (?, ?)', 'change_newer', Buffer.from([1]));
      return yield* value('SELECT count(*) FROM box_settings');
    })
    .catch((e: unknown) => e);
  assert.is(constraintViolated(failed), 'unique');
  assert.is(await s.read(value("SELECT count(*) FROM box_settings WHERE key IN ('change_new', 'change_newer')")), 0, 'rolled back');
  // At the end of a query too.
  const last = await s.write(() => change('INSERT INTO box_settings (key, value) VALUES (?, ?)', 'change_1', Buffer.from([1]))).catch((e: unknown) => e);
  assert.is(constraintViolated(last), 'unique');
});

both('a published template version cannot be changed or deleted while its template exists', async (s) => {
  await s.write(function* () {
    yield* addWorkspace('ws_tmpl', 'templates');
    yield* run("INSERT INTO templates (id, workspace_id, key, name, created_at, updated_at) VALUES ('tmpl_1', 'ws_tmpl', 'Welcome', 'w', 1, 1)");
    yield* run(`INSERT INTO template_versions (id, template_id, workspace_id, state, number, name, subject_template, html_template, text_template, variables_json, sample_data_json, message_class, created_at, updated_at)
      VALUES ('tmplv_1', 'tmpl_1', 'ws_tmpl', 'published', 1, 'w', 's', 'h', 't', '[]', '{}', 'transactional', 1, 1)`);
  });
  assert.ok(await s.write(() => run("UPDATE template_versions SET name = 'x' WHERE id = 'tmplv_1'")).then(() => false, () => true), 'update refused');
  assert.ok(await s.write(() => run("DELETE FROM template_versions WHERE id = 'tmplv_1'")).then(() => false, () => true), 'delete refused');
  assert.is(await s.write(() => run("DELETE FROM templates WHERE id = 'tmpl_1'")), 1);
  assert.is(await s.read(value("SELECT count(*) FROM template_versions WHERE id = 'tmplv_1'")), 0, 'gone with its template');
  // Keys are unique whatever their case.
  await s.write(() => run("INSERT INTO templates (id, workspace_id, key, name, created_at, updated_at) VALUES ('tmpl_2', 'ws_tmpl', 'Hello', 'h', 1, 1)"));
  const clash = await s.write(() => run("INSERT INTO templates (id, workspace_id, key, name, created_at, updated_at) VALUES ('tmpl_3', 'ws_tmpl', 'HELLO', 'h', 1, 1)")).catch((e: unknown) => e);
  assert.is(constraintViolated(clash), 'unique');
});

both('concurrent read-then-write transactions each see the other: no update is lost', async (s) => {
  await s.write(() => run("INSERT INTO box_settings (key, value) VALUES ('counter', ?)", Buffer.from('0')));
  function* increment(): Query<void> {
    const now = Number(String(yield* value<Buffer>("SELECT value FROM box_settings WHERE key = 'counter'")));
    yield* run("UPDATE box_settings SET value = ? WHERE key = 'counter'", Buffer.from(String(now + 1)));
  }
  await Promise.all(Array.from({ length: 40 }, () => s.write(increment)));
  assert.is(String(await s.read(value<Buffer>("SELECT value FROM box_settings WHERE key = 'counter'"))), '40');
});

both('a snapshot read sees one moment, a write between its statements notwithstanding', async (s) => {
  await s.write(() => addWorkspace('ws_snap', 'snapshot'));
  const read = (snapshot: boolean) =>
    s.read(
      (function* () {
        const before = yield* value<number>("SELECT count(*) FROM workspaces WHERE id LIKE 'ws_snap%'");
        // On SQLite the query runs within one turn, so nothing can come between; on PostgreSQL this write is
        // committed from another connection while the read waits for its next statement.
        if (s.dialect === 'postgres') yield* value('SELECT pg_sleep(0.2)');
        const after = yield* value<number>("SELECT count(*) FROM workspaces WHERE id LIKE 'ws_snap%'");
        return [before, after];
      })(),
      { snapshot },
    );
  const [counts] = await Promise.all([read(true), new Promise((r) => setTimeout(r, 50)).then(() => s.write(() => addWorkspace('ws_snap_2', 'snapshot 2')))]);
  assert.equal(counts, [1, 1]);
  if (s.dialect === 'postgres') {
    const [moving] = await Promise.all([read(false), new Promise((r) => setTimeout(r, 50)).then(() => s.write(() => addWorkspace('ws_snap_3', 'snapshot 3')))]);
    assert.equal(moving, [2, 3], 'without a snapshot the second statement sees the write');
  }
});

/** Runs `work` on one connection to a new empty PostgreSQL database, dropped afterwards. */
async function onFreshDatabase(work: (one: PgPool) => Promise<void>): Promise<void> {
  const fresh = await freshDatabase();
  const one = openPool(fresh.url, { max: 1 });
  try {
    await work(one);
  } finally {
    await one.end();
    await fresh.drop();
  }
}

test('the PostgreSQL schema has every table, column and index SQLite has', async () => {
  const { db, pool } = opened();
  const sqliteTables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' AND name NOT GLOB '*_search_*' AND name NOT GLOB 'email_prefixes_*'").pluck().all() as string[];
  const pgColumns = (await pool.query("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'")).rows as Array<{ table_name: string; column_name: string }>;
  for (const table of sqliteTables) {
    const want = (db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[]).sort();
    const have = pgColumns.filter((c) => c.table_name === table).map((c) => c.column_name).sort();
    assert.equal(have, want, `columns of ${table}`);
  }
  const sqliteIndexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").pluck().all() as string[];
  const pgIndexes = new Set((await pool.query("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")).rows.map((r: { indexname: string }) => r.indexname));
  assert.equal(sqliteIndexes.filter((i) => !pgIndexes.has(i)), [], 'indexes missing in PostgreSQL');
});

test('migrating again applies nothing, and nodes migrating at once apply each migration once', async () => {
  assert.equal(await migratePostgres(opened().pool), []);
  const fresh = await freshDatabase();
  const pools = [openPool(fresh.url, { max: 2 }), openPool(fresh.url, { max: 2 })];
  try {
    const applied = await Promise.all(pools.map((p) => migratePostgres(p)));
    const every = listMigrations(fileURLToPath(new URL('./postgres/', import.meta.url))).map((m) => m.version);
    assert.equal(applied.flat().sort((a, b) => a - b), every, 'each once, by whichever node came first');
  } finally {
    await Promise.all(pools.map((p) => p.end()));
    await fresh.drop();
  }
});

test('PostgreSQL: a statement planned for its values is never kept prepared; another is, once per connection', () =>
  onFreshDatabase(async (one) => {
    const kept = () => readOn(one, column<string>('SELECT statement FROM pg_prepared_statements'));
    for (const n of [1, 2, 3, 4, 5, 6, 7]) {
      assert.equal(await readOn(one, plannedForValues(all<{ n: number }>('SELECT ?::int AS n /* each time */', n))), [{ n }]);
      assert.equal(await readOn(one, all<{ n: number }>('SELECT ?::int AS n /* kept */', n)), [{ n }]);
    }
    const statements = await kept();
    assert.is(statements.filter((t) => t.includes('each time')).length, 0);
    assert.is(statements.filter((t) => t.includes('kept')).length, 1);
  }));

test('PostgreSQL 0048: documents indexed before move into their rows, each the same, still found', () =>
  onFreshDatabase(async (one) => {
    // The schema as it stood at 0047, by hand, then a document too long to stay in its row there.
    const earlier = listMigrations(fileURLToPath(new URL('./postgres/', import.meta.url))).filter((m) => m.version <= 47);
    await one.query('CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    for (const m of earlier) {
      await one.query(m.sql);
      await one.query('INSERT INTO schema_migrations VALUES ($1, $2, 0)', [m.version, m.name]);
    }
    await one.query("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_1', 'one', 0)");
    const words = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' ');
    await one.query("INSERT INTO email_search VALUES (1, 'ws_1', to_tsvector('simple', $1)), (2, 'ws_1', 'short'::tsvector)", [words]);
    const before = (await one.query('SELECT search_rowid, document::text FROM email_search ORDER BY 1')).rows;
    const stored = async () => (await one.query("SELECT attstorage FROM pg_attribute WHERE attrelid = 'email_search'::regclass AND attname = 'document'")).rows[0].attstorage;
    assert.is(await stored(), 'x');

    assert.ok((await migratePostgres(one)).includes(48));
    assert.is(await stored(), 'm', 'kept in the row');
    assert.equal((await one.query('SELECT search_rowid, document::text FROM email_search ORDER BY 1')).rows, before);
    assert.equal((await one.query("SELECT search_rowid FROM email_search WHERE document @@ 'word599'::tsquery")).rows, [{ search_rowid: 1 }]);
    const indexes = (await one.query("SELECT indexname FROM pg_indexes WHERE tablename = 'email_search' ORDER BY 1")).rows.map((r) => r.indexname);
    assert.equal(indexes, ['email_search_document', 'email_search_pkey']);
  }));

test('PostgreSQL: a full-text row over TOAST\'s threshold keeps its workspace id in the row (nothing out of line)', () =>
  onFreshDatabase(async (one) => {
    await migratePostgres(one);
    await one.query("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_01M8P2CCMAT8BTVTCSQPV6K65R', 'one', 0)");
    // Words that do not compress to under 2 KB, as a long email's do.
    const words = Array.from({ length: 300 }, (_, i) => `w${((i + 1) * 2654435761) % 4294967296}x${i}`).join(' ');
    await one.query("INSERT INTO email_search VALUES (1, 'ws_01M8P2CCMAT8BTVTCSQPV6K65R', to_tsvector('simple', $1))", [words]);
    assert.ok((await one.query('SELECT pg_column_size(document) AS n FROM email_search')).rows[0].n > 2048, 'a row over the threshold');
    const outOfLine = await one.query("SELECT pg_relation_size(reltoastrelid) AS n FROM pg_class WHERE relname = 'email_search'");
    assert.is(Number(outOfLine.rows[0].n), 0);
    assert.equal((await one.query("SELECT search_rowid FROM email_search WHERE document @@ 'w2654435761x0'::tsquery")).rows, [{ search_rowid: 1 }]);
  }));

test('PostgreSQL: an email\'s updates after it is stored leave its indexes alone, and a send\'s text bodies are stored with lz4', () =>
  onFreshDatabase(async (one) => {
    await migratePostgres(one);
    await one.query("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_1', 'one', 0)");
    // In one transaction, whose own counts pg_stat_xact_user_tables gives.
    const client = await one.connect();
    let rows: Array<{ updated: string; hot: string }>;
    try {
      await client.query('BEGIN');
      for (let i = 0; i < 200; i++) {
        const id = `em_${i}`;
        await client.query("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, created_at) VALUES ($1, 'ws_1', 'out', 'sent', $1, $1, 'a@b.example', 0)", [id]);
        // Signed, then attempted: what the queue writes to every sent email.
        await client.query('UPDATE emails SET size = 1000, signed_at = 1 WHERE id = $1', [id]);
        await client.query("UPDATE emails SET status = 'delivered' WHERE id = $1", [id]);
      }
      ({ rows } = await client.query("SELECT n_tup_upd AS updated, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables WHERE relname = 'emails'"));
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    assert.is(Number(rows[0]!.updated), 400);
    assert.is(Number(rows[0]!.hot), 400, 'heap-only: no index entry written');
    const text = Array.from({ length: 2000 }, (_, i) => `line ${i % 50} of the letter`).join('\n');
    await one.query('INSERT INTO email_contents (email_id, text_body) VALUES ($1, $2)', ['em_0', Buffer.from(text)]);
    assert.is((await one.query('SELECT pg_column_compression(text_body) AS method FROM email_contents')).rows[0].method, 'lz4');
  }));

test('PostgreSQL: a full-text search is planned with the server\'s cost of parallel workers, in its own transaction only', () =>
  onFreshDatabase(async (one) => {
    await migratePostgres(one);
    await one.query("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_1', 'one', 0)");
    const setting = () => value<string>('SHOW parallel_setup_cost');
    // The setting each statement of the list was planned with, asked just before it on the same connection.
    const seen: Array<{ search: boolean; cost: string }> = [];
    function* spied<T>(q: Query<T>): Query<T> {
      let step = q.next();
      while (!step.done) {
        if (step.value.want !== 'change') seen.push({ search: step.value.planEachTime === true, cost: (yield* setting())! });
        step = q.next(yield step.value);
      }
      return step.value;
    }
    const during = await readOn(
      one,
      (function* () {
        const list = yield* spied(listEmails('ws_1', parseListParams({ query: 'invoice' })));
        return { list, cost: yield* setting() };
      })(),
      true,
    );
    assert.equal(during.list.data, []);
    assert.equal(seen.filter((s) => s.search).map((s) => s.cost), ['1000'], 'the search');
    assert.ok(seen.filter((s) => !s.search).every((s) => s.cost === '10000'), "the page's other statements");
    assert.is(during.cost, '10000', 'after the search');
    assert.is(await readOn(one, setting()), '10000', 'the connection keeps its own afterwards');
  }));

test.run();
