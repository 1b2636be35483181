// Running a query (query.ts) on the box's SQLite connection: every statement is answered at once, so the query
// runs to its end synchronously, in the transaction the caller holds, with db.prepare's statement cache (open.ts).
import type { Db } from './open.ts';
import { runSync, textFor, type Query, type Statement } from './query.ts';

/** Runs `q` on `db` now and returns what it returns. */
export function runOn<T>(db: Db, q: Query<T>): T {
  return runSync(q, (s) => answer(db, s));
}

function answer(db: Db, s: Statement): unknown {
  if (s.want === 'dialect') return 'sqlite';
  if (s.want === 'memo') return null;
  const text = textFor(s.sql, 'sqlite');
  if (s.want === 'exec') return void db.exec(text);
  const statement = db.prepare(text);
  switch (s.want) {
    case 'get':
      return statement.get(...s.params);
    case 'all':
      return statement.all(...s.params);
    case 'value':
      return statement.pluck().get(...s.params);
    case 'column':
      return statement.pluck().all(...s.params);
    case 'run':
      return statement.run(...s.params).changes;
    case 'change':
      return void statement.run(...s.params);
  }
}
