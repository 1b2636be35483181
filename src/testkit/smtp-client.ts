// Test-only: a raw SMTP client that sends exactly the bytes a test writes and reads whole replies
// (multi-line included), for asserting reply codes and for hostile input no well-behaved client sends.
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { once } from 'node:events';

export interface SmtpReply {
  code: number;
  lines: string[];
  text: string;
}

export class RawSmtp {
  private buffer = '';
  private waiting: Array<(reply: SmtpReply) => void> = [];
  private readonly replies: SmtpReply[] = [];
  closed = false;

  private constructor(private socket: Socket) {
    this.listen(socket);
  }

  private listen(socket: Socket): void {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      this.parse();
    });
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => (this.closed = true));
  }

  /** `localAddress`: the client's own address, another of 127.0.0.0/8 to be another client (or network). */
  static open(port: number, host = '127.0.0.1', localAddress?: string): Promise<RawSmtp> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host, localAddress }, () => resolve(new RawSmtp(socket)));
      socket.once('error', reject);
    });
  }

  /**
   * The next complete reply (the greeting first). The default wait is a budget for a loaded machine (a shared
   * CI host answers a greeting in milliseconds, but can take seconds), not a speed check.
   */
  read(timeoutMs = 15_000): Promise<SmtpReply> {
    const ready = this.replies.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no SMTP reply in ${timeoutMs} ms; buffer: ${JSON.stringify(this.buffer)}`)), timeoutMs);
      this.waiting.push((reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
    });
  }

  /** Writes raw bytes as they are (no CRLF added). */
  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Sends one command line (CRLF added) and reads its reply. */
  async command(line: string, timeoutMs?: number): Promise<SmtpReply> {
    this.write(line + '\r\n');
    return this.read(timeoutMs);
  }

  /**
   * After a 220 to STARTTLS: the TLS handshake (any certificate accepted); the dialogue goes on over TLS.
   * `options` change the client's side (an old client: `{ maxVersion: 'TLSv1' }`); a failed handshake rejects.
   */
  async startTls(servername?: string, options: ConnectionOptions = {}): Promise<TLSSocket> {
    const plain = this.socket;
    plain.removeAllListeners('data');
    const secure = tlsConnect({ ...options, socket: plain, rejectUnauthorized: false, servername });
    await once(secure, 'secureConnect');
    this.socket = secure;
    this.listen(secure);
    return secure;
  }

  close(): void {
    this.socket.destroy();
  }

  private parse(): void {
    for (;;) {
      const lines: string[] = [];
      let rest = this.buffer;
      let done = false;
      while (!done) {
        const end = rest.indexOf('\r\n');
        if (end < 0) return;
        const line = rest.slice(0, end);
        rest = rest.slice(end + 2);
        lines.push(line);
        done = line.length < 4 || line[3] !== '-';
      }
      this.buffer = rest;
      const reply = { code: Number(lines[0].slice(0, 3)), lines, text: lines.map((l) => l.slice(4)).join('\n') };
      const waiter = this.waiting.shift();
      if (waiter) waiter(reply);
      else this.replies.push(reply);
    }
  }
}

/** A connection from `localAddress` and its first reply line (a greeting, or a refusal such as 421), read within `waitMs`; left open. */
export function firstReply(port: number, localAddress: string, waitMs: number): Promise<{ socket: Socket; code: number; line: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`no greeting in ${waitMs} ms`)), waitMs);
    socket.setEncoding('latin1');
    socket.on('error', () => undefined);
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const end = buffer.indexOf('\r\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.removeAllListeners('data');
      resolve({ socket, code: Number(buffer.slice(0, 3)), line: buffer.slice(0, end) });
    });
  });
}

/** SASL PLAIN's initial response for `password` (an API key, on submission) under `user`. */
export const plainAuth = (password: string, user = 'anything') => Buffer.from(`\0${user}\0${password}`).toString('base64');

/** A submission session past EHLO, STARTTLS and EHLO again; authenticated with `key` (expecting 235) unless it is null. */
export async function submissionSession(port: number, key: string | null): Promise<RawSmtp> {
  const c = await RawSmtp.open(port);
  await c.read();
  await c.command('EHLO client.example');
  const tls = await c.command('STARTTLS');
  if (tls.code !== 220) throw new Error(`STARTTLS answered ${tls.code} ${tls.text}`);
  await c.startTls();
  await c.command('EHLO client.example');
  if (key) {
    const auth = await c.command(`AUTH PLAIN ${plainAuth(key)}`);
    if (auth.code !== 235) throw new Error(`AUTH answered ${auth.code} ${auth.text}`);
  }
  return c;
}
