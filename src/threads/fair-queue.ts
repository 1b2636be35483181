// Waiting work kept per key (whose it is: an SMTP client's network, a workspace) and handed out fairly: the
// key the caller ranks lowest goes first, and among equals the key served longest ago, so one key with many
// items cannot hold back another's single one. Oldest first within a key. Plain data; no threads, no timers.

/** Keys whose last turn is remembered; the one served longest ago is forgotten first (it then counts as never served). */
const MAX_REMEMBERED = 10_000;

export class FairQueue<T> {
  /** Each key's items, oldest first. */
  private readonly byKey = new Map<string, T[]>();
  /** When each key was last served (a tick of this queue), oldest first. */
  private readonly served = new Map<string, number>();
  private tick = 0;
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Items waiting under `key`. */
  sizeOf(key: string): number {
    return this.byKey.get(key)?.length ?? 0;
  }

  push(key: string, item: T): void {
    const items = this.byKey.get(key);
    if (items) items.push(item);
    else this.byKey.set(key, [item]);
    this.count++;
  }

  /**
   * The oldest item of the key with the lowest `rank` (for instance its jobs in flight), the key served
   * longest ago among equals; a key ranked Infinity may not be served now. Undefined when none may. Linear in
   * the keys waiting.
   */
  take(rank: (key: string) => number = () => 0): T | undefined {
    let best: string | undefined;
    let bestRank = Infinity;
    let bestServed = Infinity;
    for (const key of this.byKey.keys()) {
      const r = rank(key);
      const served = this.served.get(key) ?? 0;
      if (r === Infinity) continue;
      if (r < bestRank || (r === bestRank && served < bestServed)) [best, bestRank, bestServed] = [key, r, served];
    }
    if (best === undefined) return undefined;
    const items = this.byKey.get(best)!;
    const item = items.shift()!;
    if (items.length === 0) this.byKey.delete(best);
    this.count--;
    this.served.delete(best);
    if (this.served.size >= MAX_REMEMBERED) this.served.delete(this.served.keys().next().value!);
    this.served.set(best, ++this.tick);
    return item;
  }

  /** Every item, emptying the queue. */
  drain(): T[] {
    const all = [...this.byKey.values()].flat();
    this.byKey.clear();
    this.count = 0;
    return all;
  }
}
