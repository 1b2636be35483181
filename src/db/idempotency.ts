// Idempotency records for the send endpoints and SMTP submission (DESIGN.md): scoped to workspace + endpoint,
// kept 24 h across restarts. Same key and same body replays the first 2xx answer; another body is 409
// invalid_idempotent_request; the same key still running is 409 concurrent_idempotent_requests.
// A handler that changes state records its answer with storeAnswer in the transaction that makes the effect
// (the writer's: answerStep), then says so with `claim.stored()`, so the effect and the record commit together:
// a crash never leaves one without the other. The Koa middleware over these rules is http/idempotency.ts.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { get, run, type Query } from './query.ts';
import type { Store } from './store.ts';
import type { DbContext, Step } from './writer.ts';
import { ApiError } from '../errors.ts';

const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** Where a request's answer is kept: plain data, so a writer on another thread can store it (storeAnswer). */
export interface IdempotencyRecord {
  workspaceId: string;
  endpoint: string;
  key: string;
  /** requestHash() of the request. */
  hash: string;
}

export interface IdempotencyClaim {
  readonly record: IdempotencyRecord;
  /** Stores the answer, for a request whose handler made no effect of its own in a transaction. */
  complete(status: number, body: unknown): Promise<void>;
  /** Says the answer was stored with storeAnswer() in a transaction that has committed. */
  stored(): void;
}

export type IdempotencyStart =
  | { replay: { status: number; body: unknown } }
  | {
      claim: IdempotencyClaim;
      completed(): boolean;
      /** Lets go of the key; on PostgreSQL resolves once a request that kept no answer has left no row behind. */
      release(): Promise<void>;
    };

interface StoredRow {
  request_hash: string;
  status: number;
  response: string;
}

/** A request under way on a node that stopped holds its key this long; its client's retry then runs it. */
const HOLD_MS = 2 * 60_000;

export class Idempotency {
  // Requests under way in this process. On SQLite the process is the box, and this is the whole truth; nodes
  // sharing PostgreSQL also hold the key in the database (a row without an answer yet, status 0), so that a
  // request under way on one node is concurrent on the others too.
  private readonly inFlight = new Map<string, string>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /**
   * The rules for any front door (the HTTP middleware, SMTP submission) (SMTP submission too): throws the 400 and 409 ApiErrors,
   * returns the stored answer to replay, or a claim that the caller must release() once it has answered.
   * `request` is what "the same request" means for the endpoint; it is compared by hash.
   */
  async begin(workspaceId: string, endpoint: string, key: string, request: unknown): Promise<IdempotencyStart> {
    if (key.length < 1 || key.length > 256) {
      throw new ApiError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 256 characters');
    }
    const hash = requestHash(request);
    const slot = `${workspaceId}\n${endpoint}\n${key}`;

    const running = this.inFlight.get(slot);
    if (running !== undefined) throw running === hash ? concurrent() : mismatch();
    // Held while the stored answer is looked for: a second request with the key meanwhile is concurrent.
    this.inFlight.set(slot, hash);
    const record = { workspaceId, endpoint, key, hash };
    const shared = this.store.dialect === 'postgres';
    let stored: StoredRow | undefined;
    try {
      stored = shared ? await this.store.write(() => holdKey(record, this.clock.now())) : await this.store.read(findAnswer(workspaceId, endpoint, key, this.clock.now()));
    } catch (err) {
      this.inFlight.delete(slot);
      throw err;
    }
    if (stored) {
      this.inFlight.delete(slot);
      if (stored.request_hash !== hash) throw mismatch();
      if (stored.status === HELD) throw concurrent();
      return { replay: { status: stored.status, body: JSON.parse(stored.response) } };
    }

    let completed = false;
    return {
      claim: {
        record,
        complete: async (status, body) => {
          await this.store.write(() => storeAnswer(this.clock.now(), record, status, body));
          completed = true;
        },
        stored: () => void (completed = true),
      },
      completed: () => completed,
      release: async () => {
        this.inFlight.delete(slot);
        // Awaited, so a refusal is answered once it has changed nothing; a hold that cannot be dropped now (the
        // database unreachable) lapses after HOLD_MS.
        if (shared && !completed) await this.store.write(() => dropHold(record)).catch(() => {});
      },
    };
  }

}

const findAnswer = (workspaceId: string, endpoint: string, key: string, now: number) =>
  get<StoredRow>('SELECT request_hash, status, response FROM idempotency_keys WHERE workspace_id = ? AND endpoint = ? AND key = ? AND expires_at > ?', workspaceId, endpoint, key, now);

/** The status of a key held by a request under way on some node (PostgreSQL): no answer yet. */
const HELD = 0;

/**
 * Holds the key for this request, unless a live record has it: then that record (an answer, or HELD by a
 * request under way elsewhere). Undefined when this request now holds it.
 */
function* holdKey(r: IdempotencyRecord, now: number): Query<StoredRow | undefined> {
  const held = yield* get<{ held: number }>(
    `INSERT INTO idempotency_keys (workspace_id, endpoint, key, request_hash, status, response, created_at, expires_at)
     VALUES (?, ?, ?, ?, ${HELD}, '', ?, ?)
     ON CONFLICT (workspace_id, endpoint, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
       response = excluded.response, created_at = excluded.created_at, expires_at = excluded.expires_at
     WHERE idempotency_keys.expires_at <= ?
     RETURNING 1 AS held`,
    r.workspaceId, r.endpoint, r.key, r.hash, now, now + HOLD_MS, now,
  );
  return held ? undefined : yield* get<StoredRow>('SELECT request_hash, status, response FROM idempotency_keys WHERE workspace_id = ? AND endpoint = ? AND key = ?', r.workspaceId, r.endpoint, r.key);
}

/** Lets go of a key whose request ended without an answer to keep (a 4xx, a 5xx): the next request runs. */
const dropHold = (r: IdempotencyRecord) =>
  run(`DELETE FROM idempotency_keys WHERE workspace_id = ? AND endpoint = ? AND key = ? AND status = ${HELD} AND request_hash = ?`, r.workspaceId, r.endpoint, r.key, r.hash);

/** Deletes records past their 24 h; run periodically. */
export const purgeIdempotencyKeys = (now: number) => run('DELETE FROM idempotency_keys WHERE expires_at <= ?', now);

/** The writer step (job `idempotency.answer`) that records a claim's answer with the request's effect. */
export const answerStep = (claim: IdempotencyClaim, status: number, body: unknown): Step<'idempotency.answer'> => ({ kind: 'idempotency.answer', payload: { record: claim.record, status, body } });

/** The writer job `idempotency.answer`: storeAnswer at the call's time. */
export const writeAnswer = (ctx: DbContext, a: { record: IdempotencyRecord; status: number; body: unknown }) => storeAnswer(ctx.clock.now(), a.record, a.status, a.body);

/** Records the answer to replay: inside the transaction that makes the request's effect. */
export function* storeAnswer(now: number, r: IdempotencyRecord, status: number, body: unknown): Query<void> {
  // The update replaces this request's own hold, or an expired record: a live answer was replayed by begin().
  yield* run(
    `INSERT INTO idempotency_keys (workspace_id, endpoint, key, request_hash, status, response, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (workspace_id, endpoint, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
       response = excluded.response, created_at = excluded.created_at, expires_at = excluded.expires_at`,
    r.workspaceId, r.endpoint, r.key, r.hash, status, JSON.stringify(body ?? null), now, now + IDEMPOTENCY_TTL_MS,
  );
}


const mismatch = () => new ApiError(409, 'invalid_idempotent_request', 'This Idempotency-Key was already used with a different request body');
const concurrent = () =>
  new ApiError(409, 'concurrent_idempotent_requests', 'A request with this Idempotency-Key is still being processed; retry when it has finished');

/** SHA-256 of the body as canonical JSON (object keys sorted), so key order does not matter. */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body ?? null)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
