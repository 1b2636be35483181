// The live event stream (GET /events/stream): Server-Sent Events carrying the webhook payloads of a workspace's
// events, in commit order (each event's `seq`, migration 0028, is its message's `id:`), so a client reconnecting
// with Last-Event-ID gets what it missed from the last 24 hours. One poller serves every open stream; a client
// that reconnects catches up on its own, a slice of the sequence at a time, at the pace its socket takes, and a
// live client that leaves too much unread is ended, to reconnect and catch up so.
import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { App } from '../context.ts';
import { eventsAfter, eventsInOrder, newestSeq, seqBefore, webhookEventType, type EventOfWorkspace } from '../emails/events.ts';
import { eventPayload, type Payload } from './payload.ts';

/** How far back a reconnecting client can catch up. */
export const REPLAY_WINDOW_MS = 24 * 60 * 60_000;
const POLL_MS = 250;
const HEARTBEAT_MS = 15_000;
const BATCH = 1000;
/** How much of the sequence one step of a catch-up reads (every workspace's events are in it). */
const CATCH_UP_SEQS = 5000;
/**
 * What a live client may leave unread before it is cut off. Its EventSource reconnects with the last id it
 * read and catches up at its own pace, so nothing is lost, and a client that stopped reading holds no more.
 */
export const MAX_UNREAD_BYTES = 1024 * 1024;

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
  /** Caught up: the poller sends it what comes. */
  live: boolean;
}

export class EventStream {
  private readonly subscribers = new Set<Subscriber>();
  private polled = 0;
  private timer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(private readonly app: App) {}

  start(): void {
    this.polled = newestSeq(this.app.db);
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
    const newest = newestSeq(this.app.db);
    const sub: Subscriber = { ...filter, out, cursor: lastEventId === null ? newest : Math.min(lastEventId, newest), live: false };
    out.write(`retry: 2000\n: connected\n\n`);
    this.subscribers.add(sub);
    out.on('close', () => this.subscribers.delete(sub));
    if (sub.cursor >= newest) {
      sub.live = true;
      return out;
    }
    const since = this.app.clock.now() - REPLAY_WINDOW_MS;
    sub.cursor = Math.max(sub.cursor, seqBefore(this.app.db, filter.workspaceId, since) ?? newest);
    this.catchUp(sub, newest, since).catch((err) => {
      this.app.log.error('event stream: catching a client up failed', { err });
      out.end();
    });
    return out;
  }

  /**
   * Sends a reconnected client its workspace's events from its cursor up to the newest when it connected, and on
   * to what the poller has handed out since, then hands it to the poller. A step reads a slice of the sequence,
   * and waits whenever the client's socket has not taken what it was sent, so neither a long absence nor a slow
   * reader holds the event loop or grows the buffer.
   */
  private async catchUp(sub: Subscriber, newest: number, since: number): Promise<void> {
    const gone = () => sub.out.destroyed || sub.out.writableEnded;
    while (!gone()) {
      const end = Math.max(newest, this.polled);
      // Checked and joined in one turn of the event loop: the poller hands out nothing in between.
      if (sub.cursor >= end) {
        sub.live = true;
        return;
      }
      const upTo = Math.min(end, sub.cursor + CATCH_UP_SEQS);
      for (const e of eventsInOrder(this.app.db, sub.workspaceId, sub.cursor, upTo, since)) {
        this.send(sub, e, () => this.payloadOf(e));
        if (sub.out.writableNeedDrain) await drained(sub.out);
        if (gone()) return;
      }
      sub.cursor = upTo;
      await nextTurn();
    }
  }

  private poll(): void {
    try {
      // No one to send to: skip ahead (a client catching up reads on to wherever this is).
      if (![...this.subscribers].some((s) => s.live)) {
        this.polled = newestSeq(this.app.db);
        return;
      }
      for (const e of eventsAfter(this.app.db, this.polled, BATCH)) {
        this.polled = e.seq;
        let payload: Payload | undefined;
        const payloadOf = () => (payload ??= this.payloadOf(e));
        for (const s of this.subscribers) {
          if (!s.live || s.workspaceId !== e.workspaceId || e.seq <= s.cursor) continue;
          if (s.out.writableLength <= MAX_UNREAD_BYTES) this.send(s, e, payloadOf);
          else {
            // Ended, not destroyed: what it has is still its to read, then the response ends and it reconnects.
            this.subscribers.delete(s);
            s.out.end();
          }
        }
      }
    } catch (err) {
      this.app.log.error('event stream: reading the events failed', { err });
    }
  }

  private payloadOf(e: EventOfWorkspace): Payload {
    return eventPayload(this.app.db, this.app.config.publicUrl, e);
  }

  /** Sends the event if the client's filter takes it; its payload is made only then, and once per event. */
  private send(s: Subscriber, e: EventOfWorkspace, payloadOf: () => Payload): void {
    s.cursor = e.seq;
    const type = webhookEventType(e.event.type);
    if (s.types && !s.types.has(type)) return;
    const payload = payloadOf();
    if (s.inboxId && (payload.data.email as { inboxId?: string } | null)?.inboxId !== s.inboxId) return;
    s.out.write(`id: ${e.seq}\nevent: ${type}\ndata: ${JSON.stringify(payload)}\n\n`);
  }
}

/** Resolves once the stream takes more, or is closed. */
function drained(out: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
  });
}
