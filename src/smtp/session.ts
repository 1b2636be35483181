// What the SMTP listeners share about a session beyond smtp-server's own options: reading DATA within the
// size limit, and ending a session that ran past its absolute time limit (smtp-server has only an idle
// timeout).
import type { SMTPServer, SMTPServerDataStream, SMTPServerOptions, SMTPServerSession } from 'smtp-server';
import type { Config } from '../config.ts';

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

// What smtp-server exposes of a connection, for closing a session that ran out of time.
interface Connection {
  id: string;
  send(code: number, message: string): void;
  close(): void;
}

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
    const connections = (server as unknown as { connections: Set<Connection> }).connections;
    for (const connection of connections) {
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
export const clientIp = (session: SMTPServerSession) => session.remoteAddress.replace(/^::ffff:/, '');
