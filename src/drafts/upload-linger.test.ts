// An authenticated upload refused before its body is read is answered, then the rest of its body is read and
// thrown away within bounds before the connection closes (http/linger.ts, "lingering close"). Against a real
// serve process: 50 uploads by Node's fetch, each taking a draft over its 10 MB, each get their 413 (none
// EPIPE or ECONNRESET), announced or chunked, and nothing is stored; an endless chunked body is cut off after
// LINGER.maxBytes and a body that stops arriving after LINGER.idleMs; a stranger's upload is closed at once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { request, runCli, startAppProcess, tempDir, testEnv, type AppProcess } from '../testkit/app.ts';
import { LINGER } from '../http/linger.ts';

const MB = 1000 * 1000;
const HELD = Buffer.alloc(6 * MB, 1); // on the draft first: 4 MB of its 10 MB left
const OVER = Buffer.alloc(4.5 * MB, 2); // takes it over
const UPLOADS = 50;

let app: AppProcess;
let dir: string;
let key: string;
let draftId: string;
test.before(async () => {
  dir = tempDir();
  const env = testEnv(dir, { MAILWRIGHT_RATE_LIMIT: '0', MAILWRIGHT_LOG_LEVEL: 'info' });
  app = await startAppProcess(env);
  key = (await runCli(['key', 'create', '--name', 'linger'], env)).stdout.trim();
  draftId = (await api('/drafts', { method: 'POST', body: {} })).body.id;
  const held = await upload(HELD);
  assert.is(held.status, 201, JSON.stringify(held.body));
});
test.after(async () => {
  await app.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${app.url}/api/v1${path}`, { key, ...opts });
const url = () => `${app.url}/api/v1/drafts/${draftId}/attachments`;
const headers = () => ({ authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream', 'x-filename': 'big.bin' });

/** An upload by Node's fetch: its status and error code, or the error fetch threw (`EPIPE`, `ECONNRESET`...). */
async function upload(body: Buffer | ReadableStream<Uint8Array>): Promise<{ status: number; body: any; failure?: string }> {
  try {
    const res = await fetch(url(), { method: 'POST', headers: headers(), body, ...(body instanceof Buffer ? {} : { duplex: 'half' }) } as RequestInit);
    return { status: res.status, body: await res.json() };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return { status: 0, body: null, failure: cause?.code ?? cause?.message ?? String(err) };
  }
}

/** The file as a stream of 64 KB chunks: fetch sends it chunked, with no Content-Length. */
const chunked = (bytes: Buffer) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (let at = 0; at < bytes.length; at += 65_536) c.enqueue(bytes.subarray(at, at + 65_536));
      c.close();
    },
  });

/** Runs `jobs` at most `width` at a time. */
async function pooled<T>(count: number, width: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) {
      const i = next++;
      out[i] = await job(i);
    }
  }));
  return out;
}

const files = async () => ((await api(`/drafts/${draftId}`)).body.attachments as unknown[]).length;

test(`${UPLOADS} uploads by fetch, each taking the draft over 10 MB: each answered 413, none EPIPE or ECONNRESET`, async () => {
  const answers = await pooled(UPLOADS, 5, () => upload(OVER));
  const seen = answers.reduce<Record<string, number>>((n, a) => ((n[a.status || a.failure!] = (n[a.status || a.failure!] ?? 0) + 1), n), {});
  assert.equal(seen, { 413: UPLOADS }, JSON.stringify(seen));
  for (const a of answers) assert.equal([a.body.error.code, a.body.error.message], ['payload_too_large', 'attachments: at most 10000000 bytes in all per draft']);
  assert.is(await files(), 1, 'nothing stored');
});

test('chunked uploads by fetch, refused as the count passes the room: each answered 413', async () => {
  const answers = await pooled(10, 5, () => upload(chunked(OVER)));
  assert.equal(answers.map((a) => a.status || a.failure), Array(10).fill(413));
  assert.is(await files(), 1, 'nothing stored');
});

/**
 * A raw HTTP/1.1 upload that sends its head at once: `answer` resolves with what the server wrote once it sent
 * its FIN, `failed` with the error (EPIPE, ECONNRESET) a write meets once the server has closed for good. Half
 * open, so it can go on writing after the server's FIN, as a client still sending its body does.
 */
function rawUpload(head: Record<string, string>) {
  const target = new URL(app.url);
  const socket = connect({ port: Number(target.port), host: target.hostname, allowHalfOpen: true });
  let text = '';
  let sent = 0;
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  const answer = new Promise<string>((resolve) => socket.once('end', () => resolve(text)));
  const failed = new Promise<string>((resolve) => socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message)));
  const lines = Object.entries({ host: target.host, authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream', ...head }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.write(`POST /api/v1/drafts/${draftId}/attachments HTTP/1.1\r\n${lines.join('')}\r\n`);
  const send = (chunk: Buffer) => {
    if (socket.destroyed) return false;
    sent += chunk.length;
    return socket.write(chunk);
  };
  return { socket, answer, failed, send, sent: () => sent };
}

/** Fails after `ms` with `what`: a budget for the server to close, never a measure of how fast it did. */
const within = <T>(ms: number, what: string, p: Promise<T>) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s`)), ms).unref())]);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(`an endless chunked body is answered 413, then cut off after ${LINGER.maxBytes / 1024 / 1024} MiB`, async () => {
  const up = rawUpload({ 'transfer-encoding': 'chunked' });
  const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 3), Buffer.from('\r\n')]);
  const pump = () => {
    while (up.send(chunk));
  };
  up.socket.on('drain', pump);
  pump();
  const code = await within(120_000, 'the cut', up.failed);
  assert.ok(['EPIPE', 'ECONNRESET'].includes(code), code);
  const text = await up.answer;
  assert.match(text, /^HTTP\/1\.1 413 /);
  assert.match(text, /\r\nconnection: close\r\n/i);
  assert.match(text, /"code":"payload_too_large"/);
  // The room (4 MB) before the refusal, the bound after it, and what the two kernels' buffers held at the cut.
  assert.ok(up.sent() > 4 * MB + LINGER.maxBytes, `cut after ${up.sent()} bytes, before the bound`);
  assert.ok(up.sent() < 4 * MB + LINGER.maxBytes + 32 * 1024 * 1024, `still reading after ${up.sent()} bytes`);
  assert.is(await files(), 1);
});

test(`a refused body that stops arriving gets its 413, then the connection is closed after ${LINGER.idleMs / 1000} s idle`, async () => {
  const up = rawUpload({ 'content-length': String(OVER.length) });
  up.send(OVER.subarray(0, MB));
  assert.match(await within(20_000, 'the answer', up.answer), /^HTTP\/1\.1 413 /);
  // More of the body is still taken after the answer...
  let failure: string | undefined;
  void up.failed.then((code) => (failure = code));
  up.send(OVER.subarray(MB, 2 * MB));
  await pause(500);
  assert.is(failure, undefined, 'the rest of the body is read, not reset');
  // ...and once nothing has arrived for longer than the idle bound, the server has closed: a write meets a reset.
  await pause(2 * LINGER.idleMs);
  for (let i = 0; i < 50 && up.send(Buffer.alloc(65_536)); i++) await pause(20);
  assert.ok(['EPIPE', 'ECONNRESET'].includes(await within(10_000, 'the reset', up.failed)));
});

test("a stranger's upload gets 401 and no lingering: what it sends after the answer meets a reset", async () => {
  const up = rawUpload({ authorization: 'Bearer re_not_a_key', 'content-length': String(OVER.length) });
  assert.match(await within(10_000, 'the answer', up.answer), /^HTTP\/1\.1 401 /);
  // A lingering server would take all of it; this one closed with the answer.
  for (let i = 0; i < 200 && up.send(Buffer.alloc(65_536)); i++) await pause(5);
  assert.ok(['EPIPE', 'ECONNRESET'].includes(await within(10_000, 'the reset', up.failed)));
  assert.ok(up.sent() < OVER.length, `the server took ${up.sent()} bytes after a 401`);
});

test.run();
