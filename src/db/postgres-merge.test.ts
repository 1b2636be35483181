// One-row INSERTs of a group commit merged into multi-row statements on PostgreSQL: fewer statements, and every
// other statement of the transaction still sees exactly what it saw before (held rows are written first when it
// names their table or one related by a key; parents before children; a failure still refuses only its own write).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freshDatabase, statementsSent } from '../testkit/postgres.ts';
import { PostgresCommit } from './postgres-commit.ts';
import { openPool, type PgPool } from './postgres.ts';
import { mergedText, oneRowInsert, schemaMap } from './postgres-merge.ts';
import { change, exec, run, value, type Query } from './query.ts';

let pool: PgPool;
let drop: () => Promise<void>;
let commits: PostgresCommit;

test.before(async () => {
  const fresh = await freshDatabase();
  drop = fresh.drop;
  pool = openPool(fresh.url, { max: 4 });
  await pool.query(`
    CREATE TABLE parents (id TEXT PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE kids (n INTEGER PRIMARY KEY, parent TEXT NOT NULL REFERENCES parents(id) ON DELETE CASCADE, note TEXT);
    CREATE TABLE tallies (k TEXT PRIMARY KEY, n BIGINT NOT NULL, last TEXT, first TEXT);
    CREATE TABLE audited (n INTEGER PRIMARY KEY);
    CREATE TABLE audit (n INTEGER);
    CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES ((SELECT count(*) FROM kids)); RETURN NEW; END $$;
    CREATE TRIGGER audited_row AFTER INSERT ON audited FOR EACH ROW EXECUTE FUNCTION audit_row();`);
  commits = new PostgresCommit(pool);
});
test.after(async () => {
  await pool.end();
  await drop();
});
test.before.each(async () => {
  await pool.query('DELETE FROM kids; DELETE FROM parents; DELETE FROM tallies; DELETE FROM audited; DELETE FROM audit');
});

const addParent = (id: string) => change('INSERT INTO parents (id, name) VALUES (?, ?)', id, `parent ${id}`);
const addKid = (n: number, parent: string) => change('INSERT INTO kids (n, parent, note) VALUES (?, ?, ?)', n, parent, `kid ${n}`);
const count = async (table: string) => Number((await pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);

test('twenty writes of a parent and two kids each: three INSERTs in their transaction, not sixty', async () => {
  await commits.run(() => addParent('warm-up')); // the schema is read at the first commit
  const sent = await statementsSent(() =>
    Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        commits.run(function* () {
          yield* addParent(`p${i}`);
          yield* addKid(2 * i, `p${i}`);
          yield* addKid(2 * i + 1, `p${i}`);
        }),
      ),
    ),
  );
  const inserts = sent.filter((s) => s.startsWith('INSERT'));
  assert.is(inserts.length, 2, sent.join('\n'));
  assert.ok(inserts[0]!.startsWith('INSERT INTO parents') && inserts[1]!.startsWith('INSERT INTO kids'), 'parents first');
  assert.is(sent.length, 4, 'with BEGIN and COMMIT');
  assert.equal([await count('parents'), await count('kids')], [21, 40]);
});

test('a statement that names a held row\'s table, or one related by a key, sees the row', async () => {
  await commits.run(() => addParent('a'));
  let answers: unknown[] = [];
  const sent = await statementsSent(async () => (answers = await Promise.all([
    commits.run(() => addKid(1, 'a')),
    commits.run(() => value<number>('SELECT count(*) FROM kids')),
    // The parent's table: a delete there cascades to the held kid, which must be in the table by then.
    commits.run(function* (): Query<number> {
      yield* run('DELETE FROM parents WHERE id = ?', 'a');
      return Number(yield* value<number>('SELECT count(*) FROM kids'));
    }),
  ])));
  const [, seen, kidsSeen] = answers;
  assert.not.ok(sent.includes('ROLLBACK'), 'committed at the first attempt');
  assert.is(Number(seen), 1, 'the count of kids saw the one held before it');
  assert.is(kidsSeen, 0, 'the delete of its parent took the held kid with it');
  assert.equal([await count('parents'), await count('kids')], [0, 0]);
});

test('a kid held before its parent\'s row is written after it, whichever write held which first', async () => {
  await commits.run(() => addParent('old'));
  const sent = await statementsSent(() => Promise.all([commits.run(() => addKid(1, 'old')), commits.run(() => addParent('new')), commits.run(() => addKid(2, 'new'))]));
  assert.not.ok(sent.includes('ROLLBACK'), 'committed at the first attempt');
  assert.is(sent.filter((s) => s.startsWith('INSERT')).length, 2);
  assert.equal((await pool.query('SELECT n, parent FROM kids ORDER BY n')).rows, [{ n: 1, parent: 'old' }, { n: 2, parent: 'new' }]);
});

test('a merged INSERT that fails refuses only the write whose row broke it; the others commit', async () => {
  await commits.run(() => addParent('p'));
  await commits.run(() => addKid(5, 'p'));
  const outcomes = await Promise.allSettled([1, 5, 2, 3].map((n) => commits.run(() => addKid(n, 'p'))));
  assert.equal(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
  assert.is(((outcomes[1] as PromiseRejectedResult).reason as { code?: string }).code, '23505');
  assert.equal((await pool.query('SELECT n FROM kids ORDER BY n')).rows.map((r) => r.n), [1, 2, 3, 5]);
});

test('upserts of one key in a group commit add up, or the later one wins, as run one by one; DO NOTHING keeps the first', async () => {
  await commits.run(() => addParent('warm-up'));
  const tally = (i: number) => change('INSERT INTO tallies (k, n, last, first) VALUES (?, ?, ?, ?) ON CONFLICT (k) DO UPDATE SET n = tallies.n + excluded.n, last = excluded.last', i % 2 ? 'odd' : 'even', i, `w${i}`, `w${i}`);
  await commits.run(() => tally(100));
  const sent = await statementsSent(() =>
    Promise.all([
      ...Array.from({ length: 10 }, (_, i) => commits.run(() => tally(i))),
      ...['first', 'second'].map((name) => commits.run(() => change('INSERT INTO parents (id, name) VALUES (?, ?) ON CONFLICT DO NOTHING', 'same', name))),
    ]),
  );
  assert.is(sent.filter((s) => s.startsWith('INSERT')).length, 2, sent.join('\n'));
  assert.equal((await pool.query('SELECT k, n, last, first FROM tallies ORDER BY k')).rows, [
    { k: 'even', n: 100 + 0 + 2 + 4 + 6 + 8, last: 'w8', first: 'w100' },
    { k: 'odd', n: 1 + 3 + 5 + 7 + 9, last: 'w9', first: 'w1' },
  ]);
  assert.equal((await pool.query("SELECT name FROM parents WHERE id = 'same'")).rows, [{ name: 'first' }]);
});

test('a savepoint rolled back undoes the rows held after it, not those held before it', async () => {
  await commits.run(() => addParent('p'));
  const sent = await statementsSent(() => Promise.all([
    commits.run(() => addKid(1, 'p')),
    commits.run(function* () {
      yield* change('SAVEPOINT maybe');
      yield* addKid(2, 'p');
      try {
        yield* run('SELECT 1 / 0');
      } catch {
        yield* exec('ROLLBACK TO SAVEPOINT maybe; RELEASE SAVEPOINT maybe');
      }
      yield* addKid(3, 'p');
      yield* addKid(4, 'p');
    }),
  ]));
  assert.not.ok(sent.includes('ROLLBACK'), 'committed at the first attempt');
  assert.equal((await pool.query('SELECT n FROM kids ORDER BY n')).rows.map((r) => r.n), [1, 3, 4]);
  assert.ok(sent.some((s) => s.includes('($4, $5, $6)')), 'rows held again after the savepoint was released');
});

test('a table with a row trigger is never merged, and its trigger sees the rows held before it', async () => {
  await commits.run(() => addParent('p'));
  const sent = await statementsSent(() => Promise.all([commits.run(() => addKid(1, 'p')), ...[1, 2, 3].map((n) => commits.run(() => change('INSERT INTO audited (n) VALUES (?)', n)))]));
  assert.is(sent.filter((s) => s.startsWith('INSERT INTO audited')).length, 3);
  assert.equal((await pool.query('SELECT n FROM audit')).rows.map((r) => r.n), [1, 1, 1], 'each trigger counted the kid held before');
});

test('which statements are merged, and how', () => {
  const schema = schemaMap(['workspaces', 'emails', 'deliveries', 'audited'], [{ child: 'emails', parent: 'workspaces' }, { child: 'deliveries', parent: 'emails' }], ['audited']);
  assert.equal([...schema.related.get('emails')!].sort(), ['deliveries', 'emails', 'workspaces']);
  assert.equal([...schema.ancestors.get('deliveries')!].sort(), ['emails', 'workspaces']);
  assert.equal(['workspaces', 'emails', 'deliveries'].map((t) => schema.depth.get(t)), [0, 1, 2]);
  const shape = oneRowInsert("INSERT INTO emails (id, note, n) VALUES ($1, '', CAST($2 AS bigint))", schema)!;
  assert.equal(oneRowInsert('INSERT INTO emails (id, n, m) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET n = emails.n + excluded.n, m = excluded.m', schema)?.combine, { key: [0], last: [2], add: [1] });
  assert.ok(oneRowInsert('INSERT INTO emails (id) VALUES ($1) ON CONFLICT DO NOTHING', schema));
  assert.is(mergedText(shape, 3, 2), "INSERT INTO emails (id, note, n) VALUES ($1, '', CAST($2 AS bigint)), ($3, '', CAST($4 AS bigint)), ($5, '', CAST($6 AS bigint))");
  for (const kept of [
    'INSERT INTO emails (id) VALUES ($1) RETURNING id',
    'INSERT INTO emails (id, n) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET n = max(emails.n, excluded.n)',
    'INSERT INTO emails (id, n) VALUES ($1, 1) ON CONFLICT (id) DO UPDATE SET n = emails.n + excluded.n',
    'INSERT INTO emails (id, n) VALUES ($1, (SELECT count(*) FROM deliveries))',
    'INSERT INTO emails (id) SELECT $1',
    'INSERT INTO audited (n) VALUES ($1)',
    'INSERT INTO unknown (n) VALUES ($1)',
    'UPDATE emails SET id = $1',
  ]) {
    assert.is(oneRowInsert(kept, schema), null, kept);
  }
});

test.run();
