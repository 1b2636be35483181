// The live event stream (GET /events/stream): Server-Sent Events carrying the webhook payloads of a workspace's
// events, in commit order (event_feed's sequence is each message's `id:`), so a client reconnecting with
// Last-Event-ID gets what it missed from the last 24 hours. One poller serves every open stream.
import { PassThrough } from 'node:stream';
import type { App } from '../context.ts';
import { payloadOfEvent, type Payload } from './payload.ts';

/** How far back a reconnecting client can catch up. */
export const FEED_RETENTION_MS = 24 * 60 * 60_000;
const POLL_MS = 250;
const HEARTBEAT_MS = 15_000;
const PRUNE_EVERY_MS = 60 * 60_000;
const BATCH = 1000;

export interface StreamFilter {
  workspaceId: string;
  /** `email.received`, ...; null for all. */
  types: Set<string> | null;
  inboxId: string | null;
}

interface Subscriber extends StreamFilter {
  out: PassThrough;
  /** The last sequence number this client has (or had before it connected). */
  cursor: number;
}

interface FeedRow {
  seq: number;
  event_id: string;
  workspace_id: string;
}

export class EventStream {
  private readonly subscribers = new Set<Subscriber>();
  private polled = 0;
  private timer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private prunedAt = 0;

  constructor(private readonly app: App) {}

  start(): void {
    this.polled = this.maxSeq();
    this.timer = setInterval(() => this.poll(), POLL_MS);
    this.timer.unref();
    this.heartbeat = setInterval(() => {
      for (const s of this.subscribers) s.out.write(': keep-alive\n\n');
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const s of this.subscribers) s.out.end();
    this.subscribers.clear();
  }

  /** A stream for one client: what it missed since `lastEventId` (within the retention), then live events. */
  open(filter: StreamFilter, lastEventId: number | null): PassThrough {
    const out = new PassThrough();
    const sub: Subscriber = { ...filter, out, cursor: this.maxSeq() };
    out.write(`retry: 2000\n: connected\n\n`);
    if (lastEventId !== null) {
      const missed = this.app.db
        .prepare('SELECT seq, event_id, workspace_id FROM event_feed WHERE workspace_id = ? AND seq > ? AND seq <= ? AND created_at >= ? ORDER BY seq LIMIT ?')
        .all(filter.workspaceId, lastEventId, sub.cursor, this.app.clock.now() - FEED_RETENTION_MS, BATCH * 10) as FeedRow[];
      for (const row of missed) this.send(sub, row, payloadOfEvent(this.app.db, this.app.config.publicUrl, row.event_id));
    }
    this.subscribers.add(sub);
    out.on('close', () => this.subscribers.delete(sub));
    return out;
  }

  private maxSeq(): number {
    return Number(this.app.db.prepare('SELECT coalesce(max(seq), 0) FROM event_feed').pluck().get());
  }

  private poll(): void {
    try {
      this.prune();
      if (this.subscribers.size === 0) {
        this.polled = this.maxSeq();
        return;
      }
      const rows = this.app.db.prepare('SELECT seq, event_id, workspace_id FROM event_feed WHERE seq > ? ORDER BY seq LIMIT ?').all(this.polled, BATCH) as FeedRow[];
      for (const row of rows) {
        this.polled = row.seq;
        const listening = [...this.subscribers].filter((s) => s.workspaceId === row.workspace_id && row.seq > s.cursor);
        if (!listening.length) continue;
        const payload = payloadOfEvent(this.app.db, this.app.config.publicUrl, row.event_id);
        for (const s of listening) this.send(s, row, payload);
      }
    } catch (err) {
      this.app.log.error('event stream: reading the feed failed', { err });
    }
  }

  private send(s: Subscriber, row: FeedRow, payload: Payload | null): void {
    s.cursor = row.seq;
    if (!payload) return;
    if (s.types && !s.types.has(payload.type)) return;
    if (s.inboxId && (payload.data.email as { inboxId?: string } | null)?.inboxId !== s.inboxId) return;
    s.out.write(`id: ${row.seq}\nevent: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`);
  }

  /** The feed keeps a day: older rows go, at most once an hour, in one small write. */
  private prune(): void {
    const now = this.app.clock.now();
    if (now - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = now;
    void this.app.commit.run(() => this.app.db.prepare('DELETE FROM event_feed WHERE created_at < ?').run(now - FEED_RETENTION_MS)).catch((err) => this.app.log.error('event stream: pruning the feed failed', { err }));
  }
}
