// Reads side by side (query.ts together) on both stores: the same results as one after the other, a refusal
// thrown into the query that made it, and on PostgreSQL the statements of each step leaving in one write.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { get, nothing, run, together, value, type Query } from './query.ts';
import { onBothStores, socketWrites } from '../testkit/postgres.ts';

const { stores, both } = onBothStores((store) =>
  store.write(function* () {
    yield* run('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)', 'ws_one', 'one', 1);
    yield* run('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)', 'ws_two', 'two', 2);
  }),
);

const nameOf = (id: string) => value<string>('SELECT name FROM workspaces WHERE id = ?', id);

/** Two reads, the second chosen by the first's answer. */
function* nameThenCreated(id: string): Query<[string | undefined, number | undefined]> {
  const name = yield* nameOf(id);
  const created = yield* value<number>('SELECT created_at FROM workspaces WHERE name = ?', name ?? '');
  return [name, created];
}

both('queries side by side return what each returns, in order, whatever their number of steps', async (s) => {
  const [one, steps, none, missing] = await s.read(together(nameOf('ws_one'), nameThenCreated('ws_two'), nothing(), get('SELECT id FROM workspaces WHERE id = ?', 'ws_none')));
  assert.is(one, 'one');
  assert.equal(steps, ['two', 2]);
  assert.is(none, undefined);
  assert.is(missing, undefined);
});

both('a refused statement is thrown into its own query, which may answer it; one it does not answer ends them all', async (s) => {
  function* caught(): Query<string> {
    try {
      yield* value('SELECT no_such_column FROM workspaces');
      return 'not refused';
    } catch (err) {
      return `refused: ${(err as { code?: string }).code}`;
    }
  }
  const [name, answer] = await s.read(together(nameOf('ws_one'), caught()));
  assert.is(name, 'one');
  assert.match(answer, /^refused: /);
  const err = await s.read(together(nameOf('ws_one'), value('SELECT no_such_column FROM workspaces'))).then(() => null, (e: Error) => e);
  assert.ok(err, 'the refusal reached the caller');
});

test('postgres: each step of the queries side by side leaves in one write to the server', async () => {
  const store = stores.find((s) => s.dialect === 'postgres')!;
  const writesOf = (q: Query<unknown>) => socketWrites(() => store.read(q));
  assert.is(await writesOf(together(nameOf('ws_one'), nameOf('ws_two'), nameOf('ws_none'))), 1, 'three reads of one step: one write');
  assert.is(await writesOf(together(nameOf('ws_one'), nameThenCreated('ws_two'))), 2, 'the second step of one of them: one more');
  const oneByOne = function* () {
    yield* nameOf('ws_one');
    yield* nameOf('ws_two');
    yield* nameOf('ws_none');
  };
  assert.is(await writesOf(oneByOne()), 3, 'the same reads one after the other: one write each');
});

test.run();
