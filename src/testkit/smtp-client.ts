// Test-only: a raw SMTP client that sends exactly the bytes a test writes and reads whole replies
// (multi-line included), for asserting reply codes and for hostile input no well-behaved client sends.
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
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

  /** `localAddress`: the client's own address (any of 127.0.0.0/8 on loopback), to be another client. */
  static open(port: number, host = '127.0.0.1', localAddress?: string): Promise<RawSmtp> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host, localAddress }, () => resolve(new RawSmtp(socket)));
      socket.once('error', reject);
    });
  }

  /** The next complete reply (the greeting first). */
  read(timeoutMs = 5000): Promise<SmtpReply> {
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

  /** After a 220 to STARTTLS: the TLS handshake (any certificate accepted); the dialogue goes on over TLS. */
  async startTls(servername?: string): Promise<TLSSocket> {
    const plain = this.socket;
    plain.removeAllListeners('data');
    const secure = tlsConnect({ socket: plain, rejectUnauthorized: false, servername });
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
