// The MX listener on port 25 (smtp-server): the session rules of a trusted mail server, then a hand-off to
// receive/. It answers as MAILWRIGHT_HOSTNAME, offers STARTTLS, advertises and enforces SIZE, looks up the
// client's PTR through the configured resolvers, caps clients, recipients, messages and session time, and
// decides every recipient at RCPT (receive/route.ts). It replies 250 only when receive() has committed.
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { App } from '../context.ts';
import { SmtpError } from '../errors.ts';
import { reverseLookup } from '../dns/resolver.ts';
import type { Analyzer } from '../receive/analyzer.ts';
import { receive, type Envelope } from '../receive/receive.ts';
import { routeRecipient, type Target } from '../receive/route.ts';
import type { TlsCredentials } from './certificate.ts';

/** RFC 5321 4.5.3.1.8: a server must take at least 100 recipients; more get 452 (smtp-server's maxRecipients). */
export const MAX_RECIPIENTS = 100;

interface SessionState {
  messages: number;
  targets: Map<string, Target>;
  deadline: NodeJS.Timeout;
}

// What smtp-server exposes of a connection, for closing a session that ran out of time.
interface Connection {
  id: string;
  send(code: number, message: string): void;
  close(): void;
}

export function createMxServer(app: App, tls: TlsCredentials, analyzer: Analyzer): SMTPServer {
  const { config, log } = app;
  const sessions = new Map<string, SessionState>();

  const server: SMTPServer = new SMTPServer({
    name: config.hostname,
    banner: 'Mailwright ESMTP',
    size: config.maxMessageBytes,
    // Oversize is enforced in onData (stream.sizeExceeded -> 552 5.3.4): smtp-server's own rejectOversized
    // reply carries no enhanced status code, and onData is the only way to a 250 anyway.
    maxRecipients: MAX_RECIPIENTS,
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
    maxClients: config.smtpMaxClients,
    socketTimeout: config.smtpIdleTimeout,
    closeTimeout: 30_000,

    onConnect(session, callback) {
      const deadline = setTimeout(() => expire(session.id), config.smtpSessionTimeout);
      deadline.unref();
      sessions.set(session.id, { messages: 0, targets: new Map(), deadline });
      callback();
    },

    onClose(session) {
      const state = sessions.get(session.id);
      if (state) clearTimeout(state.deadline);
      sessions.delete(session.id);
    },

    onMailFrom(_address, session, callback) {
      const state = stateOf(session);
      state.targets.clear();
      if (state.messages >= config.smtpMaxMessages) {
        return callback(new SmtpError(452, `4.4.5 Too many messages in this session (${config.smtpMaxMessages}), reconnect to send more`));
      }
      callback();
    },

    onRcptTo(address, session, callback) {
      try {
        stateOf(session).targets.set(address.address.toLowerCase(), routeRecipient(app.db, address.address));
        callback();
      } catch (err) {
        if (err instanceof SmtpError) return callback(err);
        log.error('recipient lookup failed', { err, session: session.id });
        callback(new SmtpError(451, '4.3.0 Temporary local problem, try again later'));
      }
    },

    onData(stream, session, callback) {
      const state = stateOf(session);
      state.messages++;
      collect(stream).then(
        async (data) => {
          if (!data) return callback(new SmtpError(552, `5.3.4 Message too big: the limit is ${config.maxMessageBytes} bytes`));
          const ids = await receive(app, analyzer, envelopeOf(session, state), data);
          callback(null, `2.0.0 Ok: queued as ${ids.join(' ')}`);
        },
        () => {
          // The client went away mid-DATA: nothing was stored, and nobody is left to answer.
        },
      ).catch((err: unknown) => {
        if (err instanceof SmtpError) return callback(err);
        log.error('receiving a message failed', { err, session: session.id });
        callback(new SmtpError(451, '4.3.0 Temporary local problem, message not accepted: try again later'));
      });
    },
  });

  const stateOf = (session: SMTPServerSession): SessionState => {
    const state = sessions.get(session.id);
    if (!state) throw new Error(`no state for SMTP session ${session.id}`);
    return state;
  };

  // RES-05: an absolute limit, so a client dripping a byte at a time cannot hold a session for ever.
  function expire(id: string): void {
    const connections = (server as unknown as { connections: Set<Connection> }).connections;
    for (const connection of connections) {
      if (connection.id !== id) continue;
      connection.send(421, `4.4.2 ${config.hostname} Session time limit exceeded, closing connection`);
      connection.close();
    }
  }

  server.on('error', (err) => log.warn('smtp connection error', { err }));
  return server;
}

function envelopeOf(session: SMTPServerSession, state: SessionState): Envelope {
  const mailFrom = session.envelope.mailFrom;
  return {
    sessionId: session.id,
    ip: session.remoteAddress.replace(/^::ffff:/, ''),
    helo: session.hostNameAppearsAs ?? '',
    ptr: session.clientHostname && !session.clientHostname.startsWith('[') ? session.clientHostname : null,
    tls: session.secure,
    mailFrom: mailFrom ? mailFrom.address : '',
    recipients: session.envelope.rcptTo.flatMap((r) => {
      const target = state.targets.get(r.address.toLowerCase());
      return target ? [{ address: r.address, target }] : [];
    }),
  };
}

/** The whole message, or null when it went over the size limit (the bytes are drained, not kept). */
function collect(stream: SMTPServerDataStream): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => {
      if (!stream.sizeExceeded) chunks.push(chunk);
    });
    stream.once('end', () => resolve(stream.sizeExceeded ? null : Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}
