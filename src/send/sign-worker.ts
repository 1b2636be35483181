// Runs inside a sign worker thread: composes and DKIM-signs the jobs the pool (signer.ts) posts, and posts back
// the signed bytes, packed too for storing (mail/packing.ts), or the error's name and message. It must hold no
// state between jobs and never let one job's failure end the thread.
import { asBuffer, serveJobs, transferable } from '../threads/worker-pool.ts';
import { compose, type ComposeInput } from '../mail/compose.ts';
import { sign, type DkimKey } from '../mail/sign.ts';
import { rememberParsedKeys } from '../mail/parsed-keys.ts';
import { bodyBytesOf, packAgainstCopy, packBodies, packMessage } from '../mail/packing.ts';
import type { Personalisation } from './personalise.ts';
import { personalCopy } from './personal-copy.ts';

/** A ComposeInput as it crosses the thread boundary: structured clone delivers Buffers as plain Uint8Arrays. */
export type PostedInput = Omit<ComposeInput, 'attachments'> & {
  attachments: Array<Omit<ComposeInput['attachments'][number], 'content'> & { content: Uint8Array }>;
};

export interface SignJob {
  input: PostedInput;
  key: DkimKey;
  personal?: Personalisation;
  /** Also pack the input's bodies (the email's as stored), to store them packed with the copy. */
  packBodies?: boolean;
  /** Pack the copy against this other copy of the email (its delivery id and bytes) instead of the bodies. */
  against?: { id: number; raw: Uint8Array };
}

/** The signed bytes, and as they are stored: packed against the email's bodies (or another copy), and those bodies packed when asked. */
export interface SignedJob {
  raw: Uint8Array;
  packed: Uint8Array;
  bodies: { text: string | Uint8Array | null; html: string | Uint8Array | null } | null;
}

rememberParsedKeys();

serveJobs(async (job: SignJob) => {
  // nodemailer wants Buffers; this view shares the received memory.
  const attachments = job.input.attachments.map((a) => ({ ...a, content: asBuffer(a.content) }));
  const input = { ...job.input, attachments };
  const signed = await sign(await compose(job.personal ? personalCopy(input, job.personal) : input), job.key);
  // Packed against the bodies as the email stores them: the input's, never a recipient's personalised HTML.
  const [text, html] = [job.input.text ?? null, job.input.html ?? null];
  const bodies = job.packBodies ? packBodies(text, html) : null;
  const transfer: ArrayBuffer[] = [];
  const move = <T>(b: T): T => {
    if (!Buffer.isBuffer(b)) return b;
    const own = transferable(b);
    transfer.push(own.buffer);
    return own as T;
  };
  const packed = job.against ? packAgainstCopy(signed, job.against) : packMessage(signed, bodies ? bodies.bytes : bodyBytesOf(text, html));
  const result: SignedJob = { raw: move(signed), packed: move(packed), bodies: bodies && { text: move(bodies.text), html: move(bodies.html) } };
  return { result, transfer };
});
