// A full disk under the webhook outbox (catalogue DUR-13): with the data directory on a small tmpfs filled to
// the last byte while deliveries are due, claiming them fails with SQLITE_FULL. The log then has one warning
// naming the cause, without a stack trace, however many tries the dispatcher makes, and nothing is sent; once
// space is freed, one line says deliveries resume and every delivery arrives. Needs mount(8) (root): skipped
// with a message where it is not allowed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, seedWorkspace, sqliteOnly, startTestApp, type TestApp } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';
import { mountSmallDisk } from '../testkit/full-disk.ts';

const disk = mountSmallDisk(12, 'mailwright-small-');
if ('skipped' in disk) console.log(`webhooks/disk-full.test.ts skipped: ${disk.skipped}`);

// Every wait here is bounded: a stuck step fails the file, and the tmpfs is unmounted anyway.
setTimeout(() => {
  console.error('webhooks/disk-full.test.ts: timed out after 120 s');
  if (!('skipped' in disk)) disk.unmount();
  process.exit(1);
}, 120_000).unref();

if (!('skipped' in disk)) {
  let t: TestApp;
  let receiver: Server;
  let answer = 503;
  let offset = 0;
  const hits: string[] = [];
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const lines = (text: string) => t.logs.filter((l) => l.includes(text));

  test.before(async () => {
    receiver = createServer((req, res) => {
      hits.push(String(req.headers['webhook-id']));
      req.resume().on('end', () => res.writeHead(answer).end(answer === 200 ? 'ok' : 'not now'));
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    // The margin (min_free_space_mb) is off: this test is of writes failing on a disk that filled up.
    t = await startTestApp({
      env: { MAILWRIGHT_DATA_DIR: disk.dir, MAILWRIGHT_MIN_FREE_SPACE_MB: '0', MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_RATE_LIMIT: '0' },
      clock: { now: () => Date.now() + offset },
    });
  });
  test.after(async () => {
    try {
      receiver.closeAllConnections();
      receiver.close();
      await t?.stop();
    } finally {
      disk.unmount();
    }
  });

  // The data directory's SQLite file on the full disk: a PostgreSQL store keeps nothing there.
  sqliteOnly(test)('claiming on a full disk: one warning with the cause, no stack, nothing sent; one line when it resumes', async () => {
    const { key } = await seedWorkspace(t);
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const w = (await request(`${t.api}/webhooks`, { key, body: { url, events: ['*'] } })).body;
    const ids = await Promise.all([1, 2, 3].map(async () => (await request(`${t.api}/webhooks/${w.id}/test`, { key, method: 'POST' })).body.id as string));
    const deliveries = async (status: string) => (await request(`${t.api}/webhooks/${w.id}/deliveries?status=${status}`, { key })).body;
    // A first attempt each, answered 503: each is due again 5 s later on the box's clock.
    await eventually(async () => (await deliveries('pending')).data.filter((d: { attempts: number }) => d.attempts === 1).length === 3, 10_000, 'a failed first attempt each');

    // The WAL emptied, so the next commit must grow it: with no byte left, SQLite says SQLITE_FULL.
    const [{ busy }] = t.app.db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
    assert.is(busy, 0);
    assert.ok(disk.fill() > 0, 'the tmpfs had room to fill');
    const sent = hits.length;
    offset += 10_000;
    const warned = await eventually(() => lines('webhooks: the disk is full')[0], 10_000, 'the warning');
    // Several seconds of tries (the first at once, then after 0.5, 1, 2 and 4 s).
    await sleep(6_000);
    const full = lines('webhooks: the disk is full');
    assert.is(full.length, 1, `one warning, not one per try:\n${full.join('\n')}`);
    const line = JSON.parse(warned);
    assert.equal([line.level, line.cause, line.reason], ['warn', 'SQLITE_FULL', 'database or disk is full']);
    assert.not.match(warned, /\bat .*\.ts:\d+/, 'no stack trace');
    assert.is(t.logs.filter((l) => l.includes('"msg":"webhooks:') && JSON.parse(l).level === 'error').length, 0, 'nothing logged as an error');
    assert.is(hits.length, sent, 'nothing was sent while no claim could be recorded');

    answer = 200;
    disk.free();
    await eventually(async () => (await deliveries('delivered')).count === 3, 40_000, 'every delivery once there is room');
    assert.ok(ids.every((id) => hits.includes(id)));
    const resumed = lines('webhooks: the disk has room again');
    assert.is(resumed.length, 1, resumed.join('\n'));
    assert.is(JSON.parse(resumed[0]).level, 'info');
    assert.is(lines('webhooks: the disk is full').length, 1, 'still the one warning');
  });
}

test.run();
