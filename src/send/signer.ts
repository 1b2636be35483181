// The worker threads that compose and DKIM-sign outgoing mail off the event loop (MIME encoding, RSA signing
// and mailauth's per-message PEM parsing cost milliseconds of CPU per message). Never retries a job, and never
// leaves a caller's promise unsettled (worker-pool.ts).
import type { ComposeInput } from '../mail/compose.ts';
import type { DkimKey } from '../mail/sign.ts';
import { asBuffer, WorkerPool } from '../threads/worker-pool.ts';
import type { SignedJob, SignJob } from './sign-worker.ts';
import type { Personalisation } from './personalise.ts';

export type { WorkerStats } from '../threads/worker-pool.ts';

/** A signed message: the bytes as signed, as stored (packed against the email's bodies or another copy), the bodies packed when asked. */
export interface Signed {
  raw: Buffer;
  packed: Buffer;
  bodies: { text: string | Buffer | null; html: string | Buffer | null } | null;
}

/** Linux nice of the signing threads, the lowest: about 1/70 of a nice-0 thread's weight on a shared core. */
const SIGN_NICE = 19;

export class Signer extends WorkerPool<SignJob, SignedJob> {
  constructor(opts: { size?: number } = {}) {
    // Signing yields the cores to acceptance (the event loop answering, the writer committing): under a burst of
    // sends the API keeps answering near its own speed, and what it accepted is signed and delivered as the
    // cores come free, nothing acknowledged waiting on anything but its commit. An idle box signs at full speed.
    super({ name: 'sign', module: new URL('./sign-worker.ts', import.meta.url), size: opts.size, nice: SIGN_NICE });
  }

  /**
   * sign(await compose(input), key), on a worker thread; `personal` makes it one recipient's copy
   * (personal-copy.ts). A function as `input` is called only when a worker takes the job, so a long queue
   * keeps message bodies in the store rather than in this thread's heap. The worker also packs the result for
   * storing, against the input's bodies, and with `packBodies` those bodies too (mail/packing.ts); or, given
   * `against`, another recipient's copy of the email (its delivery id and bytes), against that copy.
   */
  async composeAndSign(
    input: ComposeInput | (() => Promise<ComposeInput>),
    key: DkimKey,
    personal?: Personalisation,
    opts: { packBodies?: boolean; against?: { id: number; raw: Buffer } } = {},
  ): Promise<Signed> {
    const signed = await this.runFrom(async () => {
      const given = typeof input === 'function' ? await input() : input;
      // A Buffer is often a view into a larger allocation (Node's pool, a whole request body), and structured
      // clone copies the entire allocation. Copy just the attachment's bytes once and hand that copy over.
      const transfer: ArrayBuffer[] = [];
      const attachments = given.attachments.map((a) => {
        const content = new Uint8Array(a.content);
        transfer.push(content.buffer);
        return { ...a, content };
      });
      return { job: { input: { ...given, attachments }, key, personal, packBodies: opts.packBodies, against: opts.against }, transfer };
    });
    const buffer = <T>(b: T): T => (b instanceof Uint8Array ? (asBuffer(b) as T) : b);
    return { raw: buffer(signed.raw), packed: buffer(signed.packed), bodies: signed.bodies && { text: buffer(signed.bodies.text), html: buffer(signed.bodies.html) } } as Signed;
  }
}
