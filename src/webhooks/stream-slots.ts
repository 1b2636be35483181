// How many live event streams (GET /events/stream) may be open at once: per credential (API key or browser
// session), per client address (an IPv6 /64), per workspace and on the whole box (RES-16; nginx's
// limit_conn, Postfix anvil's per-client count). A stream past any of them is refused before it starts.
import { ApiError } from '../errors.ts';

export const STREAM_LIMITS = {
  /** An app needs one stream; a few cover its restarts overlapping and a dashboard in several tabs. */
  credential: 5,
  address: 10,
  /** Half the box: no workspace can hold every stream. */
  workspace: 100,
  /** Each stream may hold up to stream.ts MAX_UNREAD_BYTES + one message unread: ~70 MB at most for all. */
  box: 200,
};

export type StreamLimit = keyof typeof STREAM_LIMITS;

export interface StreamOwner {
  /** `key:<id>` or `session:<id>`. */
  credential: string;
  workspaceId: string;
  /** The client as per-client limits count it (http/client-address.ts clientKey). */
  address: string;
}

const WHAT: Record<StreamLimit, string> = {
  credential: 'per API key or session',
  address: 'per client address',
  workspace: 'per workspace',
  box: 'on this box',
};

/** Refused: the limit a stream would pass. */
export class TooManyStreams extends ApiError {
  constructor(readonly limit: StreamLimit, max: number) {
    super(429, 'too_many_streams', `Too many live event streams: at most ${max} open at once ${WHAT[limit]}. Close one, or wait for one to end, and connect again.`, {
      headers: { 'retry-after': '10' },
    });
  }
}

export class StreamSlots {
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(private readonly limits: Record<StreamLimit, number> = STREAM_LIMITS) {}

  /** Takes a slot for the owner, or throws TooManyStreams; the function returned gives it back (once). */
  take(owner: StreamOwner): () => void {
    const keys: Array<[StreamLimit, string]> = [
      ['credential', `c ${owner.credential}`],
      ['address', `a ${owner.address}`],
      ['workspace', `w ${owner.workspaceId}`],
    ];
    if (this.total >= this.limits.box) throw new TooManyStreams('box', this.limits.box);
    for (const [limit, key] of keys) if ((this.held.get(key) ?? 0) >= this.limits[limit]) throw new TooManyStreams(limit, this.limits[limit]);
    for (const [, key] of keys) this.held.set(key, (this.held.get(key) ?? 0) + 1);
    this.total++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total--;
      for (const [, key] of keys) {
        const n = (this.held.get(key) ?? 1) - 1;
        if (n > 0) this.held.set(key, n);
        else this.held.delete(key);
      }
    };
  }
}
