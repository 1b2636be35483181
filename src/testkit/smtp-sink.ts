// Test-only SMTP server: records every message it accepts and answers MAIL/RCPT/DATA as a test scripts.
// It must never relay or deliver anything, and speaks SMTP only through smtp-server (no protocol by hand).
// Recorded state is in memory only; nothing is written to disk.

import { SMTPServer } from 'smtp-server';
import type { SMTPServerError, SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';

export interface SmtpReply {
  code: number;
  message?: string;
}

export interface SinkMessage {
  /** '' for the null sender (MAIL FROM:<>). */
  mailFrom: string;
  /** Only the recipients the sink accepted. */
  rcptTo: string[];
  raw: Buffer;
  helo: string;
  remoteAddress: string;
  /** The message travelled over TLS (STARTTLS). */
  secure: boolean;
  receivedAt: number;
  sessionId: string;
}

export interface SinkSession {
  id: string;
  remoteAddress: string;
  helo: string;
  secure: boolean;
  /** Messages accepted on this connection; more than one means the client reused it. */
  messages: number;
  openedAt: number;
  closedAt: number | null;
}

export interface SmtpSinkOptions {
  host?: string;
  port?: number;
  starttls?: boolean;
  name?: string;
  /**
   * How long the end of DATA waits for its 250 after the message is recorded: a client that dies meanwhile
   * handed the message over without learning it (the duplicate SMTP allows when it tries again).
   */
  dataDelayMs?: number;
}

const MAX_MESSAGE_BYTES = 50 * 1024 * 1024;
// Backstop only: close() ends connections itself, this bounds a client that ignores it.
const CLOSE_TIMEOUT_MS = 500;

export async function startSmtpSink(opts: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const sink = new SmtpSink(opts);
  await sink.listen(opts.host ?? '127.0.0.1', opts.port ?? 0);
  return sink;
}

export class SmtpSink {
  readonly messages: SinkMessage[] = [];
  /** One record per connection, in connect order. */
  readonly sessions: SinkSession[] = [];

  private readonly server: SMTPServer;
  private readonly sessionById = new Map<string, SinkSession>();
  private readonly rcptReplies = new Map<string, SmtpReply>();
  private mailReply: SmtpReply | null = null;
  private dataReply: SmtpReply | null = null;
  private readonly waiters = new Set<{ n: number; resolve: (m: SinkMessage[]) => void; reject: (e: Error) => void }>();
  private closing: Promise<void> | undefined;
  private boundHost = '';
  private boundPort = 0;

  constructor(opts: SmtpSinkOptions) {
    this.server = new SMTPServer({
      name: opts.name ?? 'sink.test',
      secure: false,
      authOptional: true,
      // Without STARTTLS in this list smtp-server offers it with its built-in test certificate.
      disabledCommands: opts.starttls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      size: MAX_MESSAGE_BYTES,
      // An explicit false also silences smtp-server's stderr warning about the built-in certificate.
      logger: false,
      // The reverse lookup would go to the host's real DNS: slow or absent in a sandbox, and irrelevant.
      disableReverseLookup: true,
      closeTimeout: CLOSE_TIMEOUT_MS,
      onConnect: (session, callback) => {
        const record: SinkSession = {
          id: session.id,
          remoteAddress: session.remoteAddress,
          helo: '',
          secure: session.secure,
          messages: 0,
          openedAt: Date.now(),
          closedAt: null,
        };
        this.sessions.push(record);
        this.sessionById.set(session.id, record);
        callback();
      },
      onSecure: (_socket, session, callback) => {
        this.track(session).secure = true;
        callback();
      },
      onMailFrom: (_address, session, callback) => {
        this.track(session);
        callback(rejection(this.mailReply));
      },
      onRcptTo: (address, session, callback) => {
        this.track(session);
        callback(rejection(this.rcptReplies.get(address.address.toLowerCase()) ?? null));
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        let failed = false;
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.once('error', (err: Error) => {
          failed = true;
          callback(err);
        });
        stream.once('end', () => {
          if (failed) return;
          if (stream.sizeExceeded) {
            callback(smtpError({ code: 552, message: `5.3.4 Message exceeds ${MAX_MESSAGE_BYTES} bytes` }));
            return;
          }
          const reply = this.dataReply;
          const refused = rejection(reply);
          if (refused) {
            callback(refused);
            return;
          }
          this.record(session, Buffer.concat(chunks));
          const accept = () => callback(null, reply?.message ?? 'OK: message queued');
          if (opts.dataDelayMs) setTimeout(accept, opts.dataDelayMs);
          else accept();
        });
      },
      onClose: (session) => {
        if (this.sessionById.has(session.id)) this.track(session).closedAt = Date.now();
      },
    });
    // Client resets and TLS failures are reported here; unheard, they would crash the test process.
    this.server.on('error', () => {});
  }

  get host(): string {
    return this.boundHost;
  }

  get port(): number {
    return this.boundPort;
  }

  /** Answer RCPT TO for this address (case-insensitive) with `reply`; a 2xx code means accept. */
  replyTo(recipient: string, reply: SmtpReply): this {
    this.rcptReplies.set(recipient.toLowerCase(), reply);
    return this;
  }

  /** Answer the end of DATA with `reply` for every following message; null restores 250. */
  replyToData(reply: SmtpReply | null): this {
    this.dataReply = reply;
    return this;
  }

  /** Answer MAIL FROM with `reply` for every following transaction; null restores 250. */
  replyToMail(reply: SmtpReply | null): this {
    this.mailReply = reply;
    return this;
  }

  waitForMessages(n: number, timeoutMs = 5000): Promise<SinkMessage[]> {
    if (this.messages.length >= n) return Promise.resolve([...this.messages]);
    return new Promise((resolve, reject) => {
      const waiter = {
        n,
        resolve: (m: SinkMessage[]) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`smtp-sink ${this.host}:${this.port}: waited ${timeoutMs} ms for ${n} message(s), got ${this.messages.length}`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** Back to the state right after start: no messages, no sessions, no scripted replies. */
  clear(): this {
    this.messages.length = 0;
    this.sessions.length = 0;
    this.sessionById.clear();
    this.rcptReplies.clear();
    this.mailReply = null;
    this.dataReply = null;
    return this;
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      // smtp-server would wait closeTimeout for idle (e.g. pooled) clients; a test should not.
      for (const connection of [...this.server.connections]) {
        connection.send(421, 'Server shutting down');
        connection.close();
      }
      for (const waiter of this.waiters) waiter.reject(new Error(`smtp-sink ${this.host}:${this.port} closed while waiting for ${waiter.n} message(s)`));
      this.waiters.clear();
    });
    return this.closing;
  }

  /** @internal Called once by startSmtpSink. */
  async listen(host: string, port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.boundHost = host;
    this.boundPort = (this.server.server.address() as AddressInfo).port;
  }

  /** Refreshes the connection's record from smtp-server's session, which learns HELO and TLS over time. */
  private track(session: SMTPServerSession): SinkSession {
    let record = this.sessionById.get(session.id);
    if (!record) {
      // clear() may have dropped the record of a connection that is still open.
      record = { id: session.id, remoteAddress: session.remoteAddress, helo: '', secure: false, messages: 0, openedAt: Date.now(), closedAt: null };
      this.sessions.push(record);
      this.sessionById.set(session.id, record);
    }
    // Typed as string, but false until the client has said HELO/EHLO.
    if (session.hostNameAppearsAs) record.helo = session.hostNameAppearsAs;
    record.secure ||= session.secure;
    return record;
  }

  private record(session: SMTPServerSession, raw: Buffer): void {
    const record = this.track(session);
    record.messages++;
    const { mailFrom, rcptTo } = session.envelope;
    this.messages.push({
      mailFrom: mailFrom ? mailFrom.address : '',
      rcptTo: rcptTo.map((r) => r.address),
      raw,
      helo: record.helo,
      remoteAddress: session.remoteAddress,
      secure: record.secure,
      receivedAt: Date.now(),
      sessionId: session.id,
    });
    for (const waiter of this.waiters) {
      if (this.messages.length >= waiter.n) {
        this.waiters.delete(waiter);
        waiter.resolve([...this.messages]);
      }
    }
  }
}

/** The error smtp-server turns into a reply, or null when the scripted code accepts. */
function rejection(reply: SmtpReply | null): SMTPServerError | null {
  if (!reply || (reply.code >= 200 && reply.code < 300)) return null;
  return smtpError(reply);
}

function smtpError(reply: SmtpReply): SMTPServerError {
  const err: SMTPServerError = new Error(reply.message ?? `Scripted ${reply.code} from smtp-sink`);
  err.responseCode = reply.code;
  return err;
}
