// One delivery attempt for a batch of messages to one destination (a domain's MX hosts, or the relay relays.ts
// chose for them): its route (route.ts), the TLS each MX host must prove (outbound-tls.ts: DANE, MTA-STS; relays
// bypass both, the operator chose them), then per host a fan-out
// over up to maxConnectionsPerHost pooled sessions (pool.ts, connect.ts), one transaction each (transact.ts). It
// must not retry later (the queue does), open a socket but through the injected dial, or throw for what a peer did.
import type { Resolver } from 'node:dns/promises';
import type { Clock } from '../clock.ts';
import type { Dial } from '../context.ts';
import { openSession, type ConnectOptions } from './connect.ts';
import { NO_ANSWER, checkAddresses, fromSession, noSession, outcomes, settle, undecided, type Failure, type OutboundMessage, type RecipientOutcome, type Work } from './outcome.ts';
import { ConnectionPool, type Session } from './pool.ts';
import type { RelayRule } from '../config/config.ts';
import { relayFor, relaysFrom, type Relay, type Relays } from './relays.ts';
import { Routes, type Target } from './route.ts';
import { transact } from './transact.ts';
import { planTls, type OutboundTlsChecks } from './outbound-tls.ts';

export type { OutboundMessage, RecipientOutcome } from './outcome.ts';

export interface DelivererOptions {
  resolver: Resolver;
  /** Where sockets come from (app.dial). */
  dial: Dial;
  /** Time for the route cache (app.clock). */
  clock: Clock;
  heloName: string;
  /** MAILWRIGHT_MTA_PORT. */
  port: number;
  /** MAILWRIGHT_ALLOW_PRIVATE_DELIVERY. */
  allowPrivate: boolean;
  /** The smarthost for mail no [[relay]] matches: smtp://user:pass@host:port (STARTTLS when offered, AUTH), smtps://... */
  relayUrl?: string | null;
  /** [[relay]]: relays for some senders or recipient domains, the first that matches carries the mail. */
  relays?: RelayRule[];
  /** Default 10. */
  maxConnectionsPerHost?: number;
  /** Keep pooled connections this long between transactions, default 3000. */
  idleMs?: number;
  /** TCP connect, greeting and STARTTLS together; default 60 s. */
  connectTimeoutMs?: number;
  /** Inactivity on an open session; default 10 min (RFC 5321 4.5.3.2.6 waits 10 min for the final reply). */
  socketTimeoutMs?: number;
  /** tls_ca_file: a CA trusted besides the system's (tests, a private CA). */
  tlsCa?: string;
  /** MTA-STS, DANE and the TLS report's counts; absent: STARTTLS as Postfix's "may", nothing checked or counted. */
  tlsChecks?: OutboundTlsChecks;
}

/** What the queue delivers through: the Deliverer, or try mode's local outbox (local-outbox.ts). */
export interface Transport {
  relayFor(senderDomain: string | null, recipientDomain: string): Relay | null;
  deliver(domain: string, messages: OutboundMessage[], relay?: Relay | null): Promise<RecipientOutcome[]>;
  setRelays(relayUrl: string | null, rules: RelayRule[]): void;
  close(): Promise<void>;
}

const DEFAULT_MAX_CONNECTIONS = 10;
const DEFAULT_IDLE_MS = 3000;
const DEFAULT_CONNECT_TIMEOUT_MS = 60_000;
const DEFAULT_SOCKET_TIMEOUT_MS = 10 * 60_000;

export class Deliverer implements Transport {
  private readonly routes: Routes;
  private relays: Relays;
  private readonly connect: ConnectOptions;
  private readonly pool: ConnectionPool;
  private readonly maxConnections: number;
  private readonly tlsChecks: OutboundTlsChecks | undefined;

  constructor(opts: DelivererOptions) {
    this.tlsChecks = opts.tlsChecks;
    this.relays = relaysFrom(opts.relayUrl, opts.relays);
    this.routes = new Routes({ resolver: opts.resolver, clock: opts.clock, allowPrivate: opts.allowPrivate });
    this.connect = {
      dial: opts.dial,
      heloName: opts.heloName,
      port: opts.port,
      connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      socketTimeoutMs: opts.socketTimeoutMs ?? DEFAULT_SOCKET_TIMEOUT_MS,
      tlsCa: opts.tlsCa,
      observe: opts.tlsChecks ? (session) => opts.tlsChecks!.observe(session) : undefined,
    };
    this.maxConnections = Math.max(1, opts.maxConnectionsPerHost ?? DEFAULT_MAX_CONNECTIONS);
    this.pool = new ConnectionPool(this.maxConnections, opts.idleMs ?? DEFAULT_IDLE_MS);
  }

  /** New relays (`systemctl reload`): batches claimed from now on go their way; sessions open to old ones idle out. */
  setRelays(relayUrl: string | null, rules: RelayRule[]): void {
    this.relays = relaysFrom(relayUrl, rules);
  }

  /** The relay that carries mail from `senderDomain` to `recipientDomain`, or null: straight to its MX. */
  relayFor(senderDomain: string | null, recipientDomain: string): Relay | null {
    return relayFor(this.relays, senderDomain, recipientDomain);
  }

  /**
   * Every recipient of every message gets exactly one outcome (duplicates within a message count once). The
   * messages go to `domain`'s MX hosts, or through `relay` (by default the one that recipient domain alone selects).
   */
  async deliver(domain: string, messages: OutboundMessage[], relay: Relay | null = this.relayFor(null, domain)): Promise<RecipientOutcome[]> {
    const works = messages.map(checkAddresses);
    let queue = works.filter((w) => undecided(w).length > 0);
    if (queue.length === 0) return outcomes(works);

    const route = await this.routes.lookup(domain, relay);
    if (route.kind !== 'hosts') {
      const result = route.kind === 'permanent' ? 'bounced' : 'deferred';
      for (const w of queue) settle(w, undecided(w), noSession(result, { response: route.reason, code: null, enhanced: route.code }, null));
      return outcomes(works);
    }

    let hosts = route.hosts;
    if (!relay && this.tlsChecks) {
      const plan = await planTls(this.tlsChecks, domain, hosts);
      if ('none' in plan) {
        // RFC 8461 4.1: in enforce mode a host the policy does not name is never tried.
        this.tlsChecks.observe({ domain, policy: plan.policy, failure: { type: 'validation-failure', reason: plan.none }, sendingIp: '', receivingMx: '', receivingIp: '' });
        for (const w of queue) settle(w, undecided(w), noSession('deferred', { response: plan.none, code: null, enhanced: '4.7.5', tlsPolicy: 'mta-sts' }, null));
        return outcomes(works);
      }
      hosts = plan.hosts;
    }

    let last: { failure: Failure; host: string | null } = { failure: { response: 'no host to deliver to', code: null, enhanced: NO_ANSWER }, host: null };
    for (const target of hosts) {
      if (queue.length === 0) break;
      const left = await this.sendVia(target, relay, queue);
      queue = left.remaining;
      if (left.failure) last = { failure: left.failure, host: target.host };
    }
    // No host could take these: the queue tries again later.
    for (const w of queue) settle(w, undecided(w), noSession('deferred', last.failure, last.host));
    return outcomes(works);
  }

  /** QUITs idle connections; connections still in use are closed when their deliver() is done with them. */
  close(): Promise<void> {
    return this.pool.close();
  }

  /**
   * Sends what it can of `queue` through one host over up to maxConnectionsPerHost sessions; returns what it
   * could not even try (no session could be had) and the last failure.
   */
  private async sendVia(target: Target, relay: Relay | null, queue: Work[]): Promise<{ remaining: Work[]; failure: Failure | null }> {
    const shared = [...queue];
    const wanted = () => shared.length > 0;
    const open = () => openSession(this.connect, target, relay);
    const pool = target.pool ?? target.host;
    let failure: Failure | null = null;

    const worker = async (first: Session): Promise<void> => {
      let session: Session | null = first;
      while (session && shared.length > 0) {
        const work = shared.shift()!;
        const result = await transact(session, work);
        session.reused = false;
        if (result.lost) {
          failure = result.lost.failure;
          // A pooled connection the server had already dropped says nothing about the message: try it again.
          if (result.lost.untouched && !work.requeued) {
            work.requeued = true;
            shared.unshift(work);
          } else {
            // A 421 or a drop mid-transaction: what was not decided waits for the next attempt.
            settle(work, undecided(work), fromSession(session, 'deferred', result.lost.failure));
          }
          this.pool.release(pool, session);
          const next = await this.pool.acquire(pool, open, { wait: true, wanted });
          if (next && 'failure' in next) failure = next.failure;
          session = next && 'session' in next ? next.session : null;
        }
      }
      if (session) this.pool.release(pool, session);
    };

    // One connection first, alone: a host that is down costs one attempt per address, not one per worker.
    const first = await this.pool.acquire(pool, open, { wait: true, wanted });
    if (!first) return { remaining: shared, failure };
    if ('failure' in first) return { remaining: shared, failure: first.failure };
    const workers = [worker(first.session)];
    // Spread the rest over whatever slots this host has free right now; a busy host is not waited for twice.
    for (let i = 1; i < Math.min(this.maxConnections, shared.length); i++) {
      workers.push(
        (async () => {
          const extra = await this.pool.acquire(pool, open, { wait: false, wanted });
          if (extra && 'session' in extra) await worker(extra.session);
        })(),
      );
    }
    await Promise.all(workers);
    return { remaining: shared, failure };
  }
}
