// SMTP sessions pooled per host: at most `max` open (busy or idle) per host across every delivery, idle ones
// handed to the next caller for the same host within idleMs, then QUIT. It opens nothing itself (the caller
// passes `open`) and knows no SMTP beyond QUIT.
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Failure, SessionFacts } from './outcome.ts';

const QUIT_GRACE_MS = 1000;

/** An open SMTP session (connect.ts opens it) and what outcomes report about it (its host and TLS). */
export interface Session extends SessionFacts {
  conn: SMTPConnection;
  state: 'busy' | 'idle' | 'gone';
  /** SMTPConnection ended (QUIT, 421, drop, timeout). */
  dead: boolean;
  /** Taken from the idle pool and not used since: the server may have dropped it meanwhile. */
  reused: boolean;
  idleTimer: NodeJS.Timeout | null;
}

interface Slots {
  /** Connections open or opening, busy or idle. */
  live: number;
  idle: Session[];
  waiters: Array<() => void>;
}

/**
 * Connections per host: at most `max` open (busy or idle) across every deliver() call; idle ones are handed to
 * the next acquire() for the same host within idleMs, then QUIT.
 */
export class ConnectionPool {
  private readonly max: number;
  private readonly idleMs: number;
  // One entry per host with a connection open or wanted; an MTA talks to too many hosts to keep them all.
  private readonly hosts = new Map<string, Slots>();
  private closed = false;
  private readonly quitting = new Set<Promise<void>>();

  constructor(max: number, idleMs: number) {
    this.max = max;
    this.idleMs = idleMs;
  }

  /**
   * An idle session, or a new one when the host has a free slot. With `wait`, waits for a slot while `wanted`
   * says the caller still has work; null when it stopped waiting or (without `wait`) no slot was free.
   */
  async acquire(
    host: string,
    open: () => Promise<{ session: Session } | { failure: Failure }>,
    opts: { wait: boolean; wanted: () => boolean },
  ): Promise<{ session: Session } | { failure: Failure } | null> {
    let woken = false;
    for (;;) {
      // Looked up afresh each time: a host's entry is dropped while nothing uses it.
      const slots = this.slots(host);
      if (!opts.wanted()) {
        // A wake-up this caller will not use belongs to the next waiter.
        if (woken) this.wakeOne(slots);
        this.forgetIfUnused(host, slots);
        return null;
      }
      const idle = slots.idle.pop();
      if (idle) {
        clearTimeout(idle.idleTimer ?? undefined);
        idle.idleTimer = null;
        idle.state = 'busy';
        idle.reused = true;
        return { session: idle };
      }
      if (slots.live < this.max) {
        slots.live++;
        const opened = await open();
        if ('failure' in opened) {
          this.free(host, slots);
          return opened;
        }
        const { session } = opened;
        session.conn.once('end', () => this.ended(host, session));
        return opened;
      }
      if (!opts.wait) return null;
      await new Promise<void>((resolve) => slots.waiters.push(resolve));
      woken = true;
    }
  }

  release(host: string, session: Session): void {
    if (session.state !== 'busy') return;
    const slots = this.slots(host);
    if (session.dead || session.conn.destroyed || this.closed) {
      session.state = 'gone';
      if (!session.dead && !session.conn.destroyed) this.quit(session);
      this.free(host, slots);
      return;
    }
    session.state = 'idle';
    session.idleTimer = setTimeout(() => {
      const at = slots.idle.indexOf(session);
      if (at >= 0) slots.idle.splice(at, 1);
      session.state = 'gone';
      session.idleTimer = null;
      this.quit(session);
      this.free(host, slots);
    }, this.idleMs);
    slots.idle.push(session);
    this.wakeOne(slots);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const [host, slots] of [...this.hosts]) {
      for (const session of slots.idle.splice(0)) {
        clearTimeout(session.idleTimer ?? undefined);
        session.state = 'gone';
        this.quit(session);
        this.free(host, slots);
      }
    }
    await Promise.all([...this.quitting]);
  }

  /** The server (or SMTPConnection) ended a session: an idle one frees its slot now, a busy one on release. */
  private ended(host: string, session: Session): void {
    session.dead = true;
    if (session.state !== 'idle') return;
    const slots = this.slots(host);
    const at = slots.idle.indexOf(session);
    if (at >= 0) slots.idle.splice(at, 1);
    clearTimeout(session.idleTimer ?? undefined);
    session.state = 'gone';
    this.free(host, slots);
  }

  private quit(session: Session): void {
    const { conn } = session;
    const done = new Promise<void>((resolve) => {
      if (conn.destroyed) return resolve();
      // A server that never answers QUIT does not get to hold the socket open.
      const timer = setTimeout(() => conn.close(), QUIT_GRACE_MS);
      conn.once('end', () => {
        clearTimeout(timer);
        resolve();
      });
      conn.quit();
    });
    this.quitting.add(done);
    void done.then(() => this.quitting.delete(done));
  }

  /** A connection of the host is gone: its slot goes to a waiter, and an unused host is forgotten. */
  private free(host: string, slots: Slots): void {
    slots.live--;
    this.wakeOne(slots);
    this.forgetIfUnused(host, slots);
  }

  private forgetIfUnused(host: string, slots: Slots): void {
    if (slots.live === 0 && slots.idle.length === 0 && slots.waiters.length === 0 && this.hosts.get(host) === slots) this.hosts.delete(host);
  }

  private wakeOne(slots: Slots): void {
    slots.waiters.shift()?.();
  }

  private slots(host: string): Slots {
    let slots = this.hosts.get(host);
    if (!slots) {
      slots = { live: 0, idle: [], waiters: [] };
      this.hosts.set(host, slots);
    }
    return slots;
  }
}
