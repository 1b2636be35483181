// What streams that never read cost the serving process (RES-16), in a process of its own whose memory is read
// from /proc: 50 of them, over real sockets from five client addresses, and then two 6 MB messages received. Each
// stream is handed the event's message once it is made, cut to MAX_MESSAGE_BYTES (the received text left out,
// links.self to fetch it), so the process's resident memory stays near the baseline measured here after the
// same message was received once without them. Before, each stream queued its own copy of the whole text:
// this test measured 473 MiB more than the baseline then, and 13 MiB since.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, rmSync } from 'node:fs';
import { request, runCli, sessionCookie, startAppProcess, tempDir, testEnv, testStoreEnv, TEST_PASSWORD, type AppProcess } from '../testkit/app.ts';
import { startDnsServer } from '../testkit/dns-server.ts';
import { BOX, eventually } from '../testkit/outbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { openEventStream, openRawStream, type RawStream } from '../testkit/event-stream.ts';
import { MAX_MESSAGE_BYTES } from './stream.ts';
import { STREAM_LIMITS } from './stream-slots.ts';

const MiB = 1024 * 1024;
/** How far above the baseline the process may go: a generous bound, far below the 50 x 6 MB it used to take. */
const ALLOWED_GROWTH = 80 * MiB;

const rss = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/** One message over SMTP to the box's MX listener; the reply to the final dot. */
async function deliver(port: number, to: string, subject: string, text: string) {
  const c = await RawSmtp.open(port);
  try {
    await c.read();
    await c.command('EHLO client.sender.example');
    assert.is((await c.command('MAIL FROM:<alice@sender.example>')).code, 250);
    assert.is((await c.command(`RCPT TO:<${to}>`)).code, 250);
    assert.is((await c.command('DATA')).code, 354);
    c.write(`From: alice@sender.example\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.example>\r\n\r\n${text}\r\n.\r\n`);
    return await c.read(60_000);
  } finally {
    c.close();
  }
}

test('50 streams that never read and two 6 MB messages received: memory stays near the baseline; each message arrives cut to size', async () => {
  const dns = await startDnsServer();
  dns.add(BOX, 'A', '127.0.0.1');
  const dir = tempDir();
  const store = await testStoreEnv();
  const env = testEnv(dir, { ...store.env, MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_RATE_LIMIT: '0', MAILWRIGHT_LOG_LEVEL: 'info' });
  let app: AppProcess | null = null;
  const streams: RawStream[] = [];
  try {
    assert.is((await runCli(['user', 'add', '--email', 'owner@mem.test', '--password-stdin'], env, TEST_PASSWORD)).code, 0);
    const key = (await runCli(['key', 'create', '--name', 'reader'], env)).stdout.trim();
    app = await startAppProcess(env, 90_000);
    const api = `${app.url}/api/v1`;
    // A domain with inbound mail and an inbox, as the inbound scene makes one.
    const d = (await request(`${api}/domains`, { key, body: { name: 'in.example' } })).body;
    dns.publish(d.records);
    assert.is((await request(`${api}/domains/${d.id}/verify`, { method: 'POST', key })).body.status, 'verified');
    await request(`${api}/domains/${d.id}/inbound/setup`, { method: 'POST', key });
    dns.set('in.example', 'MX', [{ preference: 10, exchange: BOX }]);
    assert.is((await request(`${api}/domains/${d.id}/inbound/verify`, { method: 'POST', key })).body.status, 'ready');
    const inbox = (await request(`${api}/inboxes`, { key, body: { domain_id: d.id, local_part: 'hello', name: 'hello' } })).body;
    // Ten more keys: five streams each at most.
    const login = await request(`${api}/auth/login`, { body: { email: 'owner@mem.test', password: TEST_PASSWORD } });
    const cookie = sessionCookie(login.headers)!;
    const keys = await Promise.all(Array.from({ length: 10 }, async (_, i) => (await request(`${api}/keys`, { cookie, body: { name: `k${i}` } })).body.key as string));

    type Received = { type: string; data: { email: { subject: string; text?: string; truncated?: boolean; links?: { self: string } } } };
    const reader = await openEventStream<Received>(`${api}/events/stream?types=email.received`, key);
    assert.is(reader.res.status, 200);
    const text = `${'The quick brown fox jumps over the lazy dog, again and again and again.....\r\n'.repeat(80_000)}`;
    assert.ok(text.length >= 6_000_000);
    const received = (subject: string) => reader.messages().find((m) => m.data.data.email.subject === subject);

    // The baseline: the same message received once already, with no stream but the reader's.
    assert.is((await deliver(app.smtpPort, inbox.address, 'big one', text)).code, 250);
    await eventually(() => received('big one'), 30_000, 'the first message on the stream');
    await new Promise((r) => setTimeout(r, 1_000));
    const baseline = rss(app.child.pid!);

    for (let i = 0; i < 50; i++) {
      const s = await openRawStream({ port: Number(new URL(app.url).port), key: keys[Math.floor(i / STREAM_LIMITS.credential)], localAddress: `127.0.0.${2 + Math.floor(i / STREAM_LIMITS.address)}` });
      streams.push(s);
      assert.is(s.status, 200, `stream ${i}`);
      s.pause();
    }
    const over = await openRawStream({ port: Number(new URL(app.url).port), key: keys[0], localAddress: '127.0.0.9' });
    streams.push(over);
    assert.is(over.status, 429, 'a sixth stream of a key');

    for (const subject of ['big two', 'big three']) {
      assert.is((await deliver(app.smtpPort, inbox.address, subject, text)).code, 250);
      const m = await eventually(() => received(subject), 60_000, `${subject} on the stream`);
      assert.is(m.data.data.email.truncated, true);
      assert.is(m.data.data.email.text, undefined, 'the text left out');
      assert.match(m.data.data.email.links!.self, /\/api\/v1\/emails\/em_/);
      assert.ok(JSON.stringify(m.data).length <= MAX_MESSAGE_BYTES);
    }
    await new Promise((r) => setTimeout(r, 1_000));
    const after = rss(app.child.pid!);
    assert.ok(after - baseline < ALLOWED_GROWTH, `resident memory grew ${((after - baseline) / MiB).toFixed(1)} MiB (from ${(baseline / MiB).toFixed(1)} MiB)`);
    reader.close();
  } finally {
    for (const s of streams) s.close();
    await app?.stop('SIGKILL');
    await dns.close();
    rmSync(dir, { recursive: true, force: true });
    await store.drop();
  }
});

test.run();
