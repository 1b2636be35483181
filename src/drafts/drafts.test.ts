// Composer drafts end to end over real HTTP: saving as a composer does, files uploaded as raw bodies and read
// back byte for byte, the caps enforced while reading (and against lying or slow uploads, over a raw socket),
// hostile file names, sending a draft to the test kit's sink, and workspace isolation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect } from 'node:net';
import { createHash } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { request, seedWorkspace } from '../testkit/app.ts';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';
import { value } from '../db/query.ts';

let s: OutboundScene;
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const fileCount = async () => Number(await s.t.app.store.read(value('SELECT count(*) FROM draft_attachments')));

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_UPLOAD_TIMEOUT: '1s', MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(() => s.stop());

async function upload(draftId: string, content: Buffer | string, headers: Record<string, string> = {}, key = s.key) {
  const res = await fetch(`${s.t.api}/drafts/${draftId}/attachments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream', ...headers }, body: content });
  return { status: res.status, body: (await res.json()) as any };
}
const newDraft = async (body: unknown = {}) => (await api('/drafts', { method: 'POST', body })).body.id as string;

/** One HTTP request written by hand on a socket; resolves with what came back before the server closed. */
function rawRequest(head: string, chunks: Array<Buffer | string>, opts: { pauseMs?: number; endEarly?: boolean } = {}): Promise<string> {
  const url = new URL(s.t.api);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let answer = '';
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => {});
    socket.on('connect', async () => {
      socket.write(head);
      for (const c of chunks) {
        if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
        if (!socket.destroyed) socket.write(c);
      }
      if (opts.endEarly) socket.end();
      setTimeout(() => socket.destroy(), 5_000);
    });
  });
}
const head = (draftId: string, headers: string) => `POST /api/v1/drafts/${draftId}/attachments HTTP/1.1\r\nHost: ${new URL(s.t.api).host}\r\nAuthorization: Bearer ${s.key}\r\nContent-Type: application/octet-stream\r\n${headers}\r\n`;

test('drafts: every field optional, each validated like a send; list, show, replace (files stay), delete (files go)', async () => {
  const first = await api('/drafts', { method: 'POST', body: {} });
  assert.equal([first.status, first.body.attachments], [201, []]);
  assert.match(first.body.id, /^dr_[0-9A-Z]{26}$/);
  const draft = await api('/drafts', { method: 'POST', body: { from: 'Me <me@sender.test>', to: ['a@dest.test'], subject: 'Half', text: 'wri' } });
  assert.is(draft.status, 201);
  for (const [body, path] of [
    [{ subject: 'a\r\nBcc: x@evil.test' }, 'subject'],
    [{ to: ['not an address'] }, 'to.0'],
    [{ headers: { 'X-A': 'b\r\nc' } }, 'headers.X-A'],
    [{ surprise: 1 }, 'body'],
    [{ attachments: [] }, 'body'],
  ] as const) {
    const res = await api('/drafts', { method: 'POST', body });
    assert.equal([res.status, res.body.error.errors[0].path], [400, path], JSON.stringify(body));
  }
  const id = draft.body.id;
  assert.ok((await upload(id, 'file one')).status === 201);
  const shown = (await api(`/drafts/${id}`)).body;
  assert.equal([shown.from, shown.to, shown.subject, shown.text, shown.attachments.length], ['Me <me@sender.test>', ['a@dest.test'], 'Half', 'wri', 1]);
  const replaced = await api(`/drafts/${id}`, { method: 'PUT', body: { to: 'b@dest.test', subject: 'Whole', html: '<p>written</p>' } });
  assert.equal([replaced.status, replaced.body], [200, { id }]);
  const after = (await api(`/drafts/${id}`)).body;
  assert.equal([after.to, after.subject, after.text, after.html, after.from], [['b@dest.test'], 'Whole', undefined, '<p>written</p>', undefined], 'PUT replaces the content');
  assert.is(after.attachments.length, 1, 'and keeps the files');
  assert.is((await api(`/drafts/${id}`, { method: 'PUT', body: { subject: 'x\ny' } })).status, 400);

  const list = (await api('/drafts')).body;
  assert.equal([list.data[0].id, list.hasMore], [id, false], 'the latest change first');
  assert.ok(list.data.some((d: { id: string }) => d.id === first.body.id));
  assert.is((await api('/drafts?limit=1')).body.hasMore, true);

  const fileId = after.attachments[0].id;
  assert.equal((await api(`/drafts/${id}`, { method: 'DELETE' })).body, { ok: true });
  assert.is((await api(`/drafts/${id}`)).status, 404);
  assert.is((await api(`/attachments/${fileId}`)).status, 404, 'its files went with it');
});

test('files round-trip byte for byte with the download headers; the caps hold and a refusal keeps nothing', async () => {
  const id = await newDraft();
  const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const small = await upload(id, every, { 'content-type': 'application/x-thing; charset=binary', 'x-filename': "UTF-8''na%C3%AFve%20%E2%82%AC.bin" });
  assert.equal([small.status, small.body.filename, small.body.sizeBytes, small.body.available], [201, 'naïve €.bin', 256, true]);
  const got = await fetch(`${s.t.api}/attachments/${small.body.id}`, { headers: { authorization: `Bearer ${s.key}` } });
  assert.ok(Buffer.from(await got.arrayBuffer()).equals(every), 'all 256 byte values');
  assert.is(got.headers.get('content-type'), 'application/x-thing; charset=binary');
  assert.match(got.headers.get('content-disposition')!, /^attachment; filename="[^"]*"; filename\*=UTF-8''na%C3%AFve%20%E2%82%AC\.bin$/);
  assert.is(got.headers.get('x-content-type-options'), 'nosniff');
  assert.is(got.headers.get('content-length'), '256');

  const big = Buffer.alloc(9_900_000);
  for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
  const large = await upload(id, big);
  assert.is(large.status, 201);
  const back = Buffer.from(await (await fetch(`${s.t.api}/attachments/${large.body.id}`, { headers: { authorization: `Bearer ${s.key}` } })).arrayBuffer());
  assert.is(createHash('sha256').update(back).digest('hex'), createHash('sha256').update(big).digest('hex'), 'a 9.9 MB file, byte for byte');
  assert.is(large.body.sha256, createHash('sha256').update(big).digest('hex'));

  // 256 + 9,900,000 stored: 100,000 bytes left of 10 MB.
  const before = await fileCount();
  const over = await upload(id, Buffer.alloc(100_000 - 256 + 1));
  assert.equal([over.status, over.body.error.code], [413, 'payload_too_large']);
  const eleven = await upload(await newDraft(), Buffer.alloc(11 * 1024 * 1024));
  assert.equal([eleven.status, eleven.body.error.code], [413, 'payload_too_large'], 'a single 11 MiB file');
  // Chunked, so no Content-Length to refuse up front: cut off while reading.
  const chunked = await rawRequest(head(await newDraft(), 'Transfer-Encoding: chunked\r\n'), Array.from({ length: 12 }, () => `100000\r\n${'x'.repeat(0x100000)}\r\n`));
  assert.match(chunked, /^HTTP\/1\.1 413 /);
  assert.match(chunked, /connection: close/i);
  assert.is(await fileCount(), before, 'nothing kept');

  const tenFiles = await newDraft();
  for (let i = 0; i < 10; i++) assert.is((await upload(tenFiles, `f${i}`)).status, 201);
  const eleventh = await upload(tenFiles, 'one too many');
  assert.equal([eleventh.status, eleventh.body.error.code], [400, 'limit_exceeded']);
  assert.is((await api(`/drafts/${tenFiles}`)).body.attachments.length, 10);
});

test('an upload that lies about its length or arrives too slowly is refused and leaves nothing', async () => {
  const id = await newDraft();
  const before = await fileCount();
  const short = await rawRequest(head(id, 'Content-Length: 100\r\n'), ['only forty bytes of the hundred promised'], { endEarly: true });
  assert.not.match(short, /^HTTP\/1\.1 201/);
  const slow = await rawRequest(head(id, 'Content-Length: 100\r\n'), ['a'.repeat(10), 'b'.repeat(10)], { pauseMs: 1_500 });
  assert.match(slow, /^HTTP\/1\.1 408 /, 'cut off by upload_timeout');
  assert.is(await fileCount(), before, 'nothing kept');
  // Longer than its Content-Length: the extra bytes are no request; the connection is dropped and the upload,
  // never acknowledged, is not kept.
  const long = await rawRequest(head(id, 'Content-Length: 10\r\n'), ['0123456789GARBAGE NOT A REQUEST\r\n\r\n']);
  assert.match(long, /^HTTP\/1\.1 400 /);
  assert.not.match(long, /HTTP\/1\.1 2\d\d/);
  await new Promise((r) => setTimeout(r, 200));
  assert.is(await fileCount(), before, 'nothing kept');
  assert.equal((await api(`/drafts/${id}`)).body.attachments, []);
});

test('hostile file names are made safe', async () => {
  const id = await newDraft();
  const cases: Array<[string, string | RegExp]> = [
    ['../../etc/passwd', 'passwd'],
    ['C:\\Windows\\x.exe', 'x.exe'],
    ['a%00b.txt', 'ab.txt'],
    ['evil%0D%0ABcc%3A%20x.txt', 'evilBcc: x.txt'],
    ['%E2%80%AEgpj.exe', 'gpj.exe'],
    ['CON.txt', '_CON.txt'],
    ['..', 'attachment'],
    ['x'.repeat(1000) + '.pdf', /^x{251}\.pdf$/],
  ];
  for (const [header, expected] of cases) {
    const res = await upload(id, 'x', { 'x-filename': header });
    assert.is(res.status, 201, header);
    if (typeof expected === 'string') assert.is(res.body.filename, expected, header);
    else assert.match(res.body.filename, expected, header);
  }
  assert.is((await upload(id, 'x')).body.filename, 'attachment', 'no header: attachment');
  const bad = await upload(id, 'x', { 'content-type': 'multipart/mixed; boundary=x' });
  assert.equal([bad.status, bad.body.error.errors[0].path], [400, 'Content-Type']);
});

test('sending a draft: validated like POST /emails, arrives with its files and a valid signature, and the draft is gone', async () => {
  const id = await newDraft({ from: 'Me <me@sender.test>', to: ['reader@dest.test'], text: 'see attached' });
  const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.from(Array.from({ length: 256 }, (_, i) => i))]);
  await upload(id, pdf, { 'content-type': 'application/pdf', 'x-filename': 'report.pdf' });
  await upload(id, 'a,b\n1,2\n', { 'content-type': 'text/csv', 'x-filename': 'data.csv' });
  const incomplete = await api(`/drafts/${id}/send`, { method: 'POST', body: {} });
  assert.equal([incomplete.status, incomplete.body.error.errors[0].path], [400, 'subject'], 'no subject yet');
  await api(`/drafts/${id}`, { method: 'PUT', body: { from: 'Me <me@sender.test>', to: ['reader@dest.test'], subject: 'Report', text: 'see attached' } });

  const sent = await api(`/drafts/${id}/send`, { method: 'POST', body: {}, headers: { 'idempotency-key': 'draft-send-1' } });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  assert.match(sent.body.id, /^em_/);
  const replay = await api(`/drafts/${id}/send`, { method: 'POST', body: {}, headers: { 'idempotency-key': 'draft-send-1' } });
  assert.equal([replay.status, replay.body.id, replay.headers.get('idempotent-replayed')], [200, sent.body.id, 'true']);
  assert.is((await api(`/drafts/${id}`)).status, 404, 'the draft is gone');
  assert.is((await api(`/drafts/${id}/send`, { method: 'POST', body: {} })).status, 404);

  const m = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('reader@dest.test')));
  assert.is((await s.dkim(m.raw)).status, 'pass');
  const parsed = await simpleParser(m.raw);
  assert.is(parsed.subject, 'Report');
  const files = Object.fromEntries(parsed.attachments.map((a) => [a.filename, a]));
  assert.ok(files['report.pdf'].content.equals(pdf), 'the PDF intact');
  assert.is(files['report.pdf'].contentType, 'application/pdf');
  assert.is(files['data.csv'].content.toString(), 'a,b\n1,2\n');
  const email = (await api(`/emails/${sent.body.id}`)).body;
  assert.equal(email.attachments.map((a: { filename: string }) => a.filename).sort(), ['data.csv', 'report.pdf']);
  const emailFile = email.attachments[0].id;
  const refused = await api(`/attachments/${emailFile}`, { method: 'DELETE' });
  assert.equal([refused.status, refused.body.error.code], [409, 'attachment_of_email'], 'a sent email keeps its files');
});

test('workspace isolation: another workspace cannot see, change, fill, send or read this one\'s drafts and files', async () => {
  const other = await seedWorkspace(s.t, { workspace: 'other', email: 'owner@other.test' });
  const id = await newDraft({ subject: 'mine' });
  const file = (await upload(id, 'secret')).body.id;
  const as = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: other.key, ...opts });
  assert.is((await as(`/drafts/${id}`)).status, 404);
  assert.is((await as('/drafts')).body.count, 0);
  assert.is((await as(`/drafts/${id}`, { method: 'PUT', body: { subject: 'theirs' } })).status, 404);
  assert.is((await as(`/drafts/${id}/send`, { method: 'POST', body: {} })).status, 404);
  assert.is((await upload(id, 'intruder', {}, other.key)).status, 404);
  assert.is((await as(`/attachments/${file}`)).status, 404);
  assert.is((await as(`/attachments/${file}`, { method: 'DELETE' })).status, 404);
  assert.is((await as(`/drafts/${id}`, { method: 'DELETE' })).status, 404);
  assert.equal([(await api(`/drafts/${id}`)).body.subject, (await api(`/drafts/${id}`)).body.attachments.length], ['mine', 1]);
  assert.equal((await api(`/attachments/${file}`, { method: 'DELETE' })).body, { ok: true });
  assert.is((await api(`/attachments/${file}`)).status, 404);
});

test.run();
