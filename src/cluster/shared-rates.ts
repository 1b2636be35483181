// The API's rate limit across the nodes sharing PostgreSQL (http/rate-limit.ts decides each request on its
// node, at once). A few times a second each node adds the tokens it took per key to the bucket kept in the
// database, refilled there at the same rate, and takes back the bucket's level: a client spread over nodes
// spends one budget. Between two syncs a node decides alone, so nodes together may let through up to
// (nodes x rate x SYNC_MS) more than the limit, and a key new to a node its burst once.
import { all, run, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import type { Log } from '../log.ts';

export const SYNC_MS = 250;
/** Buckets untouched this long are full again whatever they held: their rows go. */
const FORGET_AFTER_MS = 10 * 60_000;

/** What the sync needs of a limiter (http/rate-limit.ts RateLimiter). */
export interface SharedLimiter {
  readonly perSecond: number;
  readonly burst: number;
  /** The tokens taken per key since the last call. */
  takenSince(): Map<string, number>;
  /** The bucket of `key` as all nodes left it at `at`. */
  settle(key: string, tokens: number, at: number): void;
  /** Takes back counts a sync could not share, for the next one. */
  giveBack(taken: Map<string, number>): void;
}

/** Adds `taken` to the shared buckets at `now` (refilled first) and returns their levels. */
export function* spend(taken: Map<string, number>, now: number, perSecond: number, burst: number): Query<Array<{ key: string; tokens: number }>> {
  return yield* all<{ key: string; tokens: number }>(
    `INSERT INTO rate_buckets AS b (key, tokens, at)
     SELECT t.key, @burst - t.taken, @now FROM json_to_recordset(CAST(@taken AS json)) AS t(key text, taken float8)
     -- excluded.tokens is the new row's: the burst less what was taken.
     ON CONFLICT (key) DO UPDATE SET
       tokens = greatest(-@burst, least(@burst, b.tokens + (excluded.at - b.at) / 1000.0 * @perSecond) - (@burst - excluded.tokens)),
       at = excluded.at
     RETURNING key, tokens`,
    { taken: JSON.stringify([...taken].map(([key, n]) => ({ key, taken: n }))), now, perSecond, burst },
  );
}

const forgetIdle = (now: number) => run('DELETE FROM rate_buckets WHERE at < ?', now - FORGET_AFTER_MS);

export class SharedRates {
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> | null = null;
  private forgotAt = 0;

  constructor(
    private readonly limiter: SharedLimiter,
    private readonly app: { store: Store; clock: { now(): number }; log: Log },
  ) {}

  start(): void {
    this.timer = setInterval(() => (this.syncing ??= this.sync().finally(() => (this.syncing = null))), SYNC_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.syncing;
  }

  private async sync(): Promise<void> {
    const { store, clock, log } = this.app;
    const taken = this.limiter.takenSince();
    const now = clock.now();
    try {
      if (taken.size) {
        const { perSecond, burst } = this.limiter;
        for (const b of await store.write(() => spend(taken, now, perSecond, burst), { acknowledged: false })) this.limiter.settle(b.key, b.tokens, now);
      }
      if (now - this.forgotAt >= FORGET_AFTER_MS) {
        await store.write(() => forgetIdle(now), { acknowledged: false });
        this.forgotAt = now;
      }
    } catch (err) {
      // The requests were answered by this node's count; the others learn of them at the next sync that works.
      log.warn('could not share the rate limit counts with the other nodes; trying again', { err });
      this.limiter.giveBack(taken);
    }
  }
}
