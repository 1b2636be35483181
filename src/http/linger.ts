// Lingering close, as nginx (lingering_close) and Go's net/http do it: a request answered before its body was
// read (413 over a cap, 429 uploads_busy, 408, a route's 4xx) gets its answer, then the rest of the body is read
// and thrown away, within bounds, before the connection closes. Closed at once with the client still sending,
// the kernel answers the client's next segment with a reset, and a client busy writing its body (Node's fetch,
// curl) reports EPIPE or ECONNRESET instead of the answer. Only for authenticated callers: a stranger's refusal
// (401, 413 on an open route) still closes at once (docs/security.md), so no stranger can hold a socket open.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerBounds {
  /** Body bytes read and discarded after the answer, at most. */
  maxBytes: number;
  /** From the answer to the close, at most. */
  maxMs: number;
  /** With nothing arriving for this long, the client is done (or stuck): close. */
  idleMs: number;
}

/**
 * 64 MiB: more than any body the API takes (a batch, 50 MiB), so whatever a client could mean to send is drained
 * whole and the client hears the answer; an announced rest past it is closed on at once, as Go does past its
 * 256 KiB. 30 s in all and 5 s idle are nginx's lingering_time and lingering_timeout: 64 MiB takes 5 s at
 * 100 Mbit/s, and a client that sends nothing for 5 s has stopped.
 */
export const LINGER: LingerBounds = { maxBytes: 64 * 1024 * 1024, maxMs: 30_000, idleMs: 5_000 };

/**
 * Makes the close that follows this request's answer (its response carries `Connection: close`) a lingering
 * one. Node ends such a connection by calling the socket's destroySoon() once the answer is written
 * (_http_server.js resOnFinish): that call, on this socket alone, becomes "send FIN, read and discard, close".
 */
export function lingerOnClose(req: IncomingMessage, bounds: LingerBounds = LINGER): void {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > bounds.maxBytes) return;
  const socket = req.socket as Socket & { destroySoon?: () => void };
  if (typeof socket.destroySoon !== 'function') return;
  socket.destroySoon = () => linger(req, socket, bounds);
}

function linger(req: IncomingMessage, socket: Socket, bounds: LingerBounds): void {
  // The answer is queued before the FIN; the server allows half-open sockets, so reading goes on.
  socket.end();
  let read = 0;
  const stop = () => {
    clearTimeout(total);
    clearTimeout(idle);
  };
  // A bound passed: close now, whatever is left.
  const cut = () => {
    stop();
    socket.destroy();
  };
  // Nothing is left to read: close once the answer is out (destroying sooner would drop it), still within maxMs.
  const done = () => {
    clearTimeout(idle);
    if (socket.writableFinished) cut();
    else socket.once('finish', cut);
  };
  const total = setTimeout(cut, bounds.maxMs).unref();
  const idle = setTimeout(cut, bounds.idleMs).unref();
  socket.once('close', stop);
  socket.once('error', cut);
  // The client closed its side after reading the answer.
  socket.once('end', done);
  if (req.complete) return done();
  // Node's HTTP parser still owns the socket and hands the rest of the body to the request: take it from there.
  req.removeAllListeners('data');
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > bounds.maxBytes) return cut();
    idle.refresh();
  });
  req.once('end', done);
  req.resume();
}
