// The box-wide budget of request-body bytes held in memory at once (upload_memory_mb, catalogue RES-16): the
// files uploaded as raw bodies and the JSON bodies over 1 MiB that authenticated sends may post. A request takes
// its share before it reads its body (and, chunked, as the bytes arrive) and gives it back once it is answered,
// whatever the outcome; one the budget cannot cover is answered 429 `uploads_busy` with its body unread.
import type { Context, Middleware } from 'koa';
import { ApiError } from '../errors.ts';

/** Most uploads finish within seconds; one that waits longer is held by a slow client, not by this box. */
const BUSY_RETRY_AFTER_S = 5;

export class BodyMemory {
  private held = 0;

  /** `totalBytes` is read at every reservation, so a reload's upload_memory_mb applies to the next request. */
  constructor(private readonly totalBytes: () => number) {}

  get total(): number {
    return this.totalBytes();
  }

  /** Bytes the requests in flight hold now. */
  get inUse(): number {
    return this.held;
  }

  /** An empty share for one request, grown as it learns what its body will hold; released once, by its owner. */
  open(): BodyShare {
    let bytes = 0;
    let released = false;
    return {
      get bytes() {
        return bytes;
      },
      growTo: (wanted: number) => {
        if (released) return false;
        if (wanted <= bytes) return true;
        if (this.held + wanted - bytes > this.totalBytes()) return false;
        this.held += wanted - bytes;
        bytes = wanted;
        return true;
      },
      release: () => {
        if (released) return;
        released = true;
        this.held -= bytes;
        bytes = 0;
      },
    };
  }
}

export interface BodyShare {
  readonly bytes: number;
  /** Holds `wanted` bytes in all; false (holding what it held) when the budget cannot cover them now. */
  growTo(wanted: number): boolean;
  release(): void;
}

const SHARE = Symbol('bodyShare');

/** The share the request's body is read under (set by `holdBodyMemory`), if any. */
export const bodyShareOf = (ctx: Context): BodyShare | undefined => (ctx.state as Record<symbol, BodyShare | undefined>)[SHARE];

/** Runs `next` with an open share on the request that is given back when `next` is done, however it ends. */
export async function withBodyShare<T>(ctx: Context, memory: BodyMemory, next: (share: BodyShare) => Promise<T>): Promise<T> {
  const share = memory.open();
  (ctx.state as Record<symbol, BodyShare | undefined>)[SHARE] = share;
  try {
    return await next(share);
  } finally {
    share.release();
  }
}

/** For routes that read their body themselves (readRawBody grows the share as it reads). */
export const holdBodyMemory = (memory: BodyMemory): Middleware => (ctx, next) => withBodyShare(ctx, memory, () => next());

/**
 * The refusal when the budget is spent: 429 before the body is read, with the connection closed after the
 * answer so the unread rest of the body is never taken for the next request (read and discarded first, within
 * bounds, so the client hears the 429: linger.ts).
 */
export function uploadsBusy(ctx: Context): ApiError {
  ctx.set('Connection', 'close');
  ctx.req.pause();
  return new ApiError(
    429,
    'uploads_busy',
    `The server is receiving as many uploads as its memory allows (upload_memory_mb); retry after ${BUSY_RETRY_AFTER_S} s`,
    { headers: { 'retry-after': String(BUSY_RETRY_AFTER_S) } },
  );
}
