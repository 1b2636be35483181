// A request body that is a file, not JSON: read from the socket with its caps enforced while reading, so an
// upload over the cap is cut off at the cap (never buffered whole), one that outlasts its time is cut off
// too, and one that ends short of its Content-Length is refused. Any refusal closes the connection: the
// rest of an unread body must not be taken for the next request.
import type { Context } from 'koa';
import { ApiError } from '../errors.ts';

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
  // The server leaves `Expect: 100-continue` to us (createHttpServer): invite the body only now.
  if (ctx.get('Expect').toLowerCase() === '100-continue') ctx.res.writeContinue();

  const chunks: Buffer[] = [];
  let size = 0;
  const outcome = await new Promise<ApiError | null>((resolve) => {
    const done = (err: ApiError | null) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('aborted', onAborted).off('error', onAborted).off('close', onClose);
      resolve(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBytes) return done(limits.tooLarge());
      chunks.push(chunk);
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
  return Buffer.concat(chunks, size);
}

const aborted = () => new ApiError(400, 'request_aborted', 'The request body was not received in full');
