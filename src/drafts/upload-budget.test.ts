// The box-wide upload budget (upload_memory_mb, catalogue RES-16) over real sockets, at its smallest (16 MiB),
// where one 9.9 MB upload in flight leaves no room for a second: a request the budget cannot cover is 429
// `uploads_busy` before its body is read, a send's large JSON body shares the budget, small requests do not
// wait on it, and every way a request can end (done, aborted, short, timed out, too large, invalid) gives its
// share back, which a leak of a single share would turn into 429 for every later 9.9 MB upload.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, type Socket } from 'node:net';
import { request } from '../testkit/app.ts';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';

const FILE_BYTES = 9_900_000;
let s: OutboundScene;

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_UPLOAD_MEMORY_MB: '16', MAILWRIGHT_UPLOAD_TIMEOUT: '60s', MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(() => s.stop());

const newDraft = async () => (await request(`${s.t.api}/drafts`, { method: 'POST', body: {}, key: s.key })).body.id as string;
const upload = async (draftId: string, content: Buffer | string) => {
  const res = await fetch(`${s.t.api}/drafts/${draftId}/attachments`, { method: 'POST', headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/octet-stream' }, body: content });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
};
/** A fresh draft takes a whole 9.9 MB file: possible only while no other 9.9 MB share is held. */
const fullUploadSucceeds = async () => (await upload(await newDraft(), Buffer.alloc(FILE_BYTES, 1))).status === 201;
const budgetIsFree = () => eventually(fullUploadSucceeds, 10_000, 'a 9.9 MB upload to go through (the budget given back)');

/** A send with one attachment of `bytes` bytes, as the JSON body POST /emails takes. */
const sendBody = (bytes: number, from = 'me@sender.test') =>
  JSON.stringify({ from, to: ['reader@dest.test'], subject: 'file', text: 'attached', attachments: [{ filename: 'f.bin', content: Buffer.alloc(bytes, 7).toString('base64') }] });
const send = async (body: string) => {
  const res = await fetch(`${s.t.api}/emails`, { method: 'POST', headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' }, body });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
};

/** A hand-written HTTP connection: what came back so far, and waits on it. */
function open(head: string) {
  const url = new URL(s.t.api);
  const socket: Socket = connect(Number(url.port), url.hostname);
  let received = '';
  socket.on('data', (d) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.write(head);
  return {
    socket,
    write: (data: Buffer | string) => new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.write(data, () => resolve()))),
    /** Waits (at most 10 s) until the answer so far matches. */
    until: (re: RegExp, what: string) => eventually(() => re.test(received) && received, 10_000, what),
    /** Everything received once the server closed (at most 10 s). */
    answer: async () => {
      await Promise.race([closed, new Promise((r) => setTimeout(r, 10_000))]);
      return received;
    },
  };
}
const uploadHead = (draftId: string, headers: string) =>
  `POST /api/v1/drafts/${draftId}/attachments HTTP/1.1\r\nHost: ${new URL(s.t.api).host}\r\nAuthorization: Bearer ${s.key}\r\nContent-Type: application/octet-stream\r\n${headers}\r\n`;
const sendHead = (headers: string) =>
  `POST /api/v1/emails HTTP/1.1\r\nHost: ${new URL(s.t.api).host}\r\nAuthorization: Bearer ${s.key}\r\nContent-Type: application/json\r\n${headers}\r\n`;

/** The last response in what came back: status, headers (lower-case names) and JSON body. */
function lastResponse(raw: string) {
  const at = raw.lastIndexOf('HTTP/1.1 ');
  const [head, body] = [raw.slice(at, raw.indexOf('\r\n\r\n', at)), raw.slice(raw.indexOf('\r\n\r\n', at) + 4)];
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: body.startsWith('{') ? JSON.parse(body) : body };
}

/** An upload of 9.9 MB that has its share (the server invited its body) and sent `sent` bytes of it. */
async function holding(sent: number) {
  const c = open(uploadHead(await newDraft(), `Content-Length: ${FILE_BYTES}\r\nExpect: 100-continue\r\n`));
  await c.until(/^HTTP\/1\.1 100 Continue\r\n\r\n/, 'the invitation to send the body');
  await c.write(Buffer.alloc(sent, 2));
  return c;
}

const assertBusy = (res: { status: number; headers: Record<string, string> | Headers; body: any }, what: string) => {
  const header = (name: string) => (res.headers instanceof Headers ? res.headers.get(name) : res.headers[name]);
  assert.is(res.status, 429, `${what}: ${JSON.stringify(res.body)}`);
  assert.is(res.body.error.code, 'uploads_busy', what);
  assert.match(res.body.error.message, /upload_memory_mb/, what);
  assert.match(String(header('retry-after')), /^[1-9]\d*$/, `${what}: retry-after`);
};

test('while one 9.9 MB upload holds the budget: other uploads and large sends are 429 uploads_busy unread, small ones go through', async () => {
  await budgetIsFree();
  const held = await holding(1_000_000);

  // Asked first with Expect: 100-continue, the refusal comes before the body is invited, and ends the connection.
  const asking = open(uploadHead(await newDraft(), `Content-Length: ${FILE_BYTES}\r\nExpect: 100-continue\r\n`));
  const refused = await asking.answer();
  assert.not.match(refused, /100 Continue/, 'the body was never invited');
  assertBusy(lastResponse(refused), 'an upload that asks first');
  assert.match(lastResponse(refused).headers.connection, /close/);
  // A client that sends its whole body at once still gets the answer.
  assertBusy(await upload(await newDraft(), Buffer.alloc(FILE_BYTES, 3)), 'a 9.9 MB upload sent whole');
  // Chunked: no length to judge up front; refused once what it sent outgrows what the budget has left.
  const chunked = open(uploadHead(await newDraft(), 'Transfer-Encoding: chunked\r\n'));
  for (let i = 0; i < 8; i++) await chunked.write(`100000\r\n${'c'.repeat(0x100000)}\r\n`);
  assertBusy(lastResponse(await chunked.answer()), 'a chunked upload past what is left');
  // A send whose JSON body (7.3 MB) is over what is left, declared or chunked.
  assertBusy(await send(sendBody(5_500_000)), 'a send with a 5.5 MB attachment');
  const chunkedSend = open(sendHead('Transfer-Encoding: chunked\r\n'));
  const small = sendBody(1000);
  await chunkedSend.write(`${small.length.toString(16)}\r\n${small}\r\n0\r\n\r\n`);
  assertBusy(lastResponse(await chunkedSend.answer()), 'a chunked send (it may grow to its limit unseen)');

  // What the budget has left still serves: a 1 MB file, a send with a 100 KB attachment, and small requests.
  assert.is((await upload(await newDraft(), Buffer.alloc(1_000_000, 4))).status, 201, 'a 1 MB upload fits beside it');
  const sent = await send(sendBody(100_000));
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  assert.is((await request(`${s.t.api}/drafts?limit=1`, { key: s.key })).status, 200);

  // The holder goes away halfway: its share comes back.
  held.socket.destroy();
  await budgetIsFree();
  const chunkedAlone = open(sendHead('Transfer-Encoding: chunked\r\n'));
  await chunkedAlone.write(`${small.length.toString(16)}\r\n${small}\r\n0\r\n\r\n`);
  assert.is(lastResponse(await chunkedAlone.answer()).status, 200, 'a chunked send with the budget free');
});

test('a body larger than the whole budget is 413, never a 429 that no wait could cure', async () => {
  const c = open(sendHead(`Content-Length: ${17 * 1024 * 1024}\r\n`));
  const res = lastResponse(await c.answer());
  assert.equal([res.status, res.body.error.code], [413, 'payload_too_large']);
});

test('every way a request can end gives its share back', async () => {
  await budgetIsFree();
  for (let i = 0; i < 3; i++) {
    const c = await holding(4_000_000);
    c.socket.destroy();
    await budgetIsFree();
  }
  // Ends short of its Content-Length: 400.
  const short = await holding(3_000_000);
  short.socket.end();
  assert.equal(lastResponse(await short.answer()).status, 400);
  await budgetIsFree();
  // Stops sending: 408 after upload_timeout (shortened here as a reload would; a holder above must outlast it).
  s.t.app.config.uploadTimeout = 1_000;
  const stalled = await holding(3_000_000);
  assert.equal(lastResponse(await stalled.answer()).body.error.code, 'request_timeout');
  s.t.app.config.uploadTimeout = 60_000;
  await budgetIsFree();
  // Chunked past the draft's 10 MB: 413 (its share had grown to 10 MB).
  const over = open(uploadHead(await newDraft(), 'Transfer-Encoding: chunked\r\n'));
  for (let i = 0; i < 11 && !over.socket.destroyed; i++) await over.write(`F4240\r\n${'o'.repeat(1_000_000)}\r\n`);
  assert.equal(lastResponse(await over.answer()).body.error.code, 'payload_too_large');
  await budgetIsFree();
  // A send read whole, then refused: a 400 for its sender, and a 413 for its 10.5 MB of attachments.
  const invalid = await send(sendBody(5_000_000, 'not an address'));
  assert.is(invalid.status, 400);
  await budgetIsFree();
  const tooMany = await send(sendBody(10_500_000));
  assert.equal([tooMany.status, tooMany.body.error.code], [413, 'payload_too_large']);
  await budgetIsFree();
  // A send read whole and accepted.
  assert.is((await send(sendBody(5_000_000))).status, 200);
  await budgetIsFree();
});

test.run();
