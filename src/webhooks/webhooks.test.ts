// Webhooks end to end: a local receiver checks every signature with two independent implementations (the
// standardwebhooks package and Resend's SDK); payloads of received and sent mail; event and inbox filters;
// the test event, secret rotation, the deliveries list and replays; retries on the schedule driven by the
// injected clock, timeouts, 410 and five days of failure disabling; the live event stream with Last-Event-ID;
// a slow endpoint that never slows mail; private addresses refused; workspace isolation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { Resend } from 'resend';
import { request, seedWorkspace, startTestApp } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { openEventStream } from '../testkit/event-stream.ts';
import { eventually } from '../testkit/outbound.ts';
import { value } from '../db/query.ts';

interface Hit {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let s: InboundScene;
let offset = 0;
const clock = { now: () => Date.now() + offset };
let receiver: Server;
let base = '';
const hits: Hit[] = [];
/** What each path answers: a status, or 'hang' (never answers). */
const behaviour = new Map<string, number | 'hang'>();
let hanging = 0;
let mostHanging = 0;
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const hitsAt = (path: string) => hits.filter((h) => h.path === path);
/** The calls carrying one delivery (its webhook-id), whatever else reaches its endpoint meanwhile. */
const hitsOf = (deliveryId: string) => hits.filter((h) => h.headers['webhook-id'] === deliveryId);
/** The delivery once its n-th attempt is recorded (the receiver sees the call before the outcome is stored). */
const recorded = (webhookId: string, deliveryId: string, n: number) =>
  eventually(async () => (await api(`/webhooks/${webhookId}/deliveries?limit=100`)).body.data.find((d: { id: string; attempts: number }) => d.id === deliveryId && d.attempts === n), 10_000, `attempt ${n} recorded`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function hook(path: string, extra: Record<string, unknown> = {}, key = s.key) {
  const res = await request(`${s.t.api}/webhooks`, { key, body: { url: `${base}${path}`, events: ['*'], ...extra } });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; secret: string };
}

/** Both independent verifiers accept the hit for `secret` (throws otherwise). */
function verify(hit: Hit, secret: string) {
  const headers = { 'webhook-id': String(hit.headers['webhook-id']), 'webhook-timestamp': String(hit.headers['webhook-timestamp']), 'webhook-signature': String(hit.headers['webhook-signature']) };
  new Webhook(secret).verify(hit.body, headers);
  new Resend('re_test').webhooks.verify({ payload: hit.body, headers: { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'] }, webhookSecret: secret });
  return JSON.parse(hit.body) as { type: string; created_at: string; data: any };
}

const inbound = (subject: string, to?: string) =>
  s.deliver(`From: Alice <alice@sender.example>\nTo: ${to ?? s.inbox.address}\nSubject: ${subject}\nMessage-ID: <${subject.replace(/\W/g, '')}@sender.example>\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nHello about ${subject}\n--b\nContent-Type: text/csv\nContent-Disposition: attachment; filename=data.csv\n\na,b\n--b--\n`, { to: [to ?? s.inbox.address] });

test.before(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hits.push({ path: req.url!, headers: req.headers, body });
      const b = behaviour.get(req.url!) ?? 200;
      if (b === 'hang') {
        hanging++;
        mostHanging = Math.max(mostHanging, hanging);
        res.on('close', () => hanging--);
        return;
      }
      res.writeHead(b, { 'content-type': 'text/plain' }).end(b === 200 ? 'thanks' : `answer ${b}`);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  s = await startInboundScene({ env: { MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_WEBHOOK_TIMEOUT: '1s', MAILWRIGHT_RETRY_SCHEDULE: '10m' }, clock });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(async () => {
  receiver.closeAllConnections();
  receiver.close();
  await s.stop();
});

test('register, show, change, delete; the secret is shown once and stored sealed; bad input is refused', async () => {
  const created = await hook('/crud', { events: ['email.delivered', 'email.bounced'], description: 'ops' });
  assert.match(created.id, /^wh_/);
  assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  const shown = (await api(`/webhooks/${created.id}`)).body;
  assert.equal([shown.url, shown.events, shown.enabled, shown.disabledReason, shown.secret], [`${base}/crud`, ['email.delivered', 'email.bounced'], true, null, undefined]);
  const stored = (await s.t.app.store.read(value<Buffer>('SELECT secret FROM webhooks WHERE id = ?', created.id)))!;
  assert.not.ok(stored.toString('latin1').includes(created.secret.slice(6)), 'never in clear');
  const patched = await api(`/webhooks/${created.id}`, { method: 'PATCH', body: { events: ['*'], enabled: false } });
  assert.equal([patched.body.events, patched.body.enabled, patched.body.disabledReason], [['*'], false, 'disabled by the owner']);
  assert.is((await api('/webhooks')).body.data.filter((w: { id: string }) => w.id === created.id).length, 1);
  for (const [body, path] of [
    [{ url: 'ftp://example.com/x', events: ['*'] }, 'url'],
    [{ url: `${base}/x`, events: ['email.nope'] }, 'events.0'],
    [{ url: `${base}/x`, events: [] }, 'events'],
    [{ url: `${base}/x`, events: ['*'], inbox_id: 'inb_nope' }, 'inbox_id'],
    [{ url: 'https://user:pw@example.com/', events: ['*'] }, 'url'],
  ] as const) {
    const res = await api('/webhooks', { method: 'POST', body });
    assert.equal([res.status, res.body.error?.errors?.[0]?.path], [400, path], JSON.stringify(body));
  }
  assert.equal((await api(`/webhooks/${created.id}`, { method: 'DELETE' })).body, { ok: true });
  assert.is((await api(`/webhooks/${created.id}`)).status, 404);
});

test('received mail: a signed email.received with the text, snippet, attachments, verdicts and links', async () => {
  const { id, secret } = await hook('/received', { events: ['email.received'] });
  assert.is((await inbound('Quarterly numbers')).code, 250);
  const hit = await eventually(() => hitsAt('/received')[0], 10_000, 'the callback');
  const body = verify(hit, secret);
  assert.is(body.type, 'email.received');
  const email = body.data.email;
  assert.equal([email.subject, email.inboxId, email.from.address, email.direction], ['Quarterly numbers', s.inbox.id, 'alice@sender.example', 'in']);
  assert.match(email.text, /Hello about Quarterly numbers/);
  assert.match(email.snippet, /Hello about/);
  assert.equal(email.attachments.map((a: { filename: string }) => a.filename), ['data.csv']);
  assert.ok(email.authentication && 'spf' in email.authentication);
  assert.match(email.links.raw, /\/api\/v1\/emails\/em_[0-9A-Z]{26}\/raw$/);
  assert.equal([body.data.event.type, body.data.event.emailId], ['received', email.id]);
  assert.is(hit.headers['webhook-id'], (await api(`/webhooks/${id}/deliveries`)).body.data[0].id, 'webhook-id is the delivery id');
});

test('sent mail and filters: only the subscribed types, only the filtered inbox, in order per email', async () => {
  const delivered = await hook('/delivered-only', { events: ['email.delivered'] });
  const other = await s.createInbox(s.domain.id, 'other');
  await hook('/other-inbox', { events: ['email.received'], inbox_id: other.id });
  const all = await hook('/all');
  const sent = await s.send({ from: 'app@sender.test', to: ['one@dest.test'], subject: 'out', text: 'x' });
  await eventually(() => hitsAt('/delivered-only').length === 1, 10_000, 'email.delivered');
  const body = verify(hitsAt('/delivered-only')[0], delivered.secret);
  assert.equal([body.type, body.data.email.id, body.data.event.recipient], ['email.delivered', sent.body.id, 'one@dest.test']);
  await eventually(() => hitsAt('/all').filter((h) => JSON.parse(h.body).data.email.id === sent.body.id).length === 2);
  assert.equal(hitsAt('/all').filter((h) => JSON.parse(h.body).data.email.id === sent.body.id).map((h) => verify(h, all.secret).type), ['email.sent', 'email.delivered'], 'in order');
  assert.is((await inbound('Not for other')).code, 250);
  await sleep(800);
  assert.is(hitsAt('/other-inbox').length, 0, 'mail to another inbox is filtered out');
  assert.is((await inbound('For other', other.address)).code, 250);
  await eventually(() => hitsAt('/other-inbox').length === 1);
});

test('webhook.test, secret rotation (both sign for a day), the deliveries list, replay of one and of a window', async () => {
  const w = await hook('/rotate', { events: ['email.delivered'] });
  const t1 = await api(`/webhooks/${w.id}/test`, { method: 'POST' });
  assert.is(t1.status, 201);
  const first = await eventually(() => hitsAt('/rotate')[0]);
  assert.is(verify(first, w.secret).type, 'webhook.test');
  const rotated = (await api(`/webhooks/${w.id}/rotate-secret`, { method: 'POST' })).body;
  assert.ok(rotated.secret !== w.secret && rotated.previousSecretExpiresAt);
  await api(`/webhooks/${w.id}/test`, { method: 'POST' });
  const second = await eventually(() => hitsAt('/rotate')[1]);
  assert.is(String(second.headers['webhook-signature']).split(' ').length, 2);
  verify(second, rotated.secret);
  verify(second, w.secret);

  const list = (await api(`/webhooks/${w.id}/deliveries`)).body;
  assert.is(list.count, 2);
  const d = list.data[1];
  assert.equal([d.id, d.status, d.attempts, d.lastStatusCode, d.lastResponse, d.type], [t1.body.id, 'delivered', 1, 200, 'thanks', 'webhook.test']);
  assert.ok(typeof d.durationMs === 'number');
  assert.is((await api(`/webhooks/${w.id}/deliveries?status=failed`)).body.count, 0);
  const again = await api(`/webhooks/${w.id}/deliveries/${d.id}/replay`, { method: 'POST' });
  assert.is(again.status, 200);
  await eventually(() => hitsAt('/rotate').length === 3);
  assert.is(hitsAt('/rotate')[2].headers['webhook-id'], d.id, 'a replay carries the same webhook-id');
  assert.is(hitsAt('/rotate')[2].body, first.body, 'and the same body');
  const windowed = await api(`/webhooks/${w.id}/replay`, { method: 'POST', body: { since: new Date(clock.now() - 60_000).toISOString() } });
  assert.equal(windowed.body, { replayed: 2 });
  await eventually(() => hitsAt('/rotate').length === 5);
});

test('the live stream: a received mail arrives as an event, and a reconnect with Last-Event-ID gets what it missed', async () => {
  type Received = { type: string; data: { email: { subject: string } } };
  const open = async (lastId?: number) => {
    const stream = await openEventStream<Received>(`${s.t.api}/events/stream?types=email.received`, s.key, lastId);
    assert.is(stream.res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    return stream;
  };
  const live = await open();
  await inbound('Streamed one');
  const got = await eventually(() => live.messages().find((m) => m.data.data.email.subject === 'Streamed one'));
  assert.is(got.data.type, 'email.received');
  live.close();
  await inbound('Missed two');
  await inbound('Missed three');
  const back = await open(got.id);
  await eventually(() => back.messages().length >= 2, 5_000, 'the missed events');
  assert.equal(back.messages().map((m) => m.data.data.email.subject), ['Missed two', 'Missed three']);
  assert.ok(back.messages()[0].id > got.id);
  back.close();
  assert.is((await api('/events/stream?types=nope')).status, 400);
});

test('the live stream sees every event of a burst of concurrent sends (each sent in one group commit or another)', async () => {
  const stream = await openEventStream<{ data: { email: { id: string } } }>(`${s.t.api}/events/stream?types=email.sent`, s.key);
  await eventually(() => stream.connected(), 5_000, 'the stream to open');
  const sent = await Promise.all(Array.from({ length: 30 }, (_, i) => s.send({ from: 'app@sender.test', to: [`burst${i}@dest.test`], subject: `burst ${i}`, text: 'x' })));
  assert.ok(sent.every((r) => r.status === 200), JSON.stringify(sent.find((r) => r.status !== 200)?.body));
  const ids = new Set(sent.map((r) => r.body.id as string));
  const seen = () => stream.messages().map((m) => m.data.data.email.id).filter((id) => ids.has(id));
  await eventually(() => seen().length >= ids.size, 10_000, 'every email.sent');
  assert.is(new Set(seen()).size, ids.size, 'each email once');
  stream.close();
});

test('a hanging endpoint never slows mail: sends and receives finish while every callback waits', async () => {
  behaviour.set('/hang', 'hang');
  await hook('/hang');
  // The endpoint holds a callback before the mail below starts, so that mail flows while it hangs. (Counting
  // the calls made during the mail raced the dispatcher's 250 ms poll when the mail was quick.)
  assert.is((await inbound('Busy first')).code, 250);
  await eventually(() => hanging > 0, 10_000, 'a callback held by the endpoint');
  const started = Date.now();
  const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => inbound(`Busy ${i}`)));
  const sends = await Promise.all(Array.from({ length: 10 }, (_, i) => s.send({ from: 'app@sender.test', to: [`busy${i}@dest.test`], subject: 'b', text: 'b' })));
  assert.ok(replies.every((r) => r.code === 250) && sends.every((r) => r.status === 200));
  await eventually(() => Array.from({ length: 10 }, (_, i) => `busy${i}@dest.test`).every((r) => s.sink.messages.some((m) => m.rcptTo.includes(r))), 15_000, 'every send delivered');
  // A budget, not a benchmark: 20 messages in and out with 4 callbacks held at a time must not take minutes.
  assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
  // The events of that mail reach the hanging endpoint too, never more than 4 held at a time.
  await eventually(() => hitsAt('/hang').length >= 8, 15_000, 'the endpoint called for the events of that mail');
  assert.ok(mostHanging <= 4, `at most 4 at a time to one endpoint (saw ${mostHanging})`);
  behaviour.set('/hang', 200);
});

test('private addresses are refused: in the URL at once, and behind a name at delivery', async () => {
  const strict = await startTestApp({ env: { MAILWRIGHT_DNS_SERVERS: s.dns.address, MAILWRIGHT_RATE_LIMIT: '0' } });
  try {
    const { key } = await seedWorkspace(strict);
    for (const url of ['https://127.0.0.1/hook', 'https://10.0.0.8/hook', 'https://[::1]/hook', 'http://example.com/hook', 'https://[2002:a00:8::]/hook', 'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook', 'https://[64:ff9b:1::808:808]/hook']) {
      const res = await request(`${strict.api}/webhooks`, { key, body: { url, events: ['*'] } });
      assert.equal([res.status, res.body.error.errors[0].path], [400, 'url'], url);
    }
    // SEC-02: the refusal names the private IPv4 address a 6to4 address embeds.
    const sixToFour = await request(`${strict.api}/webhooks`, { key, body: { url: 'https://[2002:a00:8::]/hook', events: ['*'] } });
    assert.match(sixToFour.body.error.errors[0].message, /a private address \(10\.0\.0\.8\) embedded in IPv6 as 6to4/);
    s.dns.add('inside.test', 'A', '127.0.0.1');
    const w = (await request(`${strict.api}/webhooks`, { key, body: { url: 'https://inside.test/hook', events: ['*'] } })).body;
    await request(`${strict.api}/webhooks/${w.id}/test`, { key, method: 'POST' });
    const d = await eventually(async () => (await request(`${strict.api}/webhooks/${w.id}/deliveries`, { key })).body.data.find((x: { attempts: number }) => x.attempts > 0));
    assert.match(d.lastError, /refused .*127\.0\.0\.1 \(a loopback address\)/);
    assert.is(d.lastStatusCode, null);
  } finally {
    await strict.stop();
  }
});

test('workspace isolation: another workspace sees none of these webhooks or deliveries, and its events stay its own', async () => {
  const other = await seedWorkspace(s.t, { workspace: 'other', email: 'owner@other.test' });
  const mine = (await api('/webhooks')).body.data[0].id;
  const as = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: other.key, ...opts });
  assert.is((await as('/webhooks')).body.count, 0);
  for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['GET', '/deliveries'], ['POST', '/test'], ['POST', '/rotate-secret'], ['POST', '/replay']]) {
    const body = method === 'PATCH' ? { enabled: true } : path === '/replay' ? { since: '2026-01-01T00:00:00Z' } : undefined;
    assert.is((await as(`/webhooks/${mine}${path}`, { method, ...(body ? { body } : {}) })).status, 404, `${method} ${path}`);
  }
  const theirs = await hook('/theirs', {}, other.key);
  await request(`${s.t.api}/webhooks/${theirs.id}/test`, { key: other.key, method: 'POST' });
  await eventually(() => hitsAt('/theirs').length === 1);
  const before = hits.length;
  await inbound('Mine only');
  await eventually(() => hits.length > before);
  await sleep(500);
  assert.is(hitsAt('/theirs').length, 1, 'this workspace\'s mail never reaches their endpoint');
});

// Last: these move the injected clock forward.
test('retries on the schedule after 500s and timeouts; 410 disables at once; five days of failure disable', async () => {
  behaviour.set('/flaky', 500);
  const flaky = await hook('/flaky', { events: ['email.delivered'] });
  const probe = (await api(`/webhooks/${flaky.id}/test`, { method: 'POST' })).body.id as string;
  await eventually(() => hitsOf(probe).length === 1);
  await recorded(flaky.id, probe, 1);
  await sleep(600);
  assert.is(hitsOf(probe).length, 1, 'the second attempt waits 5 s of the box clock');
  offset += 5_000;
  // A retry keeps its webhook-id: the second call carries the same one.
  await eventually(() => hitsOf(probe).length === 2, 10_000, 'the retry, with the same webhook-id');
  await recorded(flaky.id, probe, 2);
  behaviour.set('/flaky', 'hang');
  offset += 5 * 60_000;
  await eventually(() => hitsOf(probe).length === 3);
  const timedOut = await recorded(flaky.id, probe, 3);
  assert.match(timedOut.lastError, /within 1000 ms/);
  behaviour.set('/flaky', 200);
  offset += 30 * 60_000;
  await eventually(async () => (await api(`/webhooks/${flaky.id}/deliveries?limit=100`)).body.data.find((d: { id: string }) => d.id === probe)?.status === 'delivered', 10_000, 'delivered on the 4th attempt');
  assert.is((await api(`/webhooks/${flaky.id}`)).body.failingSince, null, 'a success ends the failure streak');

  behaviour.set('/gone', 410);
  const gone = await hook('/gone');
  await api(`/webhooks/${gone.id}/test`, { method: 'POST' });
  const g = await eventually(async () => {
    const w = (await api(`/webhooks/${gone.id}`)).body;
    return w.enabled === false && w;
  });
  assert.match(g.disabledReason, /410 Gone/);

  behaviour.set('/down', 503);
  const down = await hook('/down', { events: ['email.delivered'] });
  const downProbe = (await api(`/webhooks/${down.id}/test`, { method: 'POST' })).body.id as string;
  await eventually(() => hitsOf(downProbe).length === 1);
  for (const step of [5_000, 5 * 60_000, 30 * 60_000, 2 * 3600_000, 5 * 3600_000, 10 * 3600_000, 10 * 3600_000]) {
    const n = hitsOf(downProbe).length;
    // The clock moves once the attempt is recorded: moved earlier, the retry would be scheduled from the new time.
    await recorded(down.id, downProbe, n);
    offset += step;
    await eventually(() => hitsOf(downProbe).length === n + 1, 5_000, `attempt ${n + 1}`);
  }
  const failed = await eventually(async () => (await api(`/webhooks/${down.id}/deliveries?limit=100`)).body.data.find((d: { id: string; status: string }) => d.id === downProbe && d.status === 'failed'));
  assert.equal([failed.attempts, failed.nextAttemptAt], [8, null], 'gives up after the 8th attempt');
  assert.is((await api(`/webhooks/${down.id}`)).body.enabled, true, 'not yet five days');
  offset += 4 * 24 * 3600_000;
  await api(`/webhooks/${down.id}/test`, { method: 'POST' });
  const off = await eventually(async () => {
    const w = (await api(`/webhooks/${down.id}`)).body;
    return w.enabled === false && w;
  });
  assert.match(off.disabledReason, /failed for 5 days/);

  // Finished deliveries are kept 30 days; a pending one (its endpoint disabled) stays until it is sent.
  offset += 31 * 24 * 3600_000;
  await eventually(async () => (await api(`/webhooks/${flaky.id}/deliveries`)).body.count === 0, 5_000, 'old deliveries pruned');
  assert.is((await api(`/webhooks/${down.id}/deliveries?status=pending`)).body.count, 1);
});

test.run();
