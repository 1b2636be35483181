// Runs inside a sign worker thread: composes and DKIM-signs the jobs the pool (signer.ts) posts, and posts back
// the signed bytes or the error's name and message. It must hold no state between jobs and never let one
// job's failure end the thread.
import crypto, { type KeyObject } from 'node:crypto';
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

// mailauth has no way to take a parsed key: it calls crypto.createPrivateKey on the PEM for every message,
// about 0.6 ms of this thread's CPU each time (npm run bench profile). A KeyObject is immutable, so this
// thread keeps the one it parsed for each PEM and hands it back; mailauth still does all of the signing.
const parseKey = crypto.createPrivateKey;
const parsedKeys = new Map<string, KeyObject>();
const MAX_PARSED_KEYS = 1000;
crypto.createPrivateKey = ((input: Parameters<typeof parseKey>[0]) => {
  const pem = typeof input === 'object' && !Buffer.isBuffer(input) && 'key' in input && input.format === 'pem' ? input.key : null;
  if (typeof pem !== 'string' && !Buffer.isBuffer(pem)) return parseKey(input);
  const id = Buffer.isBuffer(pem) ? pem.toString('latin1') : pem;
  let key = parsedKeys.get(id);
  if (!key) {
    if (parsedKeys.size >= MAX_PARSED_KEYS) parsedKeys.clear();
    key = parseKey(input);
    parsedKeys.set(id, key);
  }
  return key;
}) as typeof parseKey;

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
