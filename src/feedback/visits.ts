// What visits of open pixels and click links write (RES-16): the first visit of a link by its recipient in an
// hour is an `opened` / `clicked` event (with its webhooks, counted in analytics); the visits of that link
// after it in the hour are counted in memory and added to that event's data (`repeats`) every few seconds, one
// statement per link, so a flood of one link writes one row. Knows nothing of HTTP: link-routes.ts decides
// which visits are counted at all (its per-address limit).
import type { App } from '../context.ts';
import { addRepeats, recentVisit } from '../emails/events.ts';
import { recordVisit, type LinkVisit } from './tracking.ts';

/** How long the first visit of a link stands for the visits after it. */
export const VISIT_WINDOW_MS = 60 * 60_000;
/** How often the counted repeats are written. */
const FOLD_MS = 5_000;
/**
 * Links remembered at once (a few hundred bytes each). Beyond, the oldest is forgotten: its next visit asks
 * the database again, which costs a read and finds the same event, so the limit bounds memory, not accuracy.
 */
const MAX_REMEMBERED = 100_000;

interface Remembered {
  /** The event this link's visits are counted on; null while the first visit's commit is in flight. */
  seq: number | null;
  /** Until when that event stands for the link's visits. */
  until: number;
}

interface Repeats {
  n: number;
  lastAt: number;
}

export type VisitOutcome = 'recorded' | 'repeat';

export class LinkVisits {
  private readonly recent = new Map<string, Remembered>();
  /** Repeats not written yet, by the link they belong to. */
  private readonly tally = new Map<Remembered, Repeats>();
  private timer: NodeJS.Timeout | null = null;
  private folding: Promise<void> | null = null;

  constructor(private readonly app: Pick<App, 'clock' | 'store' | 'log'>) {}

  start(): void {
    this.timer = setInterval(() => void this.fold(), FOLD_MS);
    this.timer.unref();
  }

  /** Writes what is counted; the app's last group commit makes it durable. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // Again while a fold that was running left repeats counted after it began.
    do await this.fold();
    while ([...this.tally.keys()].some((r) => r.seq !== null));
  }

  /** Records the visit as its link's event, or counts it on the event of the link's first visit in the hour. */
  async visit(v: LinkVisit): Promise<VisitOutcome> {
    const { store, clock } = this.app;
    const now = clock.now();
    const key = `${v.type} ${v.holder.emailId} ${v.holder.index} ${v.holder.link ?? ''}`;
    let known = this.recent.get(key);
    if (known && now >= known.until) {
      this.recent.delete(key);
      known = undefined;
    }
    if (!known) {
      // After a restart, or once forgotten: the event may be stored already.
      const found = await store.read(recentVisit({ emailId: v.holder.emailId, type: v.type, recipient: v.holder.recipient, url: v.url, since: now - VISIT_WINDOW_MS }));
      // Another visit of the link may have claimed it while this one read (a read that waits on the network).
      known = this.recent.get(key) ?? (found ? this.remember(key, { seq: found.seq, until: found.createdAt + VISIT_WINDOW_MS }) : undefined);
    }
    if (known) {
      this.count(known, now);
      return 'repeat';
    }
    // Claimed before the commit: visits arriving while it is in flight are repeats, not events of their own.
    const mine = this.remember(key, { seq: null, until: now + VISIT_WINDOW_MS });
    try {
      const done = await store.write(() => recordVisit(clock, v, now - VISIT_WINDOW_MS));
      mine.seq = done.seq;
      mine.until = done.createdAt + VISIT_WINDOW_MS;
      if (done.added) return 'recorded';
      this.count(mine, now);
      return 'repeat';
    } catch (err) {
      if (this.recent.get(key) === mine) this.recent.delete(key);
      this.tally.delete(mine);
      throw err;
    }
  }

  private remember(key: string, r: Remembered): Remembered {
    this.recent.delete(key);
    if (this.recent.size >= MAX_REMEMBERED) {
      // The oldest first (a Map keeps insertion order); its counted repeats stay in the tally until written.
      const oldest = this.recent.keys().next().value as string;
      this.recent.delete(oldest);
    }
    this.recent.set(key, r);
    return r;
  }

  private count(r: Remembered, at: number): void {
    const t = this.tally.get(r);
    if (t) {
      t.n++;
      t.lastAt = Math.max(t.lastAt, at);
    } else this.tally.set(r, { n: 1, lastAt: at });
  }

  /** One transaction for every link's repeats counted since the last; a fold already running is waited for. */
  private fold(): Promise<void> {
    this.folding ??= this.foldNow().finally(() => (this.folding = null));
    return this.folding;
  }

  private async foldNow(): Promise<void> {
    const due = [...this.tally].filter(([r]) => r.seq !== null);
    if (due.length === 0) return;
    for (const [r] of due) this.tally.delete(r);
    try {
      // Counts, not mail: nobody waits on them, so no fsync of their own (db/store.ts acknowledged: false).
      await this.app.store.write(function* () {
        for (const [r, t] of due) yield* addRepeats(r.seq!, t.n, t.lastAt);
      }, { acknowledged: false });
    } catch (err) {
      this.app.log.warn('could not write the repeated visits of tracking links; those counts are lost', { err, links: due.length });
    }
  }
}
