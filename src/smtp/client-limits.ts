// The per-client limits of one SMTP listener, after Postfix's anvil and smtpd: connections open at once and
// opened per minute from one client address, open at once from one network, the slots of smtp_max_clients
// kept for clients that delivered mail before, and the count of a session's error replies with the growing
// delay they earn. Counters and arithmetic only: session.ts applies the verdicts to smtp-server's sockets.
import { networkOf } from '../dns/ip-ranges.ts';

/** Postfix anvil_rate_time_unit: the window of the connection rate, from an address's first connection in it. */
export const ANVIL_RATE_TIME_UNIT = 60_000;

/** Postfix smtpd_soft_error_limit (10): past this many errors, each further error reply is delayed. */
export const SMTPD_SOFT_ERROR_LIMIT = 10;

/** Postfix smtpd_hard_error_limit (20): the error that would be the 20th is answered 421 and the session ends. */
export const SMTPD_HARD_ERROR_LIMIT = 20;

/**
 * Postfix smtpd_error_sleep_time is 1 s per reply; ours grows by this much (ms) with each error past the soft
 * limit, up to SMTPD_ERROR_SLEEP_TIME_MAX: errors 11 to 19 wait 100, 200, 300, then 400 ms each, 3.0 s in all
 * before the 421. A client that waits for each reply (a directory harvest) is slowed; the 421 is what bounds it.
 */
export const SMTPD_ERROR_SLEEP_TIME = 100;
export const SMTPD_ERROR_SLEEP_TIME_MAX = 400;

/**
 * Submission: replies a session may get before a successful AUTH (greeting, 220 to STARTTLS and 334 challenges
 * not counted); the 10th is a 421 instead. smtp-server's own maxAllowedUnauthenticatedCommands (also 10) only
 * counts once AUTH is offered, which on submission is after STARTTLS.
 */
export const MAX_UNAUTHENTICATED_COMMANDS = 10;

/** One client, however it wrote its address: IPv4-mapped IPv6 (::ffff:192.0.2.1) is plain IPv4, case folded. */
export { plainAddress as clientAddress } from '../dns/ip-ranges.ts';

/** How long (ms) to hold back the reply that is a session's `errors`-th error. */
export function errorSleep(errors: number): number {
  if (errors <= SMTPD_SOFT_ERROR_LIMIT) return 0;
  return Math.min(SMTPD_ERROR_SLEEP_TIME * (errors - SMTPD_SOFT_ERROR_LIMIT), SMTPD_ERROR_SLEEP_TIME_MAX);
}

interface Client {
  /** Connections admitted and not yet closed. */
  open: number;
  /** Start of the current rate window, and the connections tried in it (refused ones too, as anvil counts). */
  windowStart: number;
  tried: number;
  /** Whether a refusal was logged in this window: one log line per address a minute, not one per connection. */
  reported: boolean;
}

/** One network (networkOf): its open connections, and one refusal logged per network a minute. */
interface Network {
  open: number;
  windowStart: number;
  reported: boolean;
}

export interface ClientLimits {
  /** Connections open at once from one address (smtp_max_clients_per_ip). */
  maxOpen: number;
  /** Connections tried per ANVIL_RATE_TIME_UNIT from one address (smtp_connection_rate_per_ip); 0 = no limit. */
  ratePerMinute: number;
  /** Connections open at once from one IPv4 /24 or IPv6 /64 (smtp_max_clients_per_network). */
  maxOpenPerNetwork: number;
  /** Connections open at once in all (smtp_max_clients). */
  maxTotal: number;
  /** Of maxTotal, the slots only a known sender may take (smtp_reserved_clients); below maxTotal. */
  reserved: number;
}

/**
 * A refusal's RFC 3463 code: 4.7.0 (policy) for a client over its own limits, or a stranger when only the
 * reserved slots are left; 4.3.2 (system not accepting network messages, Postfix postscreen's "All server
 * ports are busy") when every slot is taken.
 */
export type Admission = { ok: true } | { ok: false; status: '4.7.0' | '4.3.2'; reason: string; report: boolean };

/**
 * Counts one listener's connections per client address, per network and in all. admit() when a connection
 * arrives, release() when it has closed: each admitted id is released at most once. Addresses and networks with
 * nothing open and an expired window are forgotten once a window, so memory follows the clients seen in the
 * last minute or two.
 */
export class ClientTable {
  private readonly clients = new Map<string, Client>();
  private readonly networks = new Map<string, Network>();
  /** Admitted connection id -> its address and network. */
  private readonly admitted = new Map<string, { address: string; network: string }>();
  private total = 0;
  private sweptAt = 0;
  /** When a refusal for want of slots was last logged (one line a minute for the listener), or never. */
  private busyReportedAt = -Infinity;

  constructor(private readonly limits: ClientLimits) {}

  /** `known`: the client's network delivered mail here before (KnownNetworks), so it may take a reserved slot. */
  admit(id: string, address: string, now: number, known = false): Admission {
    this.sweep(now);
    const client = this.clients.get(address) ?? { open: 0, windowStart: now, tried: 0, reported: false };
    this.clients.set(address, client);
    if (now - client.windowStart >= ANVIL_RATE_TIME_UNIT) Object.assign(client, { windowStart: now, tried: 0, reported: false });
    client.tried++;
    const name = networkOf(address);
    const network = this.networks.get(name) ?? { open: 0, windowStart: now, reported: false };
    this.networks.set(name, network);
    if (now - network.windowStart >= ANVIL_RATE_TIME_UNIT) Object.assign(network, { windowStart: now, reported: false });

    const refuse = (reason: string, by: { reported: boolean }): Admission => {
      const report = !by.reported;
      by.reported = true;
      return { ok: false, status: '4.7.0', reason, report };
    };
    const { ratePerMinute, maxOpen, maxOpenPerNetwork, maxTotal, reserved } = this.limits;
    if (ratePerMinute > 0 && client.tried > ratePerMinute) {
      return refuse(`Too many connections from your address (over ${ratePerMinute} a minute), try again later`, client);
    }
    if (client.open >= maxOpen) return refuse(`Too many connections from your address (${maxOpen} open), try again later`, client);
    if (network.open >= maxOpenPerNetwork) {
      return refuse(`Too many connections from your network ${name} (${maxOpenPerNetwork} open), try again later`, network);
    }
    const full = this.total >= maxTotal;
    if (full || (!known && this.total >= maxTotal - reserved)) {
      const report = now - this.busyReportedAt >= ANVIL_RATE_TIME_UNIT;
      if (report) this.busyReportedAt = now;
      if (full) return { ok: false, status: '4.3.2', reason: 'All connection slots are busy, try again later', report };
      return { ok: false, status: '4.7.0', reason: 'Too many connections: the slots left are kept for servers that delivered mail here before, try again later', report };
    }
    client.open++;
    network.open++;
    this.total++;
    this.admitted.set(id, { address, network: name });
    return { ok: true };
  }

  /** The connection `id` has closed; ids never admitted (or already released) are ignored. */
  release(id: string): void {
    const entry = this.admitted.get(id);
    if (entry === undefined) return;
    this.admitted.delete(id);
    this.total--;
    const client = this.clients.get(entry.address);
    if (client) client.open--;
    const network = this.networks.get(entry.network);
    if (network) network.open--;
  }

  /** Connections open now, in all. */
  get openTotal(): number {
    return this.total;
  }

  /** Connections open from `address` now. */
  openFrom(address: string): number {
    return this.clients.get(address)?.open ?? 0;
  }

  /** Connections open from the network `network` (as networkOf writes it) now. */
  openFromNetwork(network: string): number {
    return this.networks.get(network)?.open ?? 0;
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.clients.size;
  }

  private sweep(now: number): void {
    if (now - this.sweptAt < ANVIL_RATE_TIME_UNIT) return;
    this.sweptAt = now;
    for (const [address, client] of this.clients) {
      if (client.open === 0 && now - client.windowStart >= ANVIL_RATE_TIME_UNIT) this.clients.delete(address);
    }
    for (const [name, network] of this.networks) {
      if (network.open === 0 && now - network.windowStart >= ANVIL_RATE_TIME_UNIT) this.networks.delete(name);
    }
  }
}

/** What to do with a reply: write it after `delay` ms (0: at once), or write the 421 `end` in its place and close. */
export type ReplyVerdict = { delay: number } | { end: string };

/** A reply about to be written, as ReplyCount needs to see it. */
export interface Reply {
  code: number;
  /** The 250 to the end of DATA: a message was delivered. */
  delivered: boolean;
  /** The session has authenticated (session.user is set). */
  authenticated: boolean;
}

/**
 * The replies of one session: its errors (4xx and 5xx, whoever wrote them) since it last delivered a message,
 * as Postfix counts "errors without delivering mail", and, where the listener requires AUTH, its replies
 * before a successful one.
 */
export class ReplyCount {
  private errors = 0;
  private unauthenticated = 0;

  /** `beforeAuth`: at most this many replies before AUTH (MAX_UNAUTHENTICATED_COMMANDS), or null: no limit. */
  constructor(private readonly beforeAuth: number | null) {}

  judge(reply: Reply): ReplyVerdict {
    const { code } = reply;
    // 421 ends the session by itself; 220 is the greeting or the go-ahead for STARTTLS; 334 is a step of AUTH.
    if (code === 421 || code === 220 || code === 334) return { delay: 0 };
    if (this.beforeAuth !== null && !reply.authenticated && ++this.unauthenticated >= this.beforeAuth) {
      return { end: 'Too many commands without authentication, closing connection' };
    }
    if (reply.delivered) this.errors = 0;
    if (code < 400) return { delay: 0 };
    this.errors++;
    if (this.errors >= SMTPD_HARD_ERROR_LIMIT) return { end: 'Too many errors, closing connection' };
    return { delay: errorSleep(this.errors) };
  }
}
