// A request body that is a file, not JSON: read from the socket with its caps enforced while reading, so an
// upload over the cap is cut off at the cap (never buffered whole), one that outlasts its time is cut off
// too, and one that ends short of its Content-Length is refused. The bytes are held under the request's share
// of the box-wide budget (body-memory.ts), taken before reading or, chunked, as they arrive. Any refusal closes
// the connection after the answer (the rest of an unread body must not be taken for the next request), having
// read and discarded that rest within bounds for a known caller, so its client hears the answer (linger.ts).
import type { Context } from 'koa';
import { ApiError } from '../errors.ts';
import { bodyShareOf, uploadsBusy } from './body-memory.ts';

export interface RawBodyLimits {
  maxBytes: number;
  timeoutMs: number;
  /** The error for a body over maxBytes (declared or as read). */
  tooLarge: () => ApiError;
  /** The error for a body still arriving after timeoutMs (default: 408 naming an upload). */
  tooSlow?: () => ApiError;
}

export async function readRawBody(ctx: Context, limits: RawBodyLimits): Promise<Buffer> {
  const req = ctx.req;
  const refuse = (err: ApiError): never => {
    ctx.set('Connection', 'close');
    // Stop taking bytes; the answer still goes out on the socket before it closes.
    req.pause();
    throw err;
  };
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limits.maxBytes) refuse(limits.tooLarge());
  const share = bodyShareOf(ctx);
  if (share && declared !== undefined && !share.growTo(declared)) throw uploadsBusy(ctx);
  // The server leaves `Expect: 100-continue` to us (createHttpServer): invite the body only now.
  if (ctx.get('Expect').toLowerCase() === '100-continue') ctx.res.writeContinue();

  // A declared length is read straight into one buffer of that size, so the body is never held twice (the
  // chunks and their concatenation); a chunked one is kept as chunks and joined at the end.
  const whole = declared !== undefined ? Buffer.allocUnsafe(declared) : null;
  const chunks: Buffer[] = [];
  let size = 0;
  const outcome = await new Promise<ApiError | null>((resolve) => {
    const done = (err: ApiError | null) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('aborted', onAborted).off('error', onAborted).off('close', onClose);
      resolve(err);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limits.maxBytes) return done(limits.tooLarge());
      if (whole) {
        // Node's parser never hands over more than Content-Length; were it to, the body would be no upload.
        if (size + chunk.length > whole.length) return done(aborted());
        chunk.copy(whole, size);
      } else {
        if (share && !share.growTo(size + chunk.length)) return done(uploadsBusy(ctx));
        chunks.push(chunk);
      }
      size += chunk.length;
    };
    const onEnd = () => done(declared !== undefined && size !== declared ? aborted() : null);
    const onAborted = () => done(aborted());
    const onClose = () => done(req.complete ? null : aborted());
    const tooSlow = limits.tooSlow ?? (() => new ApiError(408, 'request_timeout', `The upload did not arrive within ${Math.round(limits.timeoutMs / 1000)} s`));
    const timer = setTimeout(() => done(tooSlow()), limits.timeoutMs);
    req.on('data', onData).on('end', onEnd).on('aborted', onAborted).on('error', onAborted).on('close', onClose);
  });
  if (outcome) refuse(outcome);
  // Bytes past the Content-Length are no request: Node answers them 400 and drops the connection, so the
  // caller never hears of this upload either, and it must not be kept.
  if (req.socket.destroyed) refuse(aborted());
  // Never a buffer with bytes it was not sent: allocUnsafe's would be another request's memory.
  if (whole && size !== whole.length) refuse(aborted());
  return whole ?? Buffer.concat(chunks, size);
}

const aborted = () => new ApiError(400, 'request_aborted', 'The request body was not received in full');
