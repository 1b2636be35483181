// Mail at rest is packed (mail/packing.ts) and still reads back exactly: the bytes of a received message and of
// a sent one (shared and per-recipient copies) come out of GET /emails/:id/raw as they went in or out, the
// signature verifies at the sink, the bodies read as they were, search still finds and quotes them, and the
// stored columns are smaller than what they hold. Rows written before packing (plain bytes, TEXT bodies) read
// the same, in a database migrated from before packing too (0023 rebuilds email_contents).
import { rmSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { simpleParser } from 'mailparser';
import { compose } from '../mail/compose.ts';
import { request, tempDir, testEnv } from '../testkit/app.ts';
import { loadConfig } from '../config/config.ts';
import { startApp } from '../app.ts';
import { createLog } from '../log.ts';
import { databasePath } from '../db/open.ts';
import { listMigrations, migrate } from '../db/migrate.ts';
import { newId } from '../db/ids.ts';
import { createWorkspace } from '../account/workspaces.ts';
import { createKey } from '../account/keys.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { copyPackedAgainst, isPacked, unpackBodies } from '../mail/packing.ts';
import { personalCopy, signedCopy } from './outgoing.ts';
import { runOn } from '../db/sqlite-query.ts';

let s: InboundScene;
let domainId: string;
test.before(async () => {
  s = await startInboundScene();
  s.senderDomain('sender.example');
  domainId = (await s.verifiedDomain('out.example')).id;
  s.routeTo('dest.example');
});
test.after(() => s.stop());

const WORDS = 'the invoice for march is attached please find our quarterly report and the meeting notes from tuesday with the updated schedule budget review delivery customers warehouse shipping'.split(' ');
/** About `bytes` of text in sentences of 72-character lines, varied enough to compress as prose does. */
function prose(bytes: number, seed: number): string {
  let x = seed;
  const words: string[] = [];
  for (let size = 0; size < bytes; ) {
    x = (x * 1103515245 + 12345) >>> 0;
    const w = WORDS[x % WORDS.length] + (x % 7 === 0 ? `${x % 997}` : '');
    words.push(w);
    size += w.length + 1;
  }
  return words.join(' ').replace(/(.{1,72})(?: |$)/g, '$1\n');
}
const htmlOf = (text: string) => `<html><body>${text.split('\n\n').map((p) => `<p style="margin:0 0 12px 0">${p}</p>`).join('\n')}</body></html>`;

const raw = async (id: string, recipient?: string) => {
  const res = await fetch(`${s.t.api}/emails/${id}/raw${recipient ? `?recipient=${recipient}` : ''}`, { headers: { authorization: `Bearer ${s.key}` } });
  assert.is(res.status, 200, `GET /emails/${id}/raw`);
  return Buffer.from(await res.arrayBuffer());
};
const email = async (id: string) => (await request(`${s.t.api}/emails/${id}`, { key: s.key })).body as { text: string | null; html: string | null };
const contents = (id: string) =>
  s.t.app.db.prepare('SELECT raw, text_body, html_body FROM email_contents WHERE email_id = ?').get(id) as { raw: Buffer | null; text_body: string | Buffer | null; html_body: string | Buffer | null };
const rowid = (id: string) => s.t.app.db.prepare('SELECT rowid FROM email_contents WHERE email_id = ?').pluck().get(id) as number;
/** Where rows waiting to be packed begin (contents-rowids.ts). */
const WAITING = 2 ** 52;
const search = async (query: string) => (await request(`${s.t.api}/emails?query=${encodeURIComponent(query)}`, { key: s.key })).body.data as Array<{ id: string; snippet: string }>;

let receivedId: string;
let received: { sent: Buffer; stored: Buffer; text: string; html: string };

test('a received 10 KB message: GET /raw gives back the bytes as received after our trace fields; stored packed in far fewer bytes', async () => {
  const text = `${prose(5000, 1)}\nzanzibarquartz appears once.\n`;
  const html = htmlOf(text);
  const sent = await compose({
    messageId: 'packed-1@sender.example', date: Date.UTC(2026, 10, 21), from: { name: 'Alice', address: 'alice@sender.example' }, to: [{ address: s.inbox.address }],
    cc: [], replyTo: [], subject: 'Quarterly report', text, html, headers: {}, attachments: [],
  });
  assert.ok(sent.length > 10_000, `${sent.length} bytes`);
  assert.is((await s.deliver(sent, {})).code, 250);
  const [row] = await s.stored('e.message_id = ?', 'packed-1@sender.example');
  receivedId = row.id;
  const bytes = await raw(row.id);
  assert.ok(bytes.subarray(bytes.length - sent.length).equals(sent), 'bytes in == bytes out');
  assert.match(bytes.toString('latin1'), /^Received: from client\.sender\.example /);
  assert.ok(row.raw.equals(bytes), 'what the test kit unpacks is what the API serves');
  const parsed = await simpleParser(sent);
  const body = await email(row.id);
  assert.is(body.text, parsed.text);
  assert.is(body.html, parsed.html);
  received = { sent, stored: bytes, text: body.text!, html: body.html! };
  // At rest: the bytes cost little beside the bodies, which are packed too.
  const c = contents(row.id);
  assert.ok(isPacked(c.raw!) && Buffer.isBuffer(c.text_body) && Buffer.isBuffer(c.html_body), 'all three packed');
  const storedBytes = c.raw!.length + (c.text_body as Buffer).length + (c.html_body as Buffer).length;
  assert.ok(storedBytes < bytes.length / 2, `${storedBytes} bytes stored for a ${bytes.length}-byte message`);
  assert.ok(c.raw!.length < bytes.length / 5, `the message beside its bodies: ${c.raw!.length} bytes`);
  assert.is((s.t.app.db.prepare('SELECT size FROM emails WHERE id = ?').pluck().get(row.id) as number), bytes.length, 'size is the unpacked size');
  // Search finds it and quotes the packed text.
  const [hit] = await search('zanzibarquartz');
  assert.is(hit?.id, row.id);
  assert.match(hit.snippet, 'zanzibarquartz');
});

let sentId: string;
let sentCopy: Buffer;

test('a send: the sink gets a verifying signature, GET /raw is exactly those bytes, the copy and the bodies are stored packed', async () => {
  const text = prose(4000, 2);
  const html = htmlOf(text);
  const res = await request(`${s.t.api}/emails`, { body: { from: 'news@out.example', to: ['ann@dest.example'], subject: 'Packed send', text, html }, key: s.key });
  assert.is(res.status, 200, JSON.stringify(res.body));
  sentId = res.body.id;
  const delivered = await eventually(() => s.sink.messages.find((m) => m.raw.toString('latin1').includes('\r\nSubject: Packed send\r\n')), 10_000, 'the send delivered');
  assert.is((await s.dkim(delivered.raw)).status, 'pass');
  const bytes = await eventually(async () => (contents(sentId).raw ? raw(sentId) : null), 5000, 'the copy stored');
  assert.ok(bytes.equals(delivered.raw), 'GET /raw is what the sink got');
  sentCopy = bytes;
  const c = contents(sentId);
  assert.ok(isPacked(c.raw!) && Buffer.isBuffer(c.text_body) && Buffer.isBuffer(c.html_body), 'the copy and the bodies packed');
  assert.ok(c.raw!.length < bytes.length / 5, `the signed copy beside its bodies: ${c.raw!.length} bytes for ${bytes.length}`);
  assert.equal(await email(sentId).then((e) => ({ text: e.text, html: e.html })), { text, html });
  assert.ok((await signedCopy(s.t.app.store, sentId))!.equals(bytes), 'what a retry would send');
  // Packed, the row joined the packed ones (contents-rowids.ts): after the received one, below the waiting rows.
  assert.ok(rowid(sentId) > rowid(receivedId) && rowid(sentId) < WAITING, `rowid ${rowid(sentId)}`);
});

test('a send not yet signed (scheduled) keeps its bodies as text apart from the packed rows, and reads back whole', async () => {
  const text = `${prose(3000, 4)}\nZoë’s note.\n`;
  const res = await request(`${s.t.api}/emails`, {
    body: { from: 'news@out.example', to: ['eve@dest.example'], subject: 'Later', text, html: htmlOf(text), scheduled_at: new Date(Date.now() + 3_600_000).toISOString() },
    key: s.key,
  });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const c = contents(res.body.id);
  assert.ok(typeof c.text_body === 'string' && typeof c.html_body === 'string' && c.raw === null, 'stored as text, not signed');
  assert.ok(rowid(res.body.id) >= WAITING, `rowid ${rowid(res.body.id)}`);
  assert.equal(await email(res.body.id).then((e) => ({ text: e.text, html: e.html })), { text, html: htmlOf(text) });
  assert.is((await request(`${s.t.api}/emails/${res.body.id}/cancel`, { method: 'POST', key: s.key })).status, 200);
});

test('open tracking: each recipient gets its own copy, the first packed against the bodies, the others against it, and GET /raw?recipient= gives each back exactly', async () => {
  assert.is((await request(`${s.t.api}/domains/${domainId}`, { method: 'PATCH', body: { open_tracking: true }, key: s.key })).status, 200);
  try {
    const text = prose(3000, 3);
    const to = ['bob@dest.example', 'cy@dest.example', 'di@dest.example'];
    const res = await request(`${s.t.api}/emails`, { body: { from: 'news@out.example', to, subject: 'Tracked send', text, html: htmlOf(text) }, key: s.key });
    assert.is(res.status, 200);
    const copies = await eventually(() => {
      const got = s.sink.messages.filter((m) => m.raw.toString('latin1').includes('\r\nSubject: Tracked send\r\n'));
      return got.length === 3 ? got : null;
    }, 10_000, 'three copies delivered');
    const db = s.t.app.db;
    const stored = db
      .prepare('SELECT d.id, d.recipient, dc.raw FROM deliveries d JOIN delivery_contents dc ON dc.delivery_id = d.id WHERE d.email_id = ? ORDER BY d.id')
      .all(res.body.id) as Array<{ id: number; recipient: string; raw: Buffer }>;
    assert.is(stored.length, 3);
    const bases = stored.filter((c) => isPacked(c.raw));
    assert.is(bases.length, 1, 'one copy packed against the bodies');
    for (const m of copies) {
      const [recipient] = m.rcptTo;
      assert.is((await s.dkim(m.raw)).status, 'pass');
      const bytes = await raw(res.body.id, recipient);
      assert.ok(bytes.equals(m.raw), `${recipient}'s copy`);
      const copy = stored.find((c) => c.recipient === recipient)!;
      if (copy === bases[0]) assert.ok(copy.raw.length < bytes.length / 3, `the base: ${copy.raw.length} bytes stored for ${bytes.length}`);
      else {
        assert.is(copyPackedAgainst(copy.raw), bases[0].id, `${recipient}'s copy is packed against the base`);
        assert.ok(copy.raw.length < bytes.length / 10, `${copy.raw.length} bytes stored for ${bytes.length}`);
      }
      assert.ok((await personalCopy(s.t.app.store, copy.id))!.equals(bytes));
    }
    assert.ok(Buffer.isBuffer(contents(res.body.id).text_body), 'the bodies packed with the first copy');
  } finally {
    await request(`${s.t.api}/domains/${domainId}`, { method: 'PATCH', body: { open_tracking: false }, key: s.key });
  }
});

test('rows written before packing (the bytes as they are, TEXT bodies) read exactly as before', async () => {
  const db = s.t.app.db;
  // As the box wrote them until now: the message itself and the bodies as strings.
  db.prepare('UPDATE email_contents SET raw = ?, text_body = ?, html_body = ? WHERE email_id = ?').run(received.stored, received.text, received.html, receivedId);
  const sentBodies = unpackBodies({ text: contents(sentId).text_body, html: contents(sentId).html_body });
  db.prepare('UPDATE email_contents SET raw = ?, text_body = ?, html_body = ? WHERE email_id = ?').run(sentCopy, sentBodies.text, sentBodies.html, sentId);
  assert.is(db.prepare("SELECT count(*) FROM email_contents WHERE email_id IN (?, ?) AND typeof(text_body) = 'text' AND typeof(html_body) = 'text'").pluck().get(receivedId, sentId), 2);
  const bytes = await raw(receivedId);
  assert.ok(bytes.equals(received.stored) && bytes.subarray(bytes.length - received.sent.length).equals(received.sent), 'received: bytes in == bytes out');
  assert.equal(await email(receivedId).then((e) => ({ text: e.text, html: e.html })), { text: received.text, html: received.html });
  assert.is((await search('zanzibarquartz'))[0]?.id, receivedId);
  assert.match((await search('zanzibarquartz'))[0].snippet, 'zanzibarquartz');
  assert.ok((await raw(sentId)).equals(sentCopy), 'sent: the signed bytes');
  assert.ok((await signedCopy(s.t.app.store, sentId))!.equals(sentCopy), 'what a retry would send');
});

test('a database from before packing: a row in the old layout survives migration 0023 and reads back byte for byte', async () => {
  const dir = tempDir();
  const old = new Database(databasePath(dir));
  migrate(old, Date.now(), listMigrations().filter((m) => m.version < 23));
  const clock = { now: () => Date.now() };
  const ws = runOn(old, createWorkspace(clock, 'old box'));
  const id = newId('em', Date.now());
  old
    .prepare("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, subject, size, created_at) VALUES (?, ?, 'in', 'received', 'old-1@sender.example', ?, 'alice@sender.example', 'Old', ?, ?)")
    .run(id, ws.id, id, received.stored.length, Date.now());
  old.prepare('INSERT INTO email_contents (email_id, text_body, html_body, raw) VALUES (?, ?, ?, ?)').run(id, received.text, received.html, received.stored);
  assert.match(old.prepare("SELECT sql FROM sqlite_schema WHERE name = 'email_contents'").pluck().get() as string, /WITHOUT ROWID/);
  old.close();
  const running = await startApp(loadConfig(testEnv(dir)), { log: createLog({ level: 'error', write: () => {} }) });
  try {
    // Made on the migrated database: a key row has columns the old schema lacks.
    const { key } = runOn(running.app.db!, createKey(clock, ws.id, 'old key'));
    assert.not.match(running.app.db!.prepare("SELECT sql FROM sqlite_schema WHERE name = 'email_contents'").pluck().get() as string, /WITHOUT ROWID/, 'rebuilt as a rowid table');
    const res = await fetch(`http://127.0.0.1:${running.http.port}/api/v1/emails/${id}/raw`, { headers: { authorization: `Bearer ${key}` } });
    assert.is(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(received.stored), 'bytes in == bytes out');
    const body = (await request(`http://127.0.0.1:${running.http.port}/api/v1/emails/${id}`, { key })).body;
    assert.equal({ text: body.text, html: body.html }, { text: received.text, html: received.html });
    // The cascade still holds: deleting the email deletes its contents.
    assert.is((await request(`http://127.0.0.1:${running.http.port}/api/v1/emails/${id}`, { method: 'DELETE', key })).status, 200);
    assert.is(running.app.db!.prepare('SELECT count(*) FROM email_contents WHERE email_id = ?').pluck().get(id), 0);
  } finally {
    await running.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
