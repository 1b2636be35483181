// Running queries (query.ts) on PostgreSQL through node-postgres: a pool of connections, each statement sent as
// a named prepared statement with its `?` and `@name` placeholders numbered, values read back as SQLite gives
// them (64-bit integers and sums as numbers, booleans as 1 and 0, bytea as Buffers), so a resource reads the
// same rows from either store.
// Writes keep the guarantee the resources were written for, SQLite's: one writer at a time, under the box's
// write lock, in group commits (postgres-commit.ts).
import type { Writable } from 'node:stream';
import pg from 'pg';
import { textFor, type Params, type Query, type Settled, type Statement } from './query.ts';
import { HeldInserts, type SchemaMap, type ToWrite } from './postgres-merge.ts';

const { Pool, types: pgTypes } = pg;

/** How a value of each PostgreSQL type comes back: as better-sqlite3 returns the INTEGER, REAL or BLOB it stores. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    switch (oid) {
      case pgTypes.builtins.INT8:
      case pgTypes.builtins.NUMERIC:
        return (v: string) => Number(v);
      case pgTypes.builtins.BOOL:
        return (v: string) => (v === 't' ? 1 : 0);
      default:
        return pgTypes.getTypeParser(oid, format);
    }
  },
};

export type PgPool = pg.Pool;
export type PgClient = pg.PoolClient;

export interface PostgresOptions {
  /** Connections the pool may hold. */
  max?: number;
  /** Names the connections in pg_stat_activity. */
  applicationName?: string;
  /**
   * Every connection LISTENs on `channel` and calls `heard` with each notice's payload ('' when it cannot listen):
   * one committed on the connection itself is heard before its COMMIT is answered (db/node-cache.ts says why that
   * matters).
   */
  notices?: { channel: string; heard: (payload: string) => void };
}

/** A pool on `url` (postgres://user:password@host:port/database?sslmode=...); it connects at its first query. */
export function openPool(url: string, opts: PostgresOptions = {}): PgPool {
  const pool = new Pool({
    connectionString: url,
    max: opts.max ?? 10,
    application_name: opts.applicationName ?? 'mailwright',
    types,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    // No statement holds a connection (and with it, perhaps, the write lock) for ever: a server that stops
    // answering, or a query stuck on a lock, fails the request instead.
    statement_timeout: 60_000,
    idle_in_transaction_session_timeout: 60_000,
    // The box's statements read a page of rows; starting parallel workers costs milliseconds, more than such a
    // statement, which the default setup cost (1,000) let a list of fifty ids (guessed at a hundred or more) pay.
    // A scan of hundreds of thousands of rows still goes parallel.
    options: '-c parallel_setup_cost=10000',
    // A statement is sent without waiting for the answers to those before it: the changes of a query (query.ts
    // `change`) go out together with the statement after them, answered in order.
    pipeline: true,
  });
  // A connection the server closes or the network cuts (a restart, a failover) must not end the process: an
  // idle one the pool drops and replaces; one in use fails its query (StoreUnreachable below), and its client,
  // released as broken, is closed. Unheard, the client's 'error' event would be thrown.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
    const notices = opts.notices;
    if (!notices) return;
    client.on('notification', (n) => n.channel === notices.channel && notices.heard(n.payload ?? ''));
    // Queued before the statements of whoever asked for the connection. Should it fail, what was kept is forgotten,
    // and this connection's own changes are heard a moment later, by the listening connection only.
    client.query(`LISTEN ${notices.channel}`).catch(() => notices.heard(''));
  });
  return pool;
}

/**
 * Runs `q` on one connection of the pool: outside a transaction, each statement on its own, or with `snapshot` in
 * a read-only REPEATABLE READ transaction, every statement seeing the same moment.
 */
export async function readOn<T>(pool: PgPool, q: Query<T>, snapshot = false): Promise<T> {
  const client = await reach(pool.connect());
  let broken: Error | undefined;
  try {
    if (snapshot) await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const result = await runOnClient(client, q);
    if (snapshot) await client.query('COMMIT');
    return result;
  } catch (err) {
    broken = brokenConnection(err);
    if (snapshot && !broken) await client.query('ROLLBACK').catch((e: Error) => (broken = e));
    throw err;
  } finally {
    client.release(broken);
  }
}

/** pg_advisory_xact_lock's key for the box's one writer (migrations use another, postgres-migrate.ts). */
export const WRITE_LOCK = 7_004_301;

/**
 * Changes (query.ts `change`) sent on one connection and not yet answered, each with the query it belongs to. They
 * are written into the socket held back (corked) and leave in one write with the next statement whose answer is
 * waited for; a transaction's queries may leave theirs here for the next query, or for its COMMIT. Given the
 * schema, one-row INSERTs are held back longer and merged (postgres-merge.ts): `before` writes them ahead of a
 * statement that could see them, `flush` before COMMIT.
 */
export class Unanswered {
  private sent: Array<{ answer: Promise<unknown>; of: number }> = [];
  private corked = false;
  private readonly socket: Writable | undefined;
  private readonly held: HeldInserts | null;

  constructor(
    private readonly client: PgClient,
    schema?: SchemaMap,
  ) {
    this.socket = (client as unknown as { connection?: { stream?: Writable } }).connection?.stream;
    this.held = schema ? new HeldInserts(schema) : null;
  }

  /** Holds back what is written to the connection until settled(). */
  hold(): void {
    if (!this.corked && this.socket?.cork) (this.corked = true), this.socket.cork();
  }

  send(s: Statement, of: number): void {
    if (this.held && s.want === 'change') {
      const { sql, names } = numbered(textFor(s.sql, 'postgres'));
      if (this.held.hold(sql, valuesOf(names, s.params), of)) return this.held.full() ? this.flush() : undefined;
    }
    this.before(s);
    this.write(s, of);
  }

  /** Writes the held rows `s` could see (a `many`: any of its statements). */
  before(s: Statement): void {
    if (!this.held || s.want === 'dialect' || s.want === 'memo') return;
    const texts = (s.want === 'many' ? s.many! : [s]).map((m) => textFor(m.sql, 'postgres'));
    this.writeHeld(this.held.takeSeenBy(texts, s.want === 'exec'));
  }

  /** Writes every held row (before COMMIT). */
  flush(): void {
    if (this.held) this.writeHeld(this.held.takeSeenBy([], true));
  }

  /** Sends what is held back; the first change to fail, and whose it was (the statements after it fail only because the transaction is aborted). */
  async settled(): Promise<{ error: unknown; of: number } | null> {
    if (this.corked) (this.corked = false), this.socket!.uncork();
    if (!this.sent.length) return null;
    const sent = this.sent;
    this.sent = [];
    const answers = await Promise.allSettled(sent.map((s) => s.answer));
    const at = answers.findIndex((a) => a.status === 'rejected');
    return at < 0 ? null : { error: (answers[at] as PromiseRejectedResult).reason, of: sent[at]!.of };
  }

  private writeHeld(statements: ToWrite[]): void {
    for (const w of statements) this.write({ want: 'change', sql: w.sql, params: w.values }, w.of);
  }

  private write(s: Statement, of: number): void {
    this.hold();
    const answer = answerOn(this.client, s);
    answer.catch(() => {}); // read by settled()
    this.sent.push({ answer, of });
  }
}

/** A change of an earlier query of the transaction failed (Unanswered): that query failed, not the one running. */
export class EarlierChangeFailed extends Error {
  constructor(readonly failure: { error: unknown; of: number }) {
    super('a change of an earlier query failed');
  }
}

/**
 * `q`'s statements, one after the other, on `client` (in whatever transaction it is in), its changes sent without
 * waiting (Unanswered). The first of them to fail is the query's failure at the next statement it waits for, or
 * at its end. Given `unanswered`, the query is the transaction's `of`th and leaves its last changes there unsettled;
 * `memo` is the write transaction's (query.ts transactionMemo).
 */
export async function runOnClient<T>(client: PgClient, q: Query<T>, carried?: { unanswered: Unanswered; of: number; memo?: Map<string, unknown> }): Promise<T> {
  const unanswered = carried?.unanswered ?? new Unanswered(client);
  const of = carried?.of ?? 0;
  let step = q.next();
  while (!step.done) {
    const s = step.value;
    if (s.want === 'dialect' || s.want === 'memo') {
      step = q.next(s.want === 'dialect' ? 'postgres' : (carried?.memo ?? null));
      continue;
    }
    if (s.want === 'change') {
      unanswered.send(s, of);
      step = q.next(undefined);
      continue;
    }
    let result: unknown;
    try {
      unanswered.before(s); // rows held back that it could see go first
      if (s.want === 'many') unanswered.hold(); // they leave in one write, behind the changes
      const asked = s.want === 'many' ? answerAll(client, s.many!, carried?.memo ?? null) : answerOn(client, s); // written behind the changes, before the socket is uncorked
      asked.catch(() => {});
      const failed = await unanswered.settled();
      if (failed && failed.of !== of) throw new EarlierChangeFailed(failed);
      if (failed) throw failed.error;
      result = await asked;
    } catch (err) {
      if (err instanceof EarlierChangeFailed) throw err;
      step = q.throw(err);
      continue;
    }
    step = q.next(result);
  }
  if (!carried) {
    unanswered.flush();
    const failed = await unanswered.settled();
    if (failed) throw failed.error;
  }
  return step.value;
}

/** serialization_failure and deadlock_detected: the transaction was undone and can be run again as it was. */
export const retryable = (err: unknown) => ['40001', '40P01'].includes((err as { code?: string })?.code ?? '');

/** An error that leaves the connection unusable (no SQLSTATE: the socket, a timeout): it is closed, not reused. */
function brokenConnection(err: unknown): Error | undefined {
  if (err instanceof StoreUnreachable) return err;
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? undefined : (err as Error);
}

/**
 * The server out of reach: the pool could not connect (refused, timed out), the connection was cut, or the server
 * is shutting down or starting (57P01-57P03, class 08). A request then gets 503 and SMTP a 451 (nothing was
 * stored, or nothing acknowledged), and the pool connects again once the server answers.
 */
export class StoreUnreachable extends Error {
  readonly code = 'STORE_UNREACHABLE';
  constructor(cause: unknown) {
    super(`the database is out of reach: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

const cutOff = (err: unknown) => brokenConnection(err) !== undefined || /^(08|57P0[123])/.test(String((err as { code?: unknown })?.code));

/** `work`, with a failure to reach the server said as StoreUnreachable. */
export async function reach<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw cutOff(err) ? new StoreUnreachable(err) : err;
  }
}

/** The statements of a `many` (query.ts together), all sent before any answer is waited for: each one's Settled. */
function answerAll(client: PgClient, statements: readonly Statement[], memo: Map<string, unknown> | null): Promise<Settled[]> {
  const asked = statements.map((s) =>
    s.want === 'dialect' ? Promise.resolve('postgres') : s.want === 'memo' ? Promise.resolve(memo) : s.want === 'many' ? answerAll(client, s.many!, memo) : answerOn(client, s),
  );
  return Promise.allSettled(asked).then((all) => all.map((a) => (a.status === 'fulfilled' ? { value: a.value } : { error: a.reason as unknown })));
}

async function answerOn(client: PgClient, s: Statement): Promise<unknown> {
  try {
    return await reach(ask(client, s));
  } catch (err) {
    // Which statement: the log of a failure names it (never its values, which may be mail or secrets).
    if (err instanceof Error && !brokenConnection(err)) Object.assign(err, { statement: textFor(s.sql, 'postgres').replace(/\s+/g, ' ').slice(0, 500) });
    throw err;
  }
}

async function ask(client: PgClient, s: Statement): Promise<unknown> {
  if (s.want === 'dialect') return 'postgres';
  if (s.want === 'memo') return null;
  const text = textFor(s.sql, 'postgres');
  if (s.want === 'exec') return void (await client.query(text));
  const { sql, names } = numbered(text);
  const values = valuesOf(names, s.params);
  const array = s.want === 'value' || s.want === 'column';
  // An unnamed statement is planned with the values it is bound to, every time.
  const config = { name: s.planEachTime ? undefined : statementName(sql), text: sql, values };
  if (array) {
    const r = await client.query<unknown[]>({ ...config, rowMode: 'array' });
    return s.want === 'value' ? r.rows[0]?.[0] : r.rows.map((row) => row[0]);
  }
  const r = await client.query(config);
  return s.want === 'get' ? r.rows[0] : s.want === 'all' ? r.rows : s.want === 'change' ? undefined : (r.rowCount ?? 0);
}

/** A statement's values in the order of its numbered placeholders. */
const valuesOf = (names: string[] | null, params: Params): unknown[] => (names ? names.map((n) => (params[0] as Record<string, unknown>)[n]) : (params as unknown[]));

const names = new Map<string, string>();

/** One prepared statement per text on each connection (node-postgres keeps them by name). */
function statementName(sql: string): string {
  let name = names.get(sql);
  if (!name) names.set(sql, (name = `mw${names.size + 1}`));
  return name;
}

const translations = new Map<string, { sql: string; names: string[] | null }>();

/**
 * The text with its placeholders as PostgreSQL numbers them: each `?` the next $n, each `@name` one $n per name
 * (`names` then lists them in order), and camelCase aliases quoted. Quoted strings, quoted names and comments are
 * left as they are.
 */
export function numbered(text: string): { sql: string; names: string[] | null } {
  const known = translations.get(text);
  if (known) return known;
  let sql = '';
  let n = 0;
  const named: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      const end = closing(text, i, c);
      sql += text.slice(i, end);
      i = end - 1;
    } else if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i);
      const stop = end < 0 ? text.length : end;
      sql += text.slice(i, stop);
      i = stop - 1;
    } else if (c === '?') {
      sql += `$${++n}`;
    } else if (c === '@' && /[A-Za-z_]/.test(text[i + 1] ?? '')) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i + 1))![0];
      let at = named.indexOf(name);
      if (at < 0) at = named.push(name) - 1;
      sql += `$${at + 1}`;
      i += name.length;
    } else if (/[A-Za-z_]/.test(c) && !/[A-Za-z0-9_$]/.test(text[i - 1] ?? '')) {
      // A camelCase name is an alias the row is read by (the schema's names are snake_case): quoted, so that
      // PostgreSQL keeps its case as SQLite does, wherever the statement names it.
      const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i))![0];
      sql += /^[a-z][a-z0-9_]*[A-Z]/.test(word) ? `"${word}"` : word;
      i += word.length - 1;
    } else {
      sql += c;
    }
  }
  if (n && named.length) throw new Error('a statement numbers its placeholders by ? or by @name, not both');
  const result = { sql, names: named.length ? named : null };
  translations.set(text, result);
  return result;
}

/** Where the quoted string or name opening at `start` ends (a doubled quote stays inside). */
function closing(text: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === quote) {
      if (text[i + 1] === quote) i += 2;
      else return i + 1;
    } else i++;
  }
  return text.length;
}

