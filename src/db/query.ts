// Statements as data. A resource's SQL is written once, in a generator function that yields each statement
// and gets its rows back (`const row = yield* get<Row>('SELECT ...', id)`); the store that runs it decides
// how: SQLite answers at once on its connection, so a query runs to the end synchronously, within one turn of
// the event loop, as the code always did; PostgreSQL answers each statement over the network, on the one
// connection that holds the query's transaction. The resource never names a connection, so it cannot run a
// statement outside the transaction it is in, and it cannot wait for anything but the database: a query is
// only database work, which is what lets a store run it again (a group commit's rerun, a serialization retry).
// docs/architecture.md, "The store".

/** Which SQL the store speaks. */
export type Dialect = 'sqlite' | 'postgres';

/** SQL both stores take, or one text for each where they differ. Placeholders are `?`, or `@name` with an object. */
export type Sql = string | { readonly sqlite: string; readonly postgres: string };

/** Positional values, or one object of named values for `@name` placeholders. */
export type Params = unknown[] | [Record<string, unknown>];

/**
 * What a statement is asked for: a row, all rows, the first column of the first row or of every row, the rows
 * changed, nothing (a change, or several statements), no statement but the store's dialect or the transaction's
 * memo, or the answers of several statements sent at once (`many`, from together).
 */
export type Want = 'get' | 'all' | 'value' | 'column' | 'run' | 'change' | 'exec' | 'dialect' | 'memo' | 'many';

export interface Statement {
  readonly want: Want;
  readonly sql: Sql;
  readonly params: Params;
  /** Planned for its values at every run (plannedForValues), never from a plan kept for any value. */
  readonly planEachTime?: true;
  /** `many`: statements sent together, answered each with its Settled (together). */
  readonly many?: readonly Statement[];
}

/** How one statement of a `many` ended. */
export type Settled = { value: unknown } | { error: unknown };

/** Database work that ends with a T: yield* it from another query, or hand it to a store to run. */
export type Query<T> = Generator<Statement, T, unknown>;

/** The first row, or undefined. */
export function* get<R>(sql: Sql, ...params: Params): Query<R | undefined> {
  return (yield { want: 'get', sql, params }) as R | undefined;
}

/** Every row. */
export function* all<R>(sql: Sql, ...params: Params): Query<R[]> {
  return (yield { want: 'all', sql, params }) as R[];
}

/** The first column of the first row, or undefined when there is no row. */
export function* value<V>(sql: Sql, ...params: Params): Query<V | undefined> {
  return (yield { want: 'value', sql, params }) as V | undefined;
}

/** The first column of every row. */
export function* column<V>(sql: Sql, ...params: Params): Query<V[]> {
  return (yield { want: 'column', sql, params }) as V[];
}

/** Runs a statement that returns no rows; resolves with the number of rows it changed. */
export function* run(sql: Sql, ...params: Params): Query<number> {
  return (yield { want: 'run', sql, params }) as number;
}

/**
 * Runs an INSERT, UPDATE or DELETE whose count the query does not read. PostgreSQL sends it on without waiting for
 * its answer, together with the statements after it (pipelined), so the writes of a transaction cost one round
 * trip together instead of one each; its failure is thrown at the next statement that waits for an answer, or at
 * the end of the query. A statement whose failure the query catches (a unique key it turns into its own refusal)
 * is a `run`.
 */
export function* change(sql: Sql, ...params: Params): Query<void> {
  yield { want: 'change', sql, params };
}

/** Several statements without parameters (schema changes). */
export function* exec(sql: Sql): Query<void> {
  yield { want: 'exec', sql, params: [] };
}

/**
 * `q` with each of its statements planned for its values at every run: for a statement whose best plan depends
 * on them. A full-text search finds a rare word through its index and a common one by walking the newest mail;
 * a LIKE finds its trigrams only when the pattern is known. PostgreSQL keeps one plan for any value once a
 * prepared statement has run a few times, the wrong one for most values of such a statement (tens or hundreds
 * of ms instead of a few). SQLite plans a full-text search from its values anyway.
 */
export function* plannedForValues<T>(q: Query<T>): Query<T> {
  let step = q.next();
  while (!step.done) {
    let answer: unknown;
    try {
      answer = yield { ...step.value, planEachTime: true };
    } catch (err) {
      step = q.throw(err);
      continue;
    }
    step = q.next(answer);
  }
  return step.value;
}

/**
 * On PostgreSQL, a Map that lives as long as the write transaction the query runs in (one attempt of it: a
 * transaction run again starts empty), shared by the queries it carries: what one of them read under the write
 * lock, the next may take from it instead of a round trip, since no one else writes meanwhile. Null elsewhere
 * (outside a write transaction, and on SQLite, where a read is a function call).
 */
export function* transactionMemo(): Query<Map<string, unknown> | null> {
  return (yield { want: 'memo', sql: '', params: [] }) as Map<string, unknown> | null;
}

/** No statement: undefined (a place in `together` for a read not needed this time). */
export function* nothing(): Query<undefined> {
  return undefined;
}

type Result<Q> = Q extends Query<infer R> ? R : never;

/**
 * Runs queries that do not depend on each other side by side and returns what each returns, in order. On
 * PostgreSQL their statements go out together, in one socket write: one round trip for each step of the longest
 * instead of one per statement (a wait for the server, and a write that wakes it). On SQLite they run one after
 * the other, where a read is a function call. None may read what another writes; a query that throws ends them
 * all, the first in order first.
 */
export function* together<const Qs extends readonly Query<unknown>[]>(...qs: Qs): Query<{ -readonly [K in keyof Qs]: Result<Qs[K]> }> {
  type Out = { -readonly [K in keyof Qs]: Result<Qs[K]> };
  if ((yield* dialect()) !== 'postgres') {
    const out: unknown[] = [];
    for (const q of qs) out.push(yield* q);
    return out as Out;
  }
  const steps = qs.map((q) => q.next());
  for (let open = steps.flatMap((s, i) => (s.done ? [] : [i])); open.length; open = open.filter((i) => !steps[i]!.done)) {
    const answers = (yield { want: 'many', sql: '', params: [], many: open.map((i) => steps[i]!.value as Statement) }) as Settled[];
    open.forEach((i, k) => {
      const a = answers[k]!;
      steps[i] = 'error' in a ? qs[i]!.throw(a.error) : qs[i]!.next(a.value);
    });
  }
  return steps.map((s) => s.value) as Out;
}

/** The dialect of the store running the query, for the rare query that builds different statements on each. */
export function* dialect(): Query<Dialect> {
  return (yield { want: 'dialect', sql: '', params: [] }) as Dialect;
}

/** The text of `sql` for `d`. */
export const textFor = (sql: Sql, d: Dialect): string => (typeof sql === 'string' ? sql : sql[d]);

/** Runs `q` to its end with `answer` giving each statement's result synchronously (SQLite, and tests). */
export function runSync<T>(q: Query<T>, answer: (s: Statement) => unknown): T {
  let step = q.next();
  while (!step.done) {
    let result: unknown;
    try {
      result = answer(step.value);
    } catch (err) {
      step = q.throw(err);
      continue;
    }
    step = q.next(result);
  }
  return step.value;
}

/** Whether `x` is a query (a writer job may return one, or plain data). */
export function isQuery(x: unknown): x is Query<unknown> {
  const q = x as Partial<Query<unknown>> | null;
  return typeof q?.next === 'function' && typeof q.throw === 'function';
}

/** A constraint the row broke, named the same on both stores: a caller turns `unique` into its own refusal. */
export function constraintViolated(err: unknown): 'unique' | 'foreign_key' | 'check' | null {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return null;
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505') return 'unique';
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503') return 'foreign_key';
  if (code === 'SQLITE_CONSTRAINT_CHECK' || code === '23514') return 'check';
  return null;
}
