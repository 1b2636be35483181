// The token counts of the models a connection scores with, kept in memory so that scoring a received message is
// a few hundred binary searches instead of an SQL lookup per token (the writer thread files every message: a
// lookup of ~600 tokens cost it about 0.7 ms a 10 KB letter, the search about 0.05). Each copy is tagged with
// its model's version (drawn anew by every train, forget and prune: store.ts), so a stale copy is never used; a
// model that changed is copied again at most every REBUILD_MS, and scored through SQL meanwhile. Bounded: at
// most MAX_ENTRIES token rows across the models of a thread, the least recently used model dropped first.
// The copies are the thread's (a thread scores on one store): a copy is only ever used at its model's version,
// and a version is drawn anew at random by each change, also one rolled back (0037), so a copy made by a query
// the store runs again, or rolled back, is never a wrong answer, only a copy that is not used.
import { all, type Query } from '../db/query.ts';

/** Token rows kept across all models of a thread: 16 bytes each, so about 10 MiB at most. */
export const MAX_ENTRIES = 640_000;
/** A model that changed is copied again at most this often; between copies its messages are scored through SQL. */
export const REBUILD_MS = 10_000;

interface Copy {
  version: number;
  /** Token hashes, ascending (the primary key's order), with their counts at the same index. */
  hashes: Float64Array;
  spam: Uint32Array;
  ham: Uint32Array;
  builtAt: number;
}

/** The thread's copies by model id, least recently used first (a Map keeps insertion order). */
const models = new Map<number, Copy>();

/**
 * The model's counts of each of `hashes`, at the same index (undefined: never learned), from the thread's
 * copy; null when no up-to-date copy can be had (read them from the table then).
 */
export function* cachedCounts(model: { id: number; version: number; tokens: number }, hashes: ArrayLike<number>): Query<Array<{ spam: number; ham: number } | undefined> | null> {
  const now = performance.now();
  let copy = models.get(model.id);
  if (!copy || copy.version !== model.version) {
    if (model.tokens > MAX_ENTRIES || (copy && now - copy.builtAt < REBUILD_MS)) return null;
    models.delete(model.id);
    evict(models, model.tokens);
    copy = yield* build(model.id, model.version, model.tokens, now);
  }
  // Most recently used last: the Map keeps insertion order.
  models.delete(model.id);
  models.set(model.id, copy);
  const out: Array<{ spam: number; ham: number } | undefined> = new Array(hashes.length);
  for (let i = 0; i < hashes.length; i++) {
    const at = find(copy.hashes, hashes[i]!);
    if (at >= 0) out[i] = { spam: copy.spam[at]!, ham: copy.ham[at]! };
  }
  return out;
}

function* build(modelId: number, version: number, size: number, now: number): Query<Copy> {
  const hashes = new Float64Array(size);
  const spam = new Uint32Array(size);
  const ham = new Uint32Array(size);
  let n = 0;
  const rows = yield* all<{ token: number; spam: number; ham: number }>('SELECT token, spam, ham FROM spam_filter_tokens WHERE model_id = ? ORDER BY token', modelId);
  for (const { token, spam: s, ham: h } of rows) {
    if (n === size) break; // the row count is kept by the store; never trust it past the arrays
    hashes[n] = token;
    spam[n] = s;
    ham[n] = h;
    n++;
  }
  return { version, hashes: hashes.subarray(0, n), spam: spam.subarray(0, n), ham: ham.subarray(0, n), builtAt: now };
}

function evict(models: Map<number, Copy>, adding: number): void {
  let total = adding;
  for (const c of models.values()) total += c.hashes.length;
  for (const [id, c] of models) {
    if (total <= MAX_ENTRIES) break;
    models.delete(id);
    total -= c.hashes.length;
  }
}

function find(sorted: Float64Array, value: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = sorted[mid]!;
    if (v === value) return mid;
    if (v < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Forgets every copy of this thread's models (tests, and a store restored underneath). */
export const dropCopies = () => models.clear();
