// Opening an SMTP session to one target: a socket from the injected dial, handed to nodemailer's SMTPConnection
// as an open connection; greeting, EHLO, STARTTLS when offered (once more in plaintext if it breaks; required by a
// [[relay]], by DANE and by MTA-STS enforce, whose checks outbound-tls.ts makes before a session is used), relay AUTH.
// It must not look names up, open a socket but through `dial`, or send mail (transact.ts does).
import net from 'node:net';
import tls from 'node:tls';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SMTPError } from 'nodemailer/lib/smtp-connection';
import type { Dial } from '../context.ts';
import { NO_ANSWER, replyOf, type Failure, type TlsPolicyName } from './outcome.ts';
import type { Session } from './pool.ts';
import type { Relay } from './relays.ts';
import type { Target } from './route.ts';
import { judgeSession } from './outbound-tls.ts';
import type { ResultType, TlsRequirement, TlsSessionResult } from './tls-requirement.ts';

export interface ConnectOptions {
  dial: Dial;
  heloName: string;
  /** MAILWRIGHT_MTA_PORT: where MX hosts are reached (a relay names its own port). */
  port: number;
  /** Dialing, greeting and STARTTLS together. */
  connectTimeoutMs: number;
  /** Inactivity on an open session. */
  socketTimeoutMs: number;
  /** tls_ca_file: a CA trusted besides the system's, for tlsVerified and MTA-STS (tests, a private CA). */
  tlsCa?: string;
  /** Each session opened under a TLS requirement, for the TLS report. */
  observe?: (session: TlsSessionResult) => void;
}

// RFC 3463 / RFC 5248: what a delivery deferred for its TLS requirement reports.
const ENCRYPTION_NEEDED = '4.7.10';
const CRYPTO_FAILURE = '4.7.5';
const enhancedFor = (type: ResultType) => (type === 'starttls-not-supported' ? ENCRYPTION_NEEDED : CRYPTO_FAILURE);
const POLICY_NAMES = { dane: 'dane', 'sts-enforce': 'mta-sts', 'sts-testing': 'mta-sts-testing', none: 'none' } as const;
const policyName = (kind: TlsRequirement['kind'] | undefined): TlsPolicyName => (kind ? POLICY_NAMES[kind] : 'none');

type Opened = { session: Session } | { failure: Failure; tlsBroke: boolean };

/** The default dial: a plain TCP connection (node:net) to an address, never a name; settles once connected. */
export const dialTcp: Dial = ({ host, port }, signal) =>
  new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, signal });
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
  });

/**
 * A session to the host (a relay's when `relay` is given): each address in order; a broken STARTTLS is retried
 * once in plaintext.
 */
export async function openSession(opts: ConnectOptions, target: Target, relay: Relay | null = null): Promise<{ session: Session } | { failure: Failure }> {
  let last: Failure = { response: `${target.host} has no address to connect to`, code: null, enhanced: NO_ANSWER };
  const known = target.tls?.mandatory ? target.tls.known : undefined;
  if (known) {
    // Nothing this host could show would make it usable (a failed validated TLSA lookup): no connection at all.
    opts.observe?.({ domain: target.tls!.domain, policy: target.tls!.policy, failure: known, sendingIp: '', receivingMx: target.host, receivingIp: '' });
    return { failure: { response: known.reason, code: null, enhanced: enhancedFor(known.type), tlsPolicy: policyName(target.tls!.kind) } };
  }
  for (const address of target.addresses) {
    const attempt = await connect(opts, relay, target, address, false);
    if ('session' in attempt) return attempt;
    last = attempt.failure;
    // DESIGN outbound TLS is Postfix's "may": TLS that breaks is no reason not to deliver. Not so with relay
    // credentials, a relay that requires TLS, DANE or MTA-STS enforce: nothing goes over a session an attacker
    // may have downgraded.
    if (!attempt.tlsBroke || relay?.user || relay?.requireTls || target.tls?.mandatory) continue;
    const plain = await connect(opts, relay, target, address, true);
    if ('session' in plain) {
      plain.session.tlsError = `STARTTLS failed: ${attempt.failure.response}`;
      return plain;
    }
    last = plain.failure;
  }
  return { failure: { ...last, tlsPolicy: last.tlsPolicy ?? (relay ? 'relay' : policyName(target.tls?.kind)) } };
}

async function connect(opts: ConnectOptions, relay: Relay | null, target: Target, address: string, ignoreTLS: boolean): Promise<Opened> {
  const host = target.host;
  const requirement = target.tls;
  const port = relay ? relay.port : opts.port;
  const secure = relay?.secure ?? false;
  const started = performance.now();
  const dialed = await dialWithin(opts.dial, { host: address, port }, opts.connectTimeoutMs);
  if ('error' in dialed) return { failure: describe(host, address, dialed.error), tlsBroke: false };
  const sendingIp = dialed.socket.localAddress ?? '';
  const observe = (failure: { type: ResultType; reason: string } | null) =>
    requirement && opts.observe?.({ domain: requirement.domain, policy: requirement.policy, failure, sendingIp, receivingMx: host, receivingIp: address });
  const conn = new SMTPConnection({
    // Already open: SMTPConnection connects nothing itself, and never looks a name up.
    connection: dialed.socket,
    host: address,
    port,
    secure,
    name: opts.heloName,
    servername: net.isIP(host) ? undefined : host,
    ignoreTLS,
    // A [[relay]] carries credentials and the operator asked for TLS: no STARTTLS, no mail (nodemailer then
    // turns opportunisticTLS off).
    requireTLS: relay?.requireTls ?? false,
    // A STARTTLS that fails is an error where TLS is mandatory (outbound-tls.ts), not a reason to go on in plaintext.
    opportunisticTLS: !requirement?.mandatory,
    // RFC 3207 / DESIGN: encrypt when we can, deliver when the certificate does not verify, record which. A
    // [[relay]] verifies unless its tls_verify is false; DANE and MTA-STS are checked by judgeSession, which
    // says why. tls_ca_file adds to the system's CAs.
    tls: { rejectUnauthorized: relay?.verifyTls ?? false, ...(opts.tlsCa ? { ca: [...tls.rootCertificates, opts.tlsCa] } : {}) },
    // What dialing left of the budget; SMTPConnection ends the greeting and STARTTLS by the same deadline.
    connectionTimeout: Math.max(1, opts.connectTimeoutMs - (performance.now() - started)),
    greetingTimeout: opts.connectTimeoutMs,
    socketTimeout: opts.socketTimeoutMs,
    logger: false,
  });
  const tlsPolicy = relay ? 'relay' : policyName(requirement?.kind);
  const session: Session = { conn, host, tls: false, tlsVerified: false, tlsError: null, tlsPolicy, state: 'busy', dead: false, reused: false, idleTimer: null };
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
      // The upgrade had begun: the server took STARTTLS, then TLS itself broke. Implicit TLS (smtps) has no
      // plaintext to fall back to.
      const tlsBroke = !secure && (conn.upgrading === true || err.code === 'ETLS');
      conn.close();
      if (tlsBroke && requirement?.mandatory) {
        const label = requirement.kind === 'dane' ? 'DANE' : 'MTA-STS';
        const refused = typeof err.response === 'string' && /^[45]/.test(err.response);
        const failure: { type: ResultType; reason: string } = refused
          ? { type: 'starttls-not-supported', reason: `${label}: ${host} refused STARTTLS: ${err.response}` }
          : { type: 'validation-failure', reason: `${label}: STARTTLS with ${host} [${address}] failed: ${err.message}` };
        observe(failure);
        return resolve({ failure: { response: failure.reason, code: null, enhanced: enhancedFor(failure.type), tlsPolicy }, tlsBroke });
      }
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
      if (requirement) {
        const refused = session.tlsError?.startsWith('STARTTLS refused: ') ? session.tlsError.slice('STARTTLS refused: '.length) : null;
        const plain = ignoreTLS
          ? { type: 'validation-failure' as const, reason: `STARTTLS with ${host} [${address}] failed; the session went on in plaintext` }
          : refused
            ? { type: 'starttls-not-supported' as const, reason: `${host} refused STARTTLS: ${refused}` }
            : null;
        const failure = judgeSession(requirement, conn.secure ? conn._socket : null, host, plain);
        observe(failure);
        if (failure && requirement.mandatory) {
          // Only EHLO went over this session: close it unused, the message waits (never plaintext, never elsewhere).
          settled = true;
          conn.close();
          return resolve({ failure: { response: failure.reason, code: null, enhanced: enhancedFor(failure.type), tlsPolicy }, tlsBroke: false });
        }
      }
      if (!relay?.user) return succeed();
      if (!conn.allowsAuth) return succeed(); // no AUTH offered: send as Postfix does, unauthenticated
      conn.login({ user: relay.user, pass: relay.pass }, (loginErr) => {
        if (!loginErr) return succeed();
        fail(Object.assign(loginErr, { message: `relay ${host} refused our credentials: ${loginErr.response ?? loginErr.message}` }));
      });
    });
  });
}

/**
 * The dial, given until the connect timeout: a dial that fails or runs out of time is an error in the words
 * SMTPConnection would have used ("connect ECONNREFUSED ...", "Connection timeout").
 */
async function dialWithin(dial: Dial, to: { host: string; port: number }, timeoutMs: number): Promise<{ socket: net.Socket } | { error: SMTPError }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const timedOut = () => ({ error: Object.assign(new Error('Connection timeout'), { code: 'ETIMEDOUT' }) as SMTPError });
  try {
    const socket = await dial(to, controller.signal);
    if (!controller.signal.aborted) return { socket };
    socket.destroy();
    return timedOut();
  } catch (err) {
    if (controller.signal.aborted) return timedOut();
    const error = err as SMTPError;
    return { error: Object.assign(error, { originalCode: error.code }) };
  } finally {
    clearTimeout(timer);
  }
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

/** A connection-level failure, naming the host and address so the queue's events say where it happened. */
function describe(host: string, address: string, err: SMTPError): Failure {
  const where = host === address ? host : `${host} [${address}]`;
  const reply = err.response ? replyOf(err.response) : null;
  const cause = err.originalCode ? ` (${err.originalCode})` : '';
  return { response: `${where}: ${err.message}${cause}`, code: reply?.code ?? null, enhanced: reply ? reply.enhanced : NO_ANSWER };
}
