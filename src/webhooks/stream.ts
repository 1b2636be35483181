// The live event stream (GET /events/stream): Server-Sent Events carrying the webhook payloads of a workspace's
// events, in commit order (each event's `seq`, migration 0028, is its message's `id:`), so a client reconnecting
// with Last-Event-ID gets what it missed from the last 24 hours. One poller serves every open stream; a client
// that reconnects catches up on its own, a slice of the sequence at a time, at the pace its socket takes, and a
// live client that leaves too much unread is ended with a hint to reconnect, to catch up so. What one stream
// holds is bounded: an event's message is made once for all streams and cut to MAX_MESSAGE_BYTES (a received
// email's text can be megabytes: the message then leaves it out, and links.self fetches it). Domain, inbox and
// key events (domain-events.ts) have a sequence of their own and record their place among the email events
// (after_seq): both go out merged in that order, a domain event's `id:` is `<email seq>:<its seq>`, and a
// client reconnecting with either kind of id is replayed both.
import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { App } from '../context.ts';
import { listenForCommits, type CommitNotices } from '../cluster/commit-notices.ts';
import { eventsAfter, eventsInOrder, newestSeq, seqBefore, webhookEventType, type EventOfWorkspace } from '../emails/events.ts';
import { emailSummary, payloadOf, type Payload } from './payload.ts';
import { domainEventsAfter, domainSeqBefore, newestDomainEventSeq, workspaceDomainEvents, type DomainEventRow } from '../domains/domain-events.ts';

/** How far back a reconnecting client can catch up. */
export const REPLAY_WINDOW_MS = 24 * 60 * 60_000;
const POLL_MS = 250;
/** With commits heard from PostgreSQL (cluster/commit-notices.ts), a poll this often still, in case one is missed. */
const HEARD_POLL_MS = 5_000;
const HEARTBEAT_MS = 15_000;
const BATCH = 1000;
/** How much of the sequence one step of a catch-up reads (every workspace's events are in it). */
const CATCH_UP_SEQS = 5000;
/**
 * What a live client may leave unread before it is cut off. Its EventSource reconnects with the last id it
 * read and catches up at its own pace, so nothing is lost, and a client that stopped reading holds no more.
 */
export const MAX_UNREAD_BYTES = 256 * 1024;
/** The largest `data:` of one message: a payload beyond it goes out slimmed (fitted). */
export const MAX_MESSAGE_BYTES = 64 * 1024;
/** How long a client ended for falling behind has to take what it was sent before its connection is closed. */
const ENDED_GRACE_MS = 30_000;

export interface StreamFilter {
  workspaceId: string;
  /** `email.received`, ...; null for all. */
  types: Set<string> | null;
  inboxId: string | null;
  /** The address of `inboxId`: mail sent from it is that inbox's too. */
  inboxAddress?: string | null;
  /** An inbox key's inboxes: their mail's events alone, no domain events; null for all. */
  inboxIds?: string[] | null;
  /** The addresses of `inboxIds`, lower case. */
  addresses?: string[];
}

interface Subscriber extends StreamFilter {
  out: PassThrough;
  /** The last sequence number this client has (or had before it connected). */
  cursor: number;
  /** The same in the domain events' sequence. */
  dcursor: number;
  /** Caught up: the poller sends it what comes. */
  live: boolean;
}

export class EventStream {
  private readonly subscribers = new Set<Subscriber>();
  private polled = 0;
  private domainPolled = 0;
  private timer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  /** A poll still reading (a store that answers over the network) is not overtaken by the next one. */
  private polling = false;
  /** Woken while polling: poll again as soon as that one ends. */
  private woken = false;
  private lastPoll = 0;
  private notices: CommitNotices | null = null;

  constructor(private readonly app: App) {}

  async start(): Promise<void> {
    this.polled = await this.app.store.read(newestSeq());
    this.domainPolled = await this.app.store.read(newestDomainEventSeq());
    // Nodes sharing PostgreSQL: another node's events wake this stream when they commit.
    const url = this.app.config.databaseUrl;
    if (url) this.notices = listenForCommits(url, () => this.wake(), this.app.log);
    this.timer = setInterval(() => {
      if (!this.notices?.listening() || Date.now() - this.lastPoll >= HEARD_POLL_MS) void this.poll();
    }, POLL_MS);
    this.timer.unref();
    this.heartbeat = setInterval(() => {
      for (const s of this.subscribers) s.out.write(': keep-alive\n\n');
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  stop(): void {
    void this.notices?.stop();
    if (this.timer) clearInterval(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const s of this.subscribers) s.out.end();
    this.subscribers.clear();
  }

  /**
   * A stream for one client: what it missed since `lastEventId` (within the retention), then live events. The id
   * is an email event's seq, or `<email seq>:<domain event seq>` for a domain event (parseLastEventId).
   */
  async open(filter: StreamFilter, lastEventId: string | number | null): Promise<PassThrough> {
    const out = new PassThrough();
    const last = lastEventId === null ? null : parseLastEventId(String(lastEventId));
    const { newest, newestDomain, before } = await this.app.store.read(
      (function* () {
        // After email event N: the domain events written before it were sent (or filtered out) before it.
        return { newest: yield* newestSeq(), newestDomain: yield* newestDomainEventSeq(), before: last === null ? null : (last.domainSeq ?? (yield* domainSeqBefore(last.seq))) };
      })(),
    );
    const sub: Subscriber = {
      ...filter,
      out,
      cursor: last === null ? newest : Math.min(last.seq, newest),
      dcursor: before === null ? newestDomain : Math.min(before, newestDomain),
      live: false,
    };
    out.write(`retry: 2000\n: connected\n\n`);
    this.subscribers.add(sub);
    out.on('close', () => this.subscribers.delete(sub));
    if (sub.cursor >= newest && sub.dcursor >= newestDomain) {
      this.goLive(sub);
      return out;
    }
    const since = this.app.clock.now() - REPLAY_WINDOW_MS;
    if (sub.cursor < newest) sub.cursor = Math.max(sub.cursor, (await this.app.store.read(seqBefore(filter.workspaceId, since))) ?? newest);
    this.catchUp(sub, newest, newestDomain, since).catch((err) => {
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
  private async catchUp(sub: Subscriber, newest: number, newestDomain: number, since: number): Promise<void> {
    const gone = () => sub.out.destroyed || sub.out.writableEnded;
    while (!gone()) {
      const end = Math.max(newest, this.polled);
      const domainEnd = Math.max(newestDomain, this.domainPolled);
      // Checked and joined in one turn of the event loop: the poller hands out nothing in between.
      if (sub.cursor >= end && sub.dcursor >= domainEnd) {
        this.goLive(sub);
        return;
      }
      const upTo = Math.min(end, sub.cursor + CATCH_UP_SEQS);
      const emails = sub.cursor < upTo ? await this.app.store.read(eventsInOrder(sub.workspaceId, sub.cursor, upTo, since)) : [];
      // The domain events placed before the next slice's first email event (all of them in the last slice).
      const beforeEmailSeq = upTo >= end ? Number.MAX_SAFE_INTEGER : upTo + 1;
      const domains = await this.app.store.read(workspaceDomainEvents({ workspaceId: sub.workspaceId, after: sub.dcursor, upTo: domainEnd, beforeEmailSeq, since }));
      const summaryOf = this.lastSummary();
      for (const item of merged(emails, domains)) {
        if ('event' in item) await this.send(sub, item, this.messageOf(item, summaryOf));
        else this.sendDomainEventTo(sub, item);
        if (sub.out.writableNeedDrain) await drained(sub.out);
        if (gone()) return;
      }
      sub.cursor = Math.max(sub.cursor, upTo);
      if (upTo >= end) sub.dcursor = Math.max(sub.dcursor, domainEnd);
      await nextTurn();
    }
  }

  /** Hands a client to the poller, and polls: what committed while no client was live was not read (wake). */
  private goLive(sub: Subscriber): void {
    // The first live client: the poller, which read nothing for no one, goes on from where this one is.
    if (![...this.subscribers].some((s) => s.live)) {
      this.polled = Math.max(this.polled, sub.cursor);
      this.domainPolled = Math.max(this.domainPolled, sub.dcursor);
    }
    sub.live = true;
    this.wake();
  }

  /**
   * Another commit was heard. With no live client there is nothing to send: the slow poll skips ahead in its own
   * time, and a client that connects reads the newest seq itself (open), so a busy box does not spend two reads
   * on every commit for no one.
   */
  private wake(): void {
    if (![...this.subscribers].some((s) => s.live)) return;
    if (this.polling) this.woken = true;
    else void this.poll();
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    this.lastPoll = Date.now();
    try {
      // No one to send to: skip ahead (a client catching up reads on to wherever this is).
      if (![...this.subscribers].some((s) => s.live)) {
        const newest = await this.app.store.read(newestSeq());
        const newestDomain = await this.app.store.read(newestDomainEventSeq());
        // A client that went live meanwhile is served from its own place on (goLive), not from this later one.
        if (![...this.subscribers].some((s) => s.live)) [this.polled, this.domainPolled] = [newest, newestDomain];
        return;
      }
      const { polled, domainPolled } = this;
      let { domains, emails } = await this.app.store.read(
        (function* () {
          return { domains: yield* domainEventsAfter(domainPolled, BATCH), emails: yield* eventsAfter(polled, BATCH) };
        })(),
      );
      // A full batch of one kind holds back what of the other kind may come after its unread rest.
      const lastEmail = emails.length === BATCH ? emails[emails.length - 1].seq : Number.MAX_SAFE_INTEGER;
      const lastDomain = domains.length === BATCH ? domains[domains.length - 1].after_seq : Number.MAX_SAFE_INTEGER;
      // More may be waiting behind a full batch: read on at once rather than at the next commit heard.
      if (emails.length === BATCH || domains.length === BATCH) this.woken = true;
      domains = domains.filter((d) => d.after_seq < lastEmail);
      emails = emails.filter((e) => e.seq <= lastDomain);
      const summaryOf = this.lastSummary();
      for (const item of merged(emails, domains)) {
        if (!('event' in item)) {
          this.domainPolled = item.seq;
          this.sendDomainEvent(item);
          continue;
        }
        const e = item;
        this.polled = e.seq;
        // Made once for every stream that takes it: they all hold the same bytes until their sockets take them.
        const message = this.messageOf(e, summaryOf);
        for (const s of this.subscribers) {
          if (!s.live || s.workspaceId !== e.workspaceId || e.seq <= s.cursor) continue;
          if (s.out.writableLength <= MAX_UNREAD_BYTES) await this.send(s, e, message);
          else this.drop(s);
        }
      }
    } catch (err) {
      this.app.log.error('event stream: reading the events failed', { err });
    } finally {
      this.polling = false;
      if (this.woken) {
        this.woken = false;
        void this.poll();
      }
    }
  }

  /** A domain event to the live clients of its workspace. */
  private sendDomainEvent(e: DomainEventRow): void {
    for (const s of this.subscribers) {
      if (!s.live || s.workspaceId !== e.workspace_id || e.seq <= s.dcursor) continue;
      if (s.out.writableLength <= MAX_UNREAD_BYTES) this.sendDomainEventTo(s, e);
      else this.drop(s);
    }
  }

  /**
   * Sends a domain event if the client's filter takes it (a client limited to an inbox takes only that inbox's
   * events). Its id carries the client's place in both sequences.
   */
  private sendDomainEventTo(s: Subscriber, e: DomainEventRow): void {
    s.cursor = Math.max(s.cursor, e.after_seq);
    s.dcursor = e.seq;
    if (s.types && !s.types.has(e.type)) return;
    if (s.inboxId && e.inbox_id !== s.inboxId) return;
    // An inbox key's stream carries its inboxes' email events alone (http/scopes.ts).
    if (s.inboxIds) return;
    s.out.write(`id: ${s.cursor}:${e.seq}\nevent: ${e.type}\ndata: ${e.payload}\n\n`);
  }

  /**
   * Ends a live client that left more than MAX_UNREAD_BYTES unread: not destroyed, so what it has is still its to
   * read, then a comment saying why and a `retry:` for its EventSource, which reconnects with the last id it
   * read. A client that reads nothing more is disconnected after ENDED_GRACE_MS, so it holds nothing for long.
   */
  private drop(s: Subscriber): void {
    this.subscribers.delete(s);
    this.app.metrics?.eventStream('dropped');
    s.out.end(`: ended: more than ${MAX_UNREAD_BYTES} bytes were left unread; reconnect with Last-Event-ID to go on\nretry: 1000\n\n`);
    const timer = setTimeout(() => s.out.destroy(), ENDED_GRACE_MS);
    timer.unref();
    s.out.once('close', () => clearTimeout(timer));
  }

  /** An event's message, its payload made only when a client's filter asks for it, and then once; its email's summary read through `summaryOf`. */
  private messageOf(e: EventOfWorkspace, summaryOf: (e: EventOfWorkspace) => Promise<Record<string, unknown> | null>): Message {
    let payload: Promise<Payload> | undefined;
    let bytes: Promise<Buffer> | undefined;
    const payloadOnce = () => (payload ??= summaryOf(e).then((email) => payloadOf(e.event, email)));
    return {
      type: webhookEventType(e.event.type),
      payload: payloadOnce,
      bytes: () => (bytes ??= payloadOnce().then((p) => Buffer.from(`id: ${e.seq}\nevent: ${webhookEventType(e.event.type)}\ndata: ${fitted(p)}\n\n`))),
    };
  }

  /**
   * Email summaries for a poll's batch or a catch-up's slice: the events of one email that follow each other
   * share the summary read for the first (one summary held at a time). Each read is a round trip on PostgreSQL,
   * and a burst of events, or a day caught up on, often has many of one email in a row.
   */
  private lastSummary(): (e: EventOfWorkspace) => Promise<Record<string, unknown> | null> {
    let last: { key: string; summary: Promise<Record<string, unknown> | null> } | null = null;
    return (e) => {
      const received = e.event.type === 'received';
      const key = `${e.event.emailId} ${received}`;
      if (last?.key !== key) last = { key, summary: this.app.store.read(emailSummary(this.app.config.publicUrl, e.workspaceId, e.event.emailId, received)) };
      return last.summary;
    };
  }

  /** Sends the event if the client's filter takes it. */
  private async send(s: Subscriber, e: EventOfWorkspace, message: Message): Promise<void> {
    s.cursor = e.seq;
    if (s.types && !s.types.has(message.type)) return;
    // An inbox's mail: received there, or sent from its address (as an inbox key sees it, emails/scope.ts).
    const ofInboxes = async (ids: string[], addresses: string[]) => {
      const m = (await message.payload()).data.email as { inboxId?: string | null; direction?: string; from?: { address?: string } } | null;
      return !!m && (ids.includes(m.inboxId ?? '') || (m.direction === 'out' && addresses.includes(m.from?.address?.toLowerCase() ?? '')));
    };
    if (s.inboxId && !(await ofInboxes([s.inboxId], s.inboxAddress ? [s.inboxAddress] : []))) return;
    if (s.inboxIds && !(await ofInboxes(s.inboxIds, s.addresses ?? []))) return;
    const bytes = await message.bytes();
    // The client may have left, or been cut off, while the payload was read.
    if (!s.out.writableEnded) s.out.write(bytes);
  }
}

/** `N` (an email event's seq) or `N:D` (a domain event's, after email event N); null when it is neither. */
export function parseLastEventId(id: string): { seq: number; domainSeq: number | null } | null {
  const m = /^(\d{1,15})(?::(\d{1,15}))?$/.exec(id);
  return m ? { seq: Number(m[1]), domainSeq: m[2] === undefined ? null : Number(m[2]) } : null;
}

/** Email and domain events in one order: a domain event comes right after the email event it names (after_seq). */
function* merged(emails: EventOfWorkspace[], domains: DomainEventRow[]): Generator<EventOfWorkspace | DomainEventRow> {
  let d = 0;
  for (const e of emails) {
    while (d < domains.length && domains[d].after_seq < e.seq) yield domains[d++];
    yield e;
  }
  while (d < domains.length) yield domains[d++];
}

interface Message {
  type: string;
  payload: () => Promise<Payload>;
  /** The SSE message as sent: the same Buffer for every stream. */
  bytes: () => Promise<Buffer>;
}

/**
 * The payload's JSON in at most MAX_MESSAGE_BYTES: whole when it fits (nearly always); else the email's summary
 * without the received mail's text, attachments and authentication results; else only the email's id,
 * direction and links, and the event without its data. A slimmed part says `truncated: true`; GET
 * /emails/:id (the summary's links.self) and GET /emails/:id/events have the rest.
 */
export function fitted(payload: Payload): string {
  const whole = JSON.stringify(payload);
  if (whole.length <= MAX_MESSAGE_BYTES / 3 || Buffer.byteLength(whole) <= MAX_MESSAGE_BYTES) return whole;
  const email = payload.data.email as Record<string, unknown> | null;
  const event = payload.data.event as Record<string, unknown>;
  if (email) {
    const { text: _text, attachments: _attachments, authentication: _authentication, ...rest } = email;
    const slim = JSON.stringify({ ...payload, data: { ...payload.data, email: { ...rest, truncated: true } } });
    if (Buffer.byteLength(slim) <= MAX_MESSAGE_BYTES) return slim;
  }
  const least = email && { id: email.id, direction: email.direction, ...(email.links ? { links: email.links } : {}), truncated: true };
  return JSON.stringify({ ...payload, data: { email: least, event: { ...event, data: {}, truncated: true } } });
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
