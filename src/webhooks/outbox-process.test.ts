// The outbox across a crash: with its receiver down, the app (its own process) holds pending deliveries; it is
// killed with SIGKILL and started again, the receiver comes up, and every delivery arrives, each id at least once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { request, runCli, startAppProcess, tempDir, testEnv, testStoreEnv } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';

test('kill -9 with pending deliveries, restart: each one is delivered', async () => {
  // A port that nothing listens on yet: every attempt fails with ECONNREFUSED and waits for its retry.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));

  const dir = tempDir();
  const store = await testStoreEnv();
  const env = testEnv(dir, { ...store.env, MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_RATE_LIMIT: '0' });
  let app = await startAppProcess(env);
  const ids = new Set<string>();
  const receiver = createServer((req, res) => {
    ids.add(String(req.headers['webhook-id']));
    req.resume().on('end', () => res.writeHead(204).end());
  });
  try {
    const key = (await runCli(['key', 'create', '--name', 'test'], env)).stdout.trim();
    const w = (await request(`${app.url}/api/v1/webhooks`, { key, body: { url: `http://127.0.0.1:${port}/hook`, events: ['*'] } })).body;
    const sent = await Promise.all(Array.from({ length: 5 }, async () => (await request(`${app.url}/api/v1/webhooks/${w.id}/test`, { key, method: 'POST' })).body.id as string));
    const attempted = async () => (await request(`${app.url}/api/v1/webhooks/${w.id}/deliveries?status=pending`, { key })).body.data.filter((d: { attempts: number }) => d.attempts >= 1).length;
    await eventually(async () => (await attempted()) === 5, 10_000, 'a failed first attempt each');
    await app.stop('SIGKILL');
    await new Promise<void>((r) => receiver.listen(port, '127.0.0.1', r));
    app = await startAppProcess(env);
    await eventually(() => sent.every((id) => ids.has(id)), 20_000, 'every delivery after the restart');
    // The receiver has its request before the box records the answer: the count is read once that is committed.
    const delivered = async () => (await request(`${app.url}/api/v1/webhooks/${w.id}/deliveries?status=delivered`, { key })).body.count as number;
    await eventually(async () => (await delivered()) >= 5, 10_000, 'every delivery recorded');
    assert.is(await delivered(), 5);
  } finally {
    await app.stop('SIGKILL');
    receiver.close();
    rmSync(dir, { recursive: true, force: true });
    await store.drop();
  }
});

test.run();
