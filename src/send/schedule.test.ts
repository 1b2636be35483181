// Scheduled sending over real HTTP and SMTP: held until its time and then delivered once, rescheduled,
// canceled (its usage given back), on batch items and drafts; a cancel racing the due time either cancels or
// finds it sent, never both; and kill -9 before the time loses nothing and sends once after the restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { startOutboundScene, eventually, BOX, type OutboundScene } from '../testkit/outbound.ts';
import { request, runCli, startAppProcess, tempDir, testEnv, testStoreEnv } from '../testkit/app.ts';
import { startDnsServer } from '../testkit/dns-server.ts';
import { startSmtpSink } from '../testkit/smtp-sink.ts';

let s: OutboundScene;
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const at = (ms: number) => new Date(Date.now() + ms).toISOString();
const body = (to: string, extra: Record<string, unknown> = {}) => ({ from: 'app@sender.test', to: [to], subject: `for ${to}`, text: 'hello', ...extra });
const arrivals = (to: string) => s.sink.messages.filter((m) => m.rcptTo.includes(to)).length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(() => s.stop());

test('scheduled_at: held with status scheduled, listed, then delivered once at its time', async () => {
  // Far enough ahead that a loaded machine still reads it back before its time.
  const res = await s.send(body('later@dest.test', { scheduled_at: at(4_000) }));
  assert.is(res.status, 200, JSON.stringify(res.body));
  let email = (await api(`/emails/${res.body.id}`)).body;
  assert.is(email.status, 'scheduled');
  assert.match(email.scheduledAt, /^\d{4}-\d\d-\d\dT/);
  assert.equal((await s.events(res.body.id)).map((e) => e.type), ['scheduled']);
  assert.ok((await api('/emails?status=scheduled')).body.data.some((e: { id: string }) => e.id === res.body.id));
  await sleep(800);
  assert.is(arrivals('later@dest.test'), 0, 'nothing before its time');
  await eventually(() => arrivals('later@dest.test') === 1, 10_000, 'delivery at the time');
  email = (await api(`/emails/${res.body.id}`)).body;
  assert.ok(['sent', 'delivered'].includes(email.status), email.status);
  assert.equal((await s.events(res.body.id)).map((e) => e.type).slice(0, 2), ['scheduled', 'sent']);
  await sleep(500);
  assert.is(arrivals('later@dest.test'), 1, 'once');
});

test('scheduled_at is validated: an offset is required, 30 days at most, a past time sends now', async () => {
  for (const value of ['2026-11-25T09:30:00', 'tomorrow', at(31 * 24 * 3600_000)]) {
    const res = await s.send(body('x@dest.test', { scheduled_at: value }));
    assert.equal([res.status, res.body.error.errors[0].path], [400, 'scheduled_at'], value);
  }
  const past = await s.send(body('past@dest.test', { scheduled_at: at(-60_000) }));
  assert.is(past.status, 200);
  await eventually(() => arrivals('past@dest.test') === 1);
  assert.is((await api(`/emails/${past.body.id}`)).body.scheduledAt, null);
});

test('reschedule and cancel: a canceled send is never sent and gives its recipients back', async () => {
  const usage = async () => (await api('/account')).body.usage.recipients.used as number;
  const before = await usage();
  const a = (await s.send({ ...body('moved@dest.test', { scheduled_at: at(60 * 60_000) }), cc: ['moved2@dest.test'] })).body.id;
  assert.is(await usage(), before + 2, 'metered at acceptance');
  const moved = await api(`/emails/${a}`, { method: 'PATCH', body: { scheduled_at: at(1_000) } });
  assert.equal([moved.status, moved.body.status], [200, 'scheduled']);
  await eventually(() => arrivals('moved@dest.test') === 1, 10_000, 'delivery at the new time');

  const b = (await s.send(body('canceled@dest.test', { scheduled_at: at(1_500) }))).body.id;
  const canceled = await api(`/emails/${b}/cancel`, { method: 'POST' });
  assert.equal([canceled.status, canceled.body], [200, { id: b, status: 'canceled' }]);
  assert.is(await usage(), before + 2, 'its recipient given back');
  assert.equal((await s.events(b)).map((e) => e.type), ['scheduled', 'canceled']);
  const again = await api(`/emails/${b}/cancel`, { method: 'POST' });
  assert.equal([again.status, again.body.error.code], [409, 'not_scheduled']);
  assert.is((await api(`/emails/${b}`, { method: 'PATCH', body: { scheduled_at: at(5_000) } })).status, 409);
  await sleep(2_500);
  assert.is(arrivals('canceled@dest.test'), 0, 'never sent');
  assert.is((await api(`/emails/${b}`)).body.status, 'canceled');
  assert.is((await api(`/emails/${a}/cancel`, { method: 'POST' })).status, 409, 'once it has started sending');
  assert.is((await api('/emails/em_01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel', { method: 'POST' })).status, 404);
});

test('batch items and drafts take scheduled_at too', async () => {
  const batch = await api('/emails/batch', { method: 'POST', body: { emails: [body('b-now@dest.test'), body('b-later@dest.test', { scheduled_at: at(1_500) })] } });
  assert.is(batch.body.successful, 2);
  assert.is((await api(`/emails/${batch.body.data[1].id}`)).body.status, 'scheduled');
  const draft = (await api('/drafts', { method: 'POST', body: body('draft-later@dest.test') })).body.id;
  const sent = await api(`/drafts/${draft}/send`, { method: 'POST', body: { scheduled_at: at(1_500) } });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  assert.is((await api(`/emails/${sent.body.id}`)).body.status, 'scheduled');
  await eventually(() => arrivals('b-now@dest.test') === 1);
  assert.is(arrivals('b-later@dest.test'), 0);
  await eventually(() => arrivals('b-later@dest.test') === 1 && arrivals('draft-later@dest.test') === 1, 10_000, 'both at their time');
});

test('a cancel racing the due time: each email is sent once or canceled, never both', async () => {
  const ids = await Promise.all(Array.from({ length: 8 }, async (_, i) => ({ i, id: (await s.send(body(`race${i}@dest.test`, { scheduled_at: at(1_000) }))).body.id as string })));
  await sleep(850);
  const outcomes = await Promise.all(ids.map(async ({ i, id }) => {
    await sleep(i * 40);
    return { i, id, status: (await api(`/emails/${id}/cancel`, { method: 'POST' })).status };
  }));
  await sleep(2_500);
  for (const o of outcomes) {
    const status = (await api(`/emails/${o.id}`)).body.status;
    if (o.status === 200) assert.equal([status, arrivals(`race${o.i}@dest.test`)], ['canceled', 0], `race${o.i} canceled`);
    else {
      assert.is(o.status, 409);
      // Claimed before the cancel: it arrives, on a loaded machine perhaps seconds later, and only once.
      await eventually(() => arrivals(`race${o.i}@dest.test`) >= 1, 15_000, `race${o.i} arrives`);
      assert.is(arrivals(`race${o.i}@dest.test`), 1, `race${o.i} sent once`);
    }
  }
});

test('kill -9 before the time: after a restart it is delivered once, at its time', async () => {
  const dns = await startDnsServer();
  const sink = await startSmtpSink({ host: '127.0.0.2' });
  dns.add(BOX, 'A', '127.0.0.1');
  dns.set('dest.test', 'MX', [{ preference: 10, exchange: 'mx.dest.test' }]);
  dns.set('mx.dest.test', 'A', ['127.0.0.2']);
  const dir = tempDir();
  const store = await testStoreEnv();
  const env = testEnv(dir, { ...store.env, MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_MTA_PORT: String(sink.port), MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true', MAILWRIGHT_RATE_LIMIT: '0' });
  let app = await startAppProcess(env);
  try {
    const key = (await runCli(['key', 'create', '--name', 'test'], env)).stdout.trim();
    const d = (await request(`${app.url}/api/v1/domains`, { key, body: { name: 'kill.test' } })).body;
    dns.publish(d.records);
    await request(`${app.url}/api/v1/domains/${d.id}/verify`, { method: 'POST', key });
    const due = Date.now() + 4_000;
    const res = await request(`${app.url}/api/v1/emails`, { key, body: { from: 'app@kill.test', to: ['survivor@dest.test'], subject: 's', text: 't', scheduled_at: new Date(due).toISOString() } });
    assert.is(res.status, 200);
    await app.stop('SIGKILL');
    app = await startAppProcess(env);
    const m = await eventually(() => sink.messages.find((x) => x.rcptTo.includes('survivor@dest.test')), 15_000, 'delivery after the restart');
    assert.ok(m.receivedAt >= due - 50, 'not before its time');
    await new Promise((r) => setTimeout(r, 1_000));
    assert.is(sink.messages.filter((x) => x.rcptTo.includes('survivor@dest.test')).length, 1, 'once');
  } finally {
    await app.stop('SIGKILL');
    await sink.close();
    await dns.close();
    rmSync(dir, { recursive: true, force: true });
    await store.drop();
  }
});

test.run();
