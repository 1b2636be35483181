// One delivery attempt for a batch of messages to one destination (its MX hosts, or the relay): an outcome per
// recipient as data; SMTP only through nodemailer's SMTPConnection, over connections pooled per host. It must not
// retry later (the queue does), resolve names but through the given Resolver, or throw for what a peer or DNS did.
import { isAscii } from 'node:buffer';
import net from 'node:net';
import tls from 'node:tls';
import type { Resolver } from 'node:dns/promises';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SMTPConnectionEnvelope, SMTPConnectionSendInfo, SMTPError } from 'nodemailer/lib/smtp-connection';
import { lookupHost, resolveMxRoute } from '../dns/mx.ts';
import { ConnectionPool, type Failure, type Session } from './pool.ts';

export interface OutboundMessage {
  id: string;
  /** '' for the null sender (MAIL FROM:<>). */
  envelopeFrom: string;
  recipients: string[];
  /** The exact bytes to transmit, CRLF line endings only. */
  raw: Buffer;
}

export interface RecipientOutcome {
  messageId: string;
  recipient: string;
  result: 'delivered' | 'deferred' | 'bounced';
  /** SMTP reply code, null when none (DNS, connection). */
  code: number | null;
  /** Enhanced status code: the reply's (e.g. "5.1.1"), or ours (RFC 3463) when we decided without a reply. */
  enhanced: string | null;
  /** The server's reply as sent (code included), or our reason. */
  response: string;
  /** MX host name (or relay host) that answered, or the last one tried. */
  mx: string | null;
  /** The transaction was encrypted. */
  tls: boolean;
  /** The peer certificate verified against the MX host name (recorded only: delivery never depends on it). */
  tlsVerified: boolean;
  /** Why TLS was not used although offered (STARTTLS failed or was refused), or why the certificate did not verify. */
  tlsError: string | null;
}

export interface DelivererOptions {
  resolver: Resolver;
  heloName: string;
  /** MAILWRIGHT_MTA_PORT. */
  port: number;
  /** MAILWRIGHT_ALLOW_PRIVATE_DELIVERY. */
  allowPrivate: boolean;
  /** smtp://user:pass@host:port (STARTTLS when offered, AUTH), smtps://... (implicit TLS). */
  relayUrl?: string | null;
  /** Default 10. */
  maxConnectionsPerHost?: number;
  /** Keep pooled connections this long between transactions, default 3000. */
  idleMs?: number;
  /** TCP connect, greeting and STARTTLS together; default 60 s. */
  connectTimeoutMs?: number;
  /** Inactivity on an open session; default 10 min (RFC 5321 4.5.3.2.6 waits 10 min for the final reply). */
  socketTimeoutMs?: number;
  /** Extra trusted CA for tlsVerified (tests only). */
  tlsCa?: string;
}

interface Target {
  /** MX host name or relay host: pool key, SNI name and what outcomes report as `mx`. */
  host: string;
  addresses: string[];
}

interface Relay {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  pass: string;
}



type Verdict = Omit<RecipientOutcome, 'messageId' | 'recipient'>;

/** The envelope as SMTPConnection leaves it after send(): it records the refused MAIL FROM here too. */
type LiveEnvelope = SMTPConnectionEnvelope & { mailError?: SMTPError };

/** One message's place in the batch: recipients in order, each decided at most once. */
interface Work {
  message: OutboundMessage;
  verdicts: Map<string, Verdict | null>;
  /** Already put back once after a reused connection failed before any reply. */
  requeued: boolean;
}

const DEFAULT_MAX_CONNECTIONS = 10;
const ROUTE_CACHE_MS = 5000;
const DEFAULT_IDLE_MS = 3000;
const DEFAULT_CONNECT_TIMEOUT_MS = 60_000;
const DEFAULT_SOCKET_TIMEOUT_MS = 10 * 60_000;
// RFC 3463 codes for what we decide without a reply.
const BAD_MAILBOX = '5.1.3';
const BAD_SENDER = '5.1.7';
const TOO_BIG = '5.3.4';
const NO_ANSWER = '4.4.1';
const BAD_CONNECTION = '4.4.2';
const DNS_TROUBLE = '4.4.3';

export class Deliverer {
  private readonly opts: DelivererOptions;
  private readonly relay: Relay | null;
  private readonly pool: ConnectionPool;
  private readonly maxConnections: number;

  private readonly routes = new Map<string, { route: Awaited<ReturnType<typeof resolveMxRoute>>; until: number }>();

  constructor(opts: DelivererOptions) {
    this.opts = opts;
    this.relay = opts.relayUrl ? parseRelayUrl(opts.relayUrl) : null;
    this.maxConnections = Math.max(1, opts.maxConnectionsPerHost ?? DEFAULT_MAX_CONNECTIONS);
    this.pool = new ConnectionPool(this.maxConnections, opts.idleMs ?? DEFAULT_IDLE_MS);
  }

  /** Every recipient of every message gets exactly one outcome (duplicates within a message count once). */
  async deliver(domain: string, messages: OutboundMessage[]): Promise<RecipientOutcome[]> {
    const works = messages.map(checkAddresses);
    let queue = works.filter((w) => undecided(w).length > 0);
    if (queue.length === 0) return outcomes(works);

    const route = await this.route(domain);
    if (route.kind !== 'hosts') {
      const result = route.kind === 'permanent' ? 'bounced' : 'deferred';
      for (const w of queue) settle(w, undecided(w), noSession(result, { response: route.reason, code: null, enhanced: route.code }, null));
      return outcomes(works);
    }

    let last: { failure: Failure; host: string | null } = { failure: { response: 'no host to deliver to', code: null, enhanced: NO_ANSWER }, host: null };
    for (const target of route.hosts) {
      if (queue.length === 0) break;
      const left = await this.sendVia(target, queue);
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

  private async route(domain: string): Promise<{ kind: 'hosts'; hosts: Target[] } | { kind: 'permanent' | 'temporary'; code: string; reason: string }> {
    if (!this.relay) {
      // A burst to one domain comes in many batches: one lookup serves them for a few seconds. Temporary
      // failures are never kept, so a retry always asks again.
      const now = Date.now();
      const known = this.routes.get(domain);
      if (known && known.until > now) return known.route;
      const route = await resolveMxRoute(this.opts.resolver, domain, { allowPrivate: this.opts.allowPrivate });
      if (route.kind !== 'temporary') {
        if (this.routes.size > 10_000) this.routes.clear();
        this.routes.set(domain, { route, until: now + ROUTE_CACHE_MS });
      }
      return route;
    }
    const { host } = this.relay;
    // The relay is the operator's own configuration, often a smarthost on the LAN: the private-address rule
    // (catalogue API-10c) is about recipient domains, which anyone can point anywhere.
    if (net.isIP(host)) return { kind: 'hosts', hosts: [{ host, addresses: [host] }] };
    const found = await lookupHost(this.opts.resolver, host);
    if (found.addresses.length > 0) return { kind: 'hosts', hosts: [{ host, addresses: found.addresses }] };
    // Never a bounce: a relay that does not resolve is our configuration or DNS trouble, not the recipient's.
    return { kind: 'temporary', code: DNS_TROUBLE, reason: found.temporary ?? `relay host ${host} has no A/AAAA records` };
  }

  /**
   * Sends what it can of `queue` through one host over up to maxConnectionsPerHost sessions; returns what it
   * could not even try (no session could be had) and the last failure.
   */
  private async sendVia(target: Target, queue: Work[]): Promise<{ remaining: Work[]; failure: Failure | null }> {
    const shared = [...queue];
    const wanted = () => shared.length > 0;
    const open = () => this.openSession(target);
    let failure: Failure | null = null;

    const worker = async (first: Session): Promise<void> => {
      let session: Session | null = first;
      while (session && shared.length > 0) {
        const work = shared.shift()!;
        const result = await this.transact(session, work);
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
          this.pool.release(target.host, session);
          const next = await this.pool.acquire(target.host, open, { wait: true, wanted });
          if (next && 'failure' in next) failure = next.failure;
          session = next && 'session' in next ? next.session : null;
        }
      }
      if (session) this.pool.release(target.host, session);
    };

    // One connection first, alone: a host that is down costs one attempt per address, not one per worker.
    const first = await this.pool.acquire(target.host, open, { wait: true, wanted });
    if (!first) return { remaining: shared, failure };
    if ('failure' in first) return { remaining: shared, failure: first.failure };
    const workers = [worker(first.session)];
    // Spread the rest over whatever slots this host has free right now; a busy host is not waited for twice.
    for (let i = 1; i < Math.min(this.maxConnections, shared.length); i++) {
      workers.push(
        (async () => {
          const extra = await this.pool.acquire(target.host, open, { wait: false, wanted });
          if (extra && 'session' in extra) await worker(extra.session);
        })(),
      );
    }
    await Promise.all(workers);
    return { remaining: shared, failure };
  }

  /**
   * One message on one session: MAIL, RCPT each undecided recipient, DATA; again for recipients refused as too
   * many. Returns `lost` when the session ended under it, leaving the undecided recipients to the caller.
   */
  private async transact(session: Session, work: Work): Promise<{ lost?: { failure: Failure; untouched: boolean } }> {
    const { message } = work;
    let pending = undecided(work);
    let first = true;
    // Declared only when the server offers 8BITMIME; the bytes go out as they are either way.
    const use8BitMime = !isAscii(message.raw);
    while (pending.length > 0) {
      const envelope = {
        from: message.envelopeFrom,
        to: pending,
        size: message.raw.length,
        use8BitMime,
      } as LiveEnvelope;
      const { err, info } = await send(session.conn, envelope, message.raw);
      // SMTPConnection fills the envelope object it was given: accepted, rejected (with rejectedErrors) and
      // mailError. The error alone never says which recipients had been accepted.
      const accepted = envelope.accepted ?? [];
      const rejected = envelope.rejectedErrors ?? [];
      const lost = session.dead || session.conn.destroyed;
      const tooMany: SMTPError[] = [];

      if (err && envelope.mailError) {
        const mail = envelope.mailError;
        // A 421 is the session ending, not an answer about this message: the caller decides what that means.
        if (!(lost && mail.responseCode === 421)) settle(work, pending, fromSession(session, classify(mail.responseCode), failureOf(mail)));
      } else {
        for (const refusal of rejected) {
          const recipient = refusal.recipient ?? '';
          // RFC 5321 4.5.3.1.10: 452 means "too many recipients", and a 552 at RCPT must be read the same way.
          if (refusal.responseCode === 452 || refusal.responseCode === 552) tooMany.push(refusal);
          // A recipient refused before the connection dropped keeps its answer (catalogue DUR-17: a pipelined 550
          // and then a close is still a permanent failure for that address).
          else settle(work, [recipient], fromSession(session, classify(refusal.responseCode), failureOf(refusal)));
        }
        if (!err) settle(work, accepted, fromSession(session, 'delivered', replyOf((info as SMTPConnectionSendInfo).response)));
        else if (err.code === 'EMESSAGE' && !err.response) {
          // SMTPConnection's own refusal: larger than the SIZE the server advertised (RFC 1870).
          settle(work, pending, fromSession(session, 'bounced', { response: err.message, code: null, enhanced: TOO_BIG }));
        } else if (err.responseCode && accepted.length > 0) {
          // The DATA command or the final reply: it applies to every recipient the server had taken.
          settle(work, accepted, fromSession(session, classify(err.responseCode), failureOf(err)));
        }
      }

      const delivered = !err && accepted.length > 0;
      if (tooMany.length > 0 && delivered && !lost) {
        // Progress was made: the refused ones go at once in a transaction of their own.
        pending = tooMany.map((r) => r.recipient ?? '');
        first = false;
        continue;
      }
      for (const refusal of tooMany) settle(work, [refusal.recipient ?? ''], fromSession(session, 'deferred', failureOf(refusal)));
      if (lost) {
        const failure = err ? failureOf(err) : { response: 'connection closed', code: null, enhanced: BAD_CONNECTION };
        const untouched = session.reused && first && accepted.length === 0 && rejected.length === 0 && (!err?.responseCode || err.responseCode === 421);
        return { lost: { failure, untouched } };
      }
      // A refused transaction may still be open (MAIL taken, no recipient, DATA refused): start the next clean.
      if (err && !(await reset(session.conn))) {
        session.conn.close();
        return { lost: { failure: { response: 'RSET failed', code: null, enhanced: BAD_CONNECTION }, untouched: false } };
      }
      break;
    }
    // Anything still undecided here was refused in a way the branches above left open: it waits.
    const rest = undecided(work);
    if (rest.length > 0) settle(work, rest, fromSession(session, 'deferred', { response: 'not accepted in this attempt', code: null, enhanced: NO_ANSWER }));
    return {};
  }

  /** A session to the host: each address in order; a broken STARTTLS is retried once in plaintext. */
  private async openSession(target: Target): Promise<{ session: Session } | { failure: Failure }> {
    let last: Failure = { response: `${target.host} has no address to connect to`, code: null, enhanced: NO_ANSWER };
    for (const address of target.addresses) {
      const attempt = await this.connect(target.host, address, false);
      if ('session' in attempt) return attempt;
      last = attempt.failure;
      // DESIGN outbound TLS is Postfix's "may": TLS that breaks is no reason not to deliver. Not so with relay
      // credentials: they never go over a session an attacker may have downgraded.
      if (!attempt.tlsBroke || (this.relay && this.relay.user)) continue;
      const plain = await this.connect(target.host, address, true);
      if ('session' in plain) {
        plain.session.tlsError = `STARTTLS failed: ${attempt.failure.response}`;
        return plain;
      }
      last = plain.failure;
    }
    return { failure: last };
  }

  private connect(host: string, address: string, ignoreTLS: boolean): Promise<{ session: Session } | { failure: Failure; tlsBroke: boolean }> {
    const relay = this.relay;
    const timeout = this.opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const conn = new SMTPConnection({
      // The address we resolved and vetted, never a name: SMTPConnection would look a name up itself.
      host: address,
      port: relay ? relay.port : this.opts.port,
      secure: relay?.secure ?? false,
      name: this.opts.heloName,
      servername: net.isIP(host) ? undefined : host,
      ignoreTLS,
      opportunisticTLS: true,
      // RFC 3207 / DESIGN: encrypt when we can, deliver when the certificate does not verify, record which.
      tls: { rejectUnauthorized: false, ...(this.opts.tlsCa ? { ca: this.opts.tlsCa } : {}) },
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: this.opts.socketTimeoutMs ?? DEFAULT_SOCKET_TIMEOUT_MS,
      logger: false,
    });
    const session: Session = { conn, host, tls: false, tlsVerified: false, tlsError: null, state: 'busy', dead: false, reused: false, idleTimer: null };
    return new Promise((resolve) => {
      let settled = false;
      const succeed = () => {
        if (settled) return;
        settled = true;
        resolve({ session });
      };
      const fail = (err: SMTPError) => {
        if (settled) return;
        settled = true;
        // The upgrade had begun: the server took STARTTLS, then TLS itself broke.
        const tlsBroke = conn.upgrading === true || err.code === 'ETLS';
        conn.close();
        resolve({ failure: describe(host, address, err), tlsBroke });
      };
      // SMTPConnection emits 'error' for every failure; unheard, it would crash the process.
      conn.on('error', (err: SMTPError) => fail(err));
      conn.once('end', () => {
        session.dead = true;
        fail(Object.assign(new Error('connection closed'), { code: 'ECONNECTION' }));
      });
      conn.connect((err) => {
        if (err) return fail(err);
        Object.assign(session, tlsState(conn, host));
        if (!relay?.user) return succeed();
        if (!conn.allowsAuth) return succeed(); // no AUTH offered: send as Postfix does, unauthenticated
        conn.login({ user: relay.user, pass: relay.pass }, (loginErr) => {
          if (!loginErr) return succeed();
          fail(Object.assign(loginErr, { message: `relay ${host} refused our credentials: ${loginErr.response ?? loginErr.message}` }));
        });
      });
    });
  }
}


function send(conn: SMTPConnection, envelope: LiveEnvelope, raw: Buffer): Promise<{ err: SMTPError | null; info: SMTPConnectionSendInfo | null }> {
  return new Promise((resolve) => {
    conn.send(envelope, raw, (err, info) => resolve(err ? { err, info: null } : { err: null, info }));
  });
}

function reset(conn: SMTPConnection): Promise<boolean> {
  if (conn.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => conn.reset((err) => resolve(!err)));
}

/** Whether the session is encrypted and whether the certificate would have passed a strict check. */
function tlsState(conn: SMTPConnection, host: string): Pick<Session, 'tls' | 'tlsVerified' | 'tlsError'> {
  const socket = conn._socket;
  if (!conn.secure || !(socket instanceof tls.TLSSocket)) {
    // With opportunisticTLS a refused STARTTLS ends the handshake quietly; its reply is the last one seen.
    const refused = !conn.options.ignoreTLS && typeof conn.lastServerResponse === 'string' && /^[45]/.test(conn.lastServerResponse);
    return { tls: false, tlsVerified: false, tlsError: refused ? `STARTTLS refused: ${conn.lastServerResponse}` : null };
  }
  if (!socket.authorized) {
    return { tls: true, tlsVerified: false, tlsError: `certificate not verified for ${host}: ${String(socket.authorizationError)}` };
  }
  // authorized already covers the name Node checked (the SNI name); check ours explicitly all the same.
  const mismatch = tls.checkServerIdentity(host, socket.getPeerCertificate());
  if (mismatch) return { tls: true, tlsVerified: false, tlsError: `certificate not verified for ${host}: ${mismatch.message}` };
  return { tls: true, tlsVerified: true, tlsError: null };
}

function parseRelayUrl(raw: string): Relay {
  const url = new URL(raw);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new TypeError(`relay URL must be smtp: or smtps:, got ${url.protocol}`);
  const secure = url.protocol === 'smtps:';
  const bare = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const host = bare.toLowerCase().replace(/\.$/, '');
  if (!host) throw new TypeError('relay URL has no host');
  return {
    host,
    // Submission ports, as nodemailer reads such URLs: 587 with STARTTLS, 465 with implicit TLS (RFC 8314).
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    user: decodeURIComponent(url.username),
    pass: decodeURIComponent(url.password),
  };
}

/** Sets up a message's bookkeeping; addresses SMTPConnection would refuse to put on the wire bounce here. */
function checkAddresses(message: OutboundMessage): Work {
  const verdicts = new Map<string, Verdict | null>();
  const work: Work = { message, verdicts, requeued: false };
  for (const recipient of message.recipients) if (!verdicts.has(recipient)) verdicts.set(recipient, null);
  const bad = (address: string) => /[\r\n<>\s]/.test(address);
  if (bad(message.envelopeFrom)) {
    const failure = { response: `invalid envelope sender ${JSON.stringify(message.envelopeFrom)}`, code: null, enhanced: BAD_SENDER };
    settle(work, [...verdicts.keys()], noSession('bounced', failure, null));
  }
  for (const recipient of verdicts.keys()) {
    if (recipient === '' || bad(recipient)) {
      settle(work, [recipient], noSession('bounced', { response: `invalid recipient address ${JSON.stringify(recipient)}`, code: null, enhanced: BAD_MAILBOX }, null));
    }
  }
  return work;
}

function undecided(work: Work): string[] {
  return [...work.verdicts].filter(([, v]) => v === null).map(([r]) => r);
}

/** Decides recipients not decided yet; a recipient's first verdict in an attempt is its only one. */
function settle(work: Work, recipients: string[], verdict: Verdict): void {
  for (const recipient of recipients) if (work.verdicts.get(recipient) === null) work.verdicts.set(recipient, verdict);
}

function outcomes(works: Work[]): RecipientOutcome[] {
  return works.flatMap((w) => [...w.verdicts].map(([recipient, v]) => ({ messageId: w.message.id, recipient, ...v! })));
}

function noSession(result: RecipientOutcome['result'], failure: Failure, mx: string | null): Verdict {
  return { result, ...failure, mx, tls: false, tlsVerified: false, tlsError: null };
}

function fromSession(session: Session, result: RecipientOutcome['result'], failure: Failure): Verdict {
  return { result, ...failure, mx: session.host, tls: session.tls, tlsVerified: session.tlsVerified, tlsError: session.tlsError };
}

/** 5xx is permanent, except 503: a confused session, not a refused message. Anything else waits. */
function classify(code: number | undefined): 'bounced' | 'deferred' {
  return code !== undefined && code >= 500 && code < 600 && code !== 503 ? 'bounced' : 'deferred';
}

function replyOf(response: string): Failure {
  const match = /^(\d{3})(?:[ -]([245]\.\d{1,3}\.\d{1,3})(?=\s|$))?/.exec(response);
  return { response, code: match ? Number(match[1]) : null, enhanced: match?.[2] ?? null };
}

function failureOf(err: SMTPError): Failure {
  if (err.response) return replyOf(err.response);
  return { response: err.message, code: null, enhanced: BAD_CONNECTION };
}

/** A connection-level failure, naming the host and address so the queue's events say where it happened. */
function describe(host: string, address: string, err: SMTPError): Failure {
  const where = host === address ? host : `${host} [${address}]`;
  const reply = err.response ? replyOf(err.response) : null;
  const cause = err.originalCode ? ` (${err.originalCode})` : '';
  return { response: `${where}: ${err.message}${cause}`, code: reply?.code ?? null, enhanced: reply ? reply.enhanced : NO_ANSWER };
}
