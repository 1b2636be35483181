// Runs inside a sign worker thread: composes and DKIM-signs the jobs the pool (signer.ts) posts, and posts back
// the signed bytes or the error's name and message. It must hold no state between jobs and never let one
// job's failure end the thread.
import { parentPort } from 'node:worker_threads';
import { compose, type ComposeInput } from '../mail/compose.ts';
import { sign, type DkimKey } from '../mail/sign.ts';

/** A ComposeInput as it crosses the thread boundary: structured clone delivers Buffers as plain Uint8Arrays. */
export type PostedInput = Omit<ComposeInput, 'attachments'> & {
  attachments: Array<Omit<ComposeInput['attachments'][number], 'content'> & { content: Uint8Array }>;
};

export interface SignJob {
  id: number;
  input: PostedInput;
  key: DkimKey;
}

export type SignReply = { id: number; raw: Uint8Array } | { id: number; error: { name: string; message: string } };

const port = parentPort;
if (!port) throw new Error('sign-worker.ts runs only inside a worker thread (see signer.ts)');

port.on('message', (job: SignJob) => {
  run(job).then(
    (raw) => port.postMessage({ id: job.id, raw } satisfies SignReply, [raw.buffer]),
    (err: unknown) => {
      const error = err instanceof Error ? { name: err.name, message: err.message } : { name: 'Error', message: String(err) };
      port.postMessage({ id: job.id, error } satisfies SignReply);
    },
  );
});

async function run(job: SignJob): Promise<Uint8Array<ArrayBuffer>> {
  // nodemailer wants Buffers; this view shares the received memory.
  const attachments = job.input.attachments.map((a) => ({ ...a, content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength) }));
  return transferable(await sign(await compose({ ...job.input, attachments }), job.key));
}

// Only a buffer that owns its whole ArrayBuffer may be transferred: a small one can be a slice of Node's
// shared allocation pool, whose transfer would detach every other buffer in it. Anything else is copied.
function transferable(buf: Buffer): Uint8Array<ArrayBuffer> {
  const { buffer } = buf;
  if (buffer instanceof ArrayBuffer && buf.byteOffset === 0 && buf.byteLength === buffer.byteLength) return new Uint8Array(buffer);
  return new Uint8Array(buf);
}
