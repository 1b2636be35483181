// A client of the box's live event stream (GET /events/stream) for tests: reads the Server-Sent Events as they
// come and hands back the complete messages so far, each with its id and its parsed data; or, over a socket of
// its own, a client that can stop reading.
import { connect } from 'node:net';

export interface StreamMessage<T> {
  /** An email event's seq (NaN for a domain, inbox or key event, whose id is `N:D`: see lastId). */
  id: number;
  /** The `id:` as sent, what a reconnect gives as Last-Event-ID. */
  lastId: string;
  /** The `event:` line (a domain event's type), or '' when none. */
  event: string;
  data: T;
}

/** The complete messages in a stream's text so far (a read may end inside one). */
export function streamMessages<T>(text: string): Array<StreamMessage<T>> {
  return text
    .slice(0, text.lastIndexOf('\n\n') + 1)
    .split('\n\n')
    .filter((m) => m.includes('data: '))
    .map((m) => {
      const lastId = /^id: (\S+)$/m.exec(m)![1];
      return { id: /^\d+$/.test(lastId) ? Number(lastId) : NaN, lastId, event: /^event: (\S+)$/m.exec(m)?.[1] ?? '', data: JSON.parse(/^data: (.*)$/m.exec(m)![1]) as T };
    });
}

/** Opens the stream at `url` with a key (and a Last-Event-ID) and reads it until closed. */
export async function openEventStream<T>(url: string, key: string, lastEventId?: number | string) {
  const ctl = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}) }, signal: ctl.signal });
  const reader = res.body!.getReader();
  let text = '';
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      text += new TextDecoder().decode(value);
    }
  })();
  return {
    res,
    messages: () => streamMessages<T>(text),
    connected: () => text.includes(': connected'),
    close: () => ctl.abort(),
  };
}

/**
 * A stream opened over a socket of its own from a chosen client address, for clients that stop reading: the
 * answer's status and headers once they arrive, then the body (chunked transfer decoded) as far as it was read.
 * pause() stops reading from the socket, so the box's writes pile up in the kernel and then in the box.
 */
export interface RawStream {
  status: number;
  headers: string;
  /** The body so far (for a refusal: the JSON envelope once it is complete). */
  text(): string;
  /** Whether the response has ended (the last chunk) or the socket closed. */
  ended(): boolean;
  pause(): void;
  resume(): void;
  close(): void;
}

export function openRawStream(opts: { port: number; key: string; localAddress?: string; lastEventId?: number; path?: string }): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: opts.port, ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
    let raw = Buffer.alloc(0);
    let head: { status: number; headers: string; chunked: boolean } | null = null;
    let body = '';
    let done = false;
    const decoder = new TextDecoder();
    /** Takes the complete chunks from `raw` into `body`. */
    const take = () => {
      if (!head) return;
      if (!head.chunked) {
        body += decoder.decode(raw, { stream: true });
        raw = Buffer.alloc(0);
        return;
      }
      for (;;) {
        const eol = raw.indexOf('\r\n');
        if (eol === -1) return;
        const size = parseInt(raw.subarray(0, eol).toString('latin1'), 16);
        if (raw.length < eol + 2 + size + 2) return;
        if (size === 0) done = true;
        body += decoder.decode(raw.subarray(eol + 2, eol + 2 + size), { stream: true });
        raw = raw.subarray(eol + 2 + size + 2);
      }
    };
    socket.on('data', (chunk: Buffer) => {
      raw = Buffer.concat([raw, chunk]);
      if (!head) {
        const end = raw.indexOf('\r\n\r\n');
        if (end === -1) return;
        const headers = raw.subarray(0, end).toString('latin1');
        head = { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headers)![1]), headers, chunked: /^transfer-encoding: chunked$/im.test(headers) };
        raw = raw.subarray(end + 4);
        take();
        resolve({
          status: head.status,
          headers,
          text: () => body,
          ended: () => done,
          pause: () => socket.pause(),
          resume: () => socket.resume(),
          close: () => socket.destroy(),
        });
        return;
      }
      take();
    });
    socket.on('close', () => (done = true));
    socket.on('error', (err) => (head ? (done = true) : reject(err)));
    socket.write(
      `GET ${opts.path ?? '/api/v1/events/stream'} HTTP/1.1\r\nHost: 127.0.0.1:${opts.port}\r\nAuthorization: Bearer ${opts.key}\r\nAccept: text/event-stream\r\n` +
        (opts.lastEventId !== undefined ? `Last-Event-ID: ${opts.lastEventId}\r\n` : '') +
        '\r\n',
    );
  });
}
