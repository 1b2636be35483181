// The queue across real processes: two `serve` processes on one data directory never deliver a recipient
// twice, and `kill -9` with 200 messages queued loses none: after a restart every one is delivered, exactly
// the bytes that were signed and stored.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:net';
import { rmSync } from 'node:fs';
import type { DnsServer } from '../testkit/dns-server.ts';
import { startSmtpSink } from '../testkit/smtp-sink.ts';
import { request, runCli, startAppProcess, tempDir, testEnv, testStoreEnv } from '../testkit/app.ts';
import { all } from '../db/query.ts';
import { readBox } from '../testkit/postgres.ts';
import { eventually, startDestinationDns } from '../testkit/outbound.ts';
import { unpackMessage, type StoredBodies } from '../mail/packing.ts';

let dns: DnsServer;
test.before(async () => {
  dns = await startDestinationDns();
});
test.after(() => dns.close());

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.2', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

async function setUp(env: Record<string, string>, url: string, domain: string) {
  const key = (await runCli(['key', 'create', '--name', 'test'], env)).stdout.trim();
  const d = (await request(`${url}/api/v1/domains`, { key, body: { name: domain } })).body;
  dns.publish(d.records);
  const v = await request(`${url}/api/v1/domains/${d.id}/verify`, { method: 'POST', key });
  assert.is(v.body.status, 'verified');
  return key;
}

const send = (url: string, key: string, i: number, domain: string) =>
  request(`${url}/api/v1/emails`, { key, body: { from: `app@${domain}`, to: [`user${i}@dest.test`], subject: `message ${i}`, text: `body ${i}` } });

test('two serve processes on one data directory deliver every recipient exactly once', async () => {
  const sink = await startSmtpSink({ host: '127.0.0.2' });
  const dir = tempDir();
  const store = await testStoreEnv();
  const env = testEnv(dir, { ...store.env, MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_MTA_PORT: String(sink.port), MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true', MAILWRIGHT_RATE_LIMIT: '0' });
  const a = await startAppProcess(env);
  const b = await startAppProcess(env);
  try {
    const key = await setUp(env, a.url, 'two.test');
    const accepted = await Promise.all(Array.from({ length: 200 }, (_, i) => send(i % 2 ? a.url : b.url, key, i, 'two.test')));
    assert.ok(accepted.every((r) => r.status === 200));
    await eventually(() => sink.messages.length >= 200, 60_000, '200 deliveries');
    await new Promise((r) => setTimeout(r, 1500));
    const recipients = sink.messages.flatMap((m) => m.rcptTo);
    assert.is(recipients.length, 200, 'no recipient was delivered twice');
    assert.is(new Set(recipients).size, 200);
  } finally {
    await a.stop('SIGKILL');
    await b.stop('SIGKILL');
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
    await store.drop();
  }
});

test('kill -9 with 200 messages queued, restart: all 200 delivered, byte for byte as signed', async () => {
  const port = await freePort(); // nothing listens yet: every attempt fails and the mail waits in the queue
  const dir = tempDir();
  const store = await testStoreEnv();
  const env = testEnv(dir, {
    ...store.env,
    MAILWRIGHT_DNS_SERVERS: dns.address,
    MAILWRIGHT_MTA_PORT: String(port),
    MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true',
    MAILWRIGHT_RATE_LIMIT: '0',
    MAILWRIGHT_RETRY_SCHEDULE: '1s',
  });
  let app = await startAppProcess(env);
  try {
    const key = await setUp(env, app.url, 'crash.test');
    const accepted = await Promise.all(Array.from({ length: 200 }, (_, i) => send(app.url, key, i, 'crash.test')));
    assert.ok(accepted.every((r) => r.status === 200));
    await app.stop('SIGKILL');

    const live = await startSmtpSink({ host: '127.0.0.2', port });
    app = await startAppProcess(env);
    await eventually(() => live.messages.length >= 200, 60_000, '200 deliveries after the restart');
    await new Promise((r) => setTimeout(r, 1500));
    assert.is(live.messages.length, 200, 'each exactly once');
    const rows = await readBox(env, all<StoredBodies & { message_id: string; raw: Buffer }>("SELECT e.message_id, c.raw, c.text_body AS text, c.html_body AS html FROM emails e JOIN email_contents c ON c.email_id = e.id WHERE e.direction = 'out'"));
    const stored = new Map(rows.map((r) => [r.message_id, unpackMessage(r.raw, r)]));
    for (const r of accepted) {
      const mid = r.body.providerMessageId.slice(1, -1);
      const got = live.messages.find((m) => m.raw.includes(`Message-ID: <${mid}>`));
      assert.ok(got, `${mid} arrived`);
      assert.ok(stored.get(mid)?.equals(got!.raw), `${mid} arrived exactly as signed and stored`);
    }
    await live.close();
  } finally {
    await app.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    await store.drop();
  }
});

test.run();
