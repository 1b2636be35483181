// What every API request and send reads of the box's settings (a key, a sending domain, a workspace's plans and
// label rules), kept by each node on PostgreSQL: there each read is a round trip, and on a two-core machine those
// round trips were half of what an API send cost the server and PostgreSQL together. SQLite's reads are function
// calls and keep no cache.
//
// An entry is only kept while the node hears every change: a trigger on the tables read (postgres/0051) notifies
// `mailwright_settings` at COMMIT, and any notice empties the cache. Heard three ways:
//   * by every pooled connection of the node (db/postgres.ts openPool): PostgreSQL tells the connection that
//     committed before it answers the COMMIT, so a change made through this node is forgotten before it is
//     acknowledged, and the request after it reads afresh (the writer thread says so with its answer, writer.ts);
//   * by one connection that only listens (cluster/commit-notices.ts), for changes other nodes make: heard within
//     the notice's way over the network, a millisecond or so after their COMMIT;
//   * while that connection is lost, nothing is kept at all, and all is forgotten when it listens again.
import type { Query } from './query.ts';

export const SETTINGS_CHANNEL = 'mailwright_settings';

/** Entries beyond this many push out the oldest: strangers cannot fill memory (only what exists is kept). */
const MAX_ENTRIES = 10_000;
/** An entry older than this is read again anyway, whatever was heard. */
const MAX_AGE_MS = 60_000;

interface Entry {
  value: unknown;
  at: number;
}

export class NodeCache {
  private entries = new Map<string, Entry>();
  private generation = 0;

  constructor(
    /** Whether every change is heard now (the listening connection is up). */
    private live: () => boolean = () => false,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Keeps entries only while `live` says the changes are heard; all is forgotten now. */
  follow(live: () => boolean): void {
    this.live = live;
    this.forget();
  }

  /**
   * A change was heard: the entries of its scope go (a notice's payload: the start of their keys, as `sending
   * ws_1`), or every entry when it names none; a read under way when it was heard keeps nothing.
   */
  forget(scope = ''): void {
    this.generation++;
    if (!scope) return this.entries.clear();
    for (const key of this.entries.keys()) if (key.startsWith(`${scope} `)) this.entries.delete(key);
  }

  /** The entry for `key`, or undefined; a kept `undefined` is `{ value: undefined }`. */
  get(key: string): { value: unknown } | undefined {
    if (!this.live()) return undefined;
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (this.now() - e.at > MAX_AGE_MS) return void this.entries.delete(key);
    return e;
  }

  /** Taken before a read; `set` keeps its value only if nothing was heard since. */
  ticket(): number {
    return this.generation;
  }

  set(key: string, value: unknown, ticket: number): void {
    if (ticket !== this.generation || !this.live()) return;
    this.entries.delete(key);
    this.entries.set(key, { value, at: this.now() });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
  }
}

/** `q`'s result from `cache` when kept, else read by `q` and kept; `q` itself when there is no cache. */
export function* cached<T>(cache: NodeCache | null | undefined, key: string, q: Query<T>): Query<T> {
  if (!cache) return yield* q;
  const hit = cache.get(key);
  if (hit) return hit.value as T;
  const ticket = cache.ticket();
  const value = yield* q;
  cache.set(key, value, ticket);
  return value;
}
