// The MX listener on port 25 (smtp-server): the session rules of a trusted mail server, then a hand-off to
// receive/. It answers as MAILWRIGHT_HOSTNAME, offers STARTTLS, advertises and enforces SIZE, looks up the
// client's PTR through the configured resolvers, caps clients (in all, per address and per network, with slots
// kept for known senders), errors, recipients, messages and session time, and decides every recipient at RCPT
// (receive/route.ts), where the door (door.ts) also judges the client: DNS blocklists, and the evidence it hands
// the spam filter. It replies 250 only when receive() has committed.
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import type { App } from '../context.ts';
import { SmtpError } from '../errors.ts';
import { reverseLookup } from '../dns/resolver.ts';
import { receive, type Envelope, type ReceiveWorkers } from '../receive/receive.ts';
import { routeRecipient, type Target } from '../receive/route.ts';
import type { TlsCredentials } from './certificate.ts';
import { reportListenerErrors } from './listener-errors.ts';
import { clientIp, collect, limitClients, OUR_FAULT, ourFault, SessionTable, sessionDeadline, sessionLimits } from './session.ts';
import type { ClientVerdict, Door } from './door.ts';

interface SessionState {
  messages: number;
  targets: Map<string, Target>;
  deadline: NodeJS.Timeout;
  /** Recipients refused at RCPT in this session; the first LOGGED_REFUSALS are logged one by one. */
  refused: number;
  /** The door's judgement of the client (door.ts), asked at the first accepted RCPT and kept for the session. */
  verdict?: Promise<ClientVerdict>;
}

/**
 * Refused recipients are logged at info with the address and the reply, as Postfix logs `NOQUEUE: reject`, so an
 * owner can tell why mail did not arrive; at most this many per session, so an address harvester trying
 * thousands cannot flood the log (the session's error limit and the per-client limits bound the sessions).
 */
const LOGGED_REFUSALS = 10;

export function createMxServer(app: App, tls: TlsCredentials, workers: ReceiveWorkers, door: Door): SMTPServer {
  const { config, log } = app;
  const sessions = new SessionTable<SessionState>();

  const server: SMTPServer = new SMTPServer({
    name: config.hostname,
    banner: 'Mailwright ESMTP',
    // SIZE is advertised; oversize is enforced in onData (stream.sizeExceeded -> 552 5.3.4): smtp-server's own
    // rejectOversized reply carries no enhanced status code, and onData is the only way to a 250 anyway.
    ...sessionLimits(config),
    disabledCommands: ['AUTH'],
    key: tls.key,
    cert: tls.cert,
    logger: false,
    // PTR through app.dns (the configured resolvers), never the system's.
    resolver: {
      reverse(ip: string, callback: (err: Error | null, names?: string[]) => void) {
        reverseLookup(app.dns, ip).then((names) => callback(null, names), (err: Error) => callback(err));
      },
    },

    onConnect(session, callback) {
      sessions.open(session.id, { messages: 0, targets: new Map(), refused: 0, deadline: sessionDeadline(server, session.id, config.smtpSessionTimeout, config.hostname) });
      callback();
    },

    onClose(session) {
      const refused = sessions.find(session.id)?.refused ?? 0;
      if (refused > LOGGED_REFUSALS) log.info('recipients refused in this session beyond those logged', { session: session.id, ip: clientIp(session), refused, logged: LOGGED_REFUSALS });
      sessions.close(session.id);
    },

    onMailFrom(_address, session, callback) {
      const state = sessions.of(session);
      state.targets.clear();
      // RFC 3463 4.3.1: too little free space to take the message safely; the client retries later.
      if (app.disk?.low) return callback(new SmtpError(452, '4.3.1 Insufficient system storage, try again later'));
      if (state.messages >= config.smtpMaxMessages) {
        return callback(new SmtpError(452, `4.4.5 Too many messages in this session (${config.smtpMaxMessages}), reconnect to send more`));
      }
      callback();
    },

    onRcptTo(address, session, callback) {
      const refuse = (err: unknown) => {
        app.metrics?.inbound(err);
        const state = sessions.find(session.id);
        if (err instanceof SmtpError) {
          if (state && ++state.refused <= LOGGED_REFUSALS) {
            log.info('recipient refused', { session: session.id, ip: clientIp(session), helo: session.hostNameAppearsAs ?? '', from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: address.address, reply: `${err.responseCode} ${err.message}` });
          }
          return callback(err);
        }
        log.error('recipient lookup failed', { err, session: session.id });
        callback(new SmtpError(451, '4.3.0 Temporary local problem, try again later'));
      };
      app.store.read(routeRecipient(address.address, session.envelope.mailFrom ? session.envelope.mailFrom.address : '')).then((target: Target) => {
        // A recipient of ours is the point where the client is looked at (door.ts), once per session.
        const state = sessions.find(session.id);
        if (!state) return; // the client left while its recipient was looked up: nobody to answer
        state.verdict ??= door.judge({ session: session.id, ip: clientIp(session), ptr: ptrOf(session) });
        state.verdict.then((verdict) => {
          if (verdict.refusal) return refuse(verdict.refusal);
          sessions.find(session.id)?.targets.set(address.address.toLowerCase(), target);
          callback();
        }, refuse);
      }, refuse);
    },

    onData(stream, session, callback) {
      const state = sessions.of(session);
      state.messages++;
      collect(stream).then(
        async (data) => {
          // Thrown, not answered here: the catch below answers and counts every refusal alike (metrics).
          if (!data) throw new SmtpError(552, `5.3.4 Message too big: the limit is ${config.maxMessageBytes} bytes`);
          const ids = await receive(app, workers, await envelopeOf(session, state, door), data);
          app.metrics?.inbound();
          callback(null, `2.0.0 Ok: queued as ${ids.join(' ')}`);
        },
        () => {
          // The client went away mid-DATA: nothing was stored, and nobody is left to answer.
        },
      ).catch((err: unknown) => {
        app.metrics?.inbound(err);
        if (err instanceof SmtpError) return callback(err);
        ourFault(log, 'receiving a message failed', err, session.id);
        callback(new SmtpError(451, OUR_FAULT));
      });
    },
  });

  // RES-04b, RES-15, RES-16: connections per client address and network, the slots kept for known senders, and
  // the error limit of every session.
  limitClients(server, config, log, { listener: 'mx', beforeAuth: null });
  reportListenerErrors(server, log, app.metrics, 'mx');
  return server;
}

/** The client's PTR name as smtp-server looked it up; null when it has none (smtp-server then writes [ip]). */
const ptrOf = (session: SMTPServerSession) => (session.clientHostname && !session.clientHostname.startsWith('[') ? session.clientHostname : null);

async function envelopeOf(session: SMTPServerSession, state: SessionState, door: Door): Promise<Envelope> {
  const mailFrom = session.envelope.mailFrom;
  const ip = clientIp(session);
  const helo = session.hostNameAppearsAs ?? '';
  // DATA comes after an accepted RCPT, which judged the client (and let it in).
  const verdict = await state.verdict;
  const heloEvidence = await door.helo(helo, ip);
  return {
    sessionId: session.id,
    ip,
    helo,
    ptr: ptrOf(session),
    evidence: [...(verdict?.evidence ?? []), ...(heloEvidence ? [heloEvidence] : [])],
    tls: session.secure,
    mailFrom: mailFrom ? mailFrom.address : '',
    recipients: session.envelope.rcptTo.flatMap((r) => {
      const target = state.targets.get(r.address.toLowerCase());
      return target ? [{ address: r.address, target }] : [];
    }),
  };
}
