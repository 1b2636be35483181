// What the SMTP listeners share about a session beyond smtp-server's own options: reading DATA within the
// size limit, ending a session that ran past its absolute time limit (smtp-server has only an idle timeout),
// and the per-client limits of client-limits.ts applied to smtp-server's connections.
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { SMTPServer, SMTPServerDataStream, SMTPServerOptions, SMTPServerSession } from 'smtp-server';
import type { Config } from '../config/config.ts';
import type { Log } from '../log.ts';
import { storageFault } from '../db/health.ts';
import { networkOf } from '../dns/ip-ranges.ts';
import { ClientTable, clientAddress, ReplyCount } from './client-limits.ts';
import { KnownNetworks } from './known-senders.ts';

/** RFC 5321 4.5.3.1.8: a server must take at least 100 recipients; more get 452 (smtp-server's maxRecipients). */
export const MAX_RECIPIENTS = 100;

/** The limits both listeners apply through smtp-server's options (catalogue RES-01/02/04). */
export const sessionLimits = (config: Config): SMTPServerOptions => ({
  size: config.maxMessageBytes,
  maxRecipients: MAX_RECIPIENTS,
  maxClients: config.smtpMaxClients,
  socketTimeout: config.smtpIdleTimeout,
  closeTimeout: 30_000,
});

// smtp-server's SMTPConnection (not exported by name): the one write site of every reply, send(), and close().
type Connection = SMTPServer['connections'] extends Set<infer C> ? C : never;

/** The whole message, or null when it went over the size limit (the bytes are drained, not kept). */
export function collect(stream: SMTPServerDataStream): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => {
      if (!stream.sizeExceeded) chunks.push(chunk);
    });
    stream.once('end', () => resolve(stream.sizeExceeded ? null : Buffer.concat(chunks)));
    // smtp-server 3.21 errors the stream when the client leaves mid-DATA (catalogue F4): nothing is kept.
    stream.once('error', reject);
  });
}

/** RES-05: a timer that closes session `id` with 421 after `ms`, however busy it is; clear it on close. */
export function sessionDeadline(server: SMTPServer, id: string, ms: number, hostname: string): NodeJS.Timeout {
  const timer = setTimeout(() => {
    for (const connection of server.connections) {
      if (connection.id !== id) continue;
      connection.send(421, `4.4.2 ${hostname} Session time limit exceeded, closing connection`);
      connection.close();
    }
  }, ms);
  timer.unref();
  return timer;
}

/** What a listener answers for its own fault: never 250, never 5xx (DESIGN.md). */
export const OUR_FAULT = '4.3.0 Temporary local problem, message not accepted: try again later';

/** Logs the failure behind an OUR_FAULT reply: a full disk is a warning without a stack, anything else an error. */
export function ourFault(log: Log, what: string, err: unknown, session: string): void {
  if (storageFault(err) === 'full') log.warn(`${what}: the disk is full`, { session });
  else log.error(what, { err, session });
}

/** A listener's state per open session, each with its deadline timer, which closing the session clears. */
export class SessionTable<S extends { deadline: NodeJS.Timeout }> {
  private readonly states = new Map<string, S>();

  open(id: string, state: S): void {
    this.states.set(id, state);
  }

  close(id: string): void {
    const state = this.states.get(id);
    if (state) clearTimeout(state.deadline);
    this.states.delete(id);
  }

  /** The session's state, or undefined once it has closed (a client that left while we waited). */
  find(id: string): S | undefined {
    return this.states.get(id);
  }

  /** The state of a session smtp-server is still calling us about: it always has one. */
  of(session: { id: string }): S {
    const state = this.states.get(session.id);
    if (!state) throw new Error(`no state for SMTP session ${session.id}`);
    return state;
  }
}

/** The client's address, IPv4-mapped IPv6 written as plain IPv4. */
export const clientIp = (session: SMTPServerSession) => clientAddress(session.remoteAddress);

/** How long a refused client may keep its half-closed socket before it is destroyed (smtp-server's own 5 s). */
const REFUSED_LINGER_MS = 5_000;

/**
 * RES-04b, RES-15, RES-16 on one listener: at most smtp_max_clients_per_ip connections open and
 * smtp_connection_rate_per_ip opened a minute from one client address, smtp_max_clients_per_network open from
 * one IPv4 /24 or IPv6 /64, and of smtp_max_clients in all, the last smtp_reserved_clients only for a client
 * whose network delivered mail to this listener before (each listener has its own table and history); and the
 * error limit of every session, with the limit on replies before AUTH where `beforeAuth` is set (submission).
 *
 * A connection is counted in server.connect(), as smtp-server hands it the accepted socket: before its 100 ms
 * early-talker wait, its PTR lookup (up to 1.5 s) and onConnect. So a flood never holds the smtp_max_clients
 * slots while it waits to be refused, and a refused connection costs no DNS query: it never becomes a
 * session, it gets its 421 and is closed here. smtp-server's own maxClients stays as the hard cap behind ours
 * (our count is released a tick after its own, so ours is reached first). An admitted connection is released
 * in onClose, which smtp-server (3.21) calls exactly once for every connection that reached connect(), however
 * it ends: init() registers the socket's close listener before anything can refuse it (smtp-server's maxClients
 * 421, onConnect, a client talking before the greeting, QUIT, idle timeout, reset, shutdown), upgrade() gives
 * the TLS socket of STARTTLS one too, and _onClose calls onClose only the first time (_closed).
 *
 * The history of known senders is kept in memory (KnownNetworks), not in the database: a received message's
 * row does not hold the client address (only its stored Received field does), and a durable history would add
 * a write to every message's transaction for a hint. What a restart loses comes back with each sender's next
 * message; until then a known sender competes for the unreserved slots like anyone else.
 */
export function limitClients(server: SMTPServer, config: Config, log: Log, opts: { listener: string; beforeAuth: number | null }): ClientTable {
  const clients = new ClientTable({
    maxOpen: config.smtpMaxClientsPerIp,
    ratePerMinute: config.smtpConnectionRatePerIp,
    maxOpenPerNetwork: config.smtpMaxClientsPerNetwork,
    maxTotal: config.smtpMaxClients,
    reserved: config.smtpReservedClients,
  });
  const known = new KnownNetworks();
  let draining = false;
  const connect = server.connect.bind(server);
  server.connect = (socket, socketOptions) => {
    // Stopping: a new client gets a 421 it can act on (try later, or the next MX), not a refused connection.
    if (draining) return refuse(socket, `421 4.3.2 ${config.hostname} Service shutting down, try again later`);
    const id = socketOptions?.id ?? randomUUID();
    const raw = socketOptions?.remoteAddress ?? socket.remoteAddress;
    // A socket already gone has nothing to count, and its close may have been emitted already.
    if (!raw || socket.destroyed) return connect(socket, { ...socketOptions, id });
    const ip = clientAddress(raw);
    const network = networkOf(ip);
    const admission = clients.admit(id, ip, performance.now(), known.has(network));
    if (!admission.ok) {
      if (admission.report) log.info('smtp client refused', { listener: opts.listener, ip, network, open: clients.openTotal, reason: admission.reason });
      return refuse(socket, `421 ${admission.status} ${config.hostname} ${admission.reason}`);
    }
    connect(socket, { ...socketOptions, id });
    for (const connection of server.connections) {
      if (connection.id !== id) continue;
      paceReplies(connection, config.hostname, opts.beforeAuth, {
        ended: (reason) => log.info('smtp session ended by its limits', { listener: opts.listener, session: id, ip, reason }),
        // RES-16: a 250 after DATA makes the client's network a known sender (the reserved slots).
        delivered: () => known.delivered(network),
      });
    }
  };
  const onClose = server.onClose.bind(server);
  server.onClose = (session, callback) => {
    clients.release(session.id);
    onClose(session, callback);
  };
  // A graceful stop: the listener stays open to answer 421 while the sessions it has finish (a message in DATA
  // gets its 250 once committed); smtp-server's own close then ends any left after closeTimeout with 421.
  const close = server.close.bind(server);
  server.close = (callback?: () => void) => {
    draining = true;
    const started = performance.now();
    const wait = setInterval(() => {
      if (server.connections.size > 0 && performance.now() - started < DRAIN_MS) return;
      clearInterval(wait);
      close(callback);
    }, 50);
  };
  return clients;
}

/** How long a stop waits for open sessions before smtp-server's close takes over (its closeTimeout follows). */
const DRAIN_MS = 10_000;

/** One reply and the end of a socket that never becomes a session; what the client sends is read and dropped. */
function refuse(socket: Socket, reply: string): void {
  socket.on('error', () => undefined);
  const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
  socket.end(`${reply}\r\n`);
  socket.resume(); // a paused socket would never see the client's FIN
}

/**
 * The error limit (and the limit before AUTH) of one connection, at smtp-server's single write site, send(): a
 * reply of smtp-server's own (500, 501, 503...) counts as one of ours. A delayed reply must not be overtaken by
 * the ones after it (a pipelining client matches replies to commands by order), so later replies queue behind
 * it; and the connection's next command is held until the queue is empty (_onCommand: smtp-server's parser
 * dispatches every line through it and waits for its callback before the next). Like Postfix's smtpd sleeping
 * before it reads on, the delay holds the client, and nothing piles up in memory while it runs. A 421, the 220
 * to STARTTLS (the TLS handshake follows at once) and close() write whatever is queued first, at once.
 */
function paceReplies(connection: Connection, hostname: string, beforeAuth: number | null, on: { ended: (reason: string) => void; delivered: () => void }): void {
  const count = new ReplyCount(beforeAuth);
  const send = connection.send.bind(connection);
  const close = connection.close.bind(connection);
  const dispatch = connection._onCommand.bind(connection);
  const queue: Array<{ reply: Parameters<Connection['send']>; delay: number }> = [];
  let timer: NodeJS.Timeout | undefined;
  let held: (() => void) | undefined;

  const pump = (): void => {
    while (queue.length) {
      const head = queue[0];
      if (head.delay > 0) {
        timer = setTimeout(() => {
          timer = undefined;
          head.delay = 0;
          pump();
        }, head.delay);
        return;
      }
      queue.shift();
      send(...head.reply);
    }
    const next = held;
    held = undefined;
    if (next && !connection._closing && !connection._closed) next();
  };
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    for (const { reply } of queue.splice(0)) send(...reply);
  };

  connection.send = (code, data, context) => {
    if (code === 421 || code === 220) {
      flush();
      return send(code, data, context);
    }
    const delivered = code === 250 && context === 'DATA_OK';
    if (delivered) on.delivered();
    const verdict = count.judge({ code, delivered, authenticated: Boolean(connection.session.user) });
    if ('end' in verdict) {
      on.ended(verdict.end);
      flush();
      held = undefined;
      return send(421, `4.7.0 ${hostname} ${verdict.end}`); // smtp-server closes after any 421
    }
    queue.push({ reply: [code, data, context], delay: verdict.delay });
    if (!timer) pump();
  };
  connection.close = () => {
    flush();
    held = undefined;
    close();
  };
  connection._onCommand = (command, callback) => {
    if (!timer && !queue.length) return dispatch(command, callback);
    held = () => dispatch(command, callback);
  };
}
