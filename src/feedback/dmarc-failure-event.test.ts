// domain.dmarc_failure end to end: a DMARC aggregate report delivered over SMTP names a source failing
// alignment in 10 or more messages; a webhook endpoint subscribed to the type gets one signed delivery with the
// domain, the source and its PTR name, the counts and the report, and a live stream client gets the same. A
// source below the threshold, or one already announced, raises nothing.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { openEventStream } from '../testkit/event-stream.ts';
import { googleMessage, googleXml, zipped, type Row } from '../testkit/aggregate-reports.ts';

let s: InboundScene;
let receiver: Server;
let shop: { id: string };
const hits: Array<{ path: string; headers: Record<string, unknown>; body: string }> = [];
const DMARC = 'dmarc-reports@bounces.shop.example';
const BEGIN = 1764201600;
const END = BEGIN + 86399;

test.before(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hits.push({ path: req.url!, headers: req.headers, body });
      res.end('thanks');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  s = await startInboundScene({ env: { MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true' } });
  shop = await s.verifiedDomain('shop.example');
  s.dns.set('7.100.51.198.in-addr.arpa', 'PTR', ['host7.spoofer.example.net']);
});
test.after(async () => {
  receiver.closeAllConnections();
  receiver.close();
  await s.stop();
});

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });

async function report(reportId: string, rows: Row[]) {
  const file = `google.com!shop.example!${BEGIN}!${END}.zip`;
  const raw = googleMessage(DMARC, file, zipped('r.xml', googleXml({ domain: 'shop.example', reportId, begin: BEGIN, end: END, rows })), 'shop.example', reportId);
  const reply = await s.deliver(raw, { from: 'noreply-dmarc-support@google.com', to: [DMARC] });
  assert.is(reply.code, 250, reply.text);
  return /queued as (dmarc_\w+)/.exec(reply.text)![1];
}

test('a new source failing alignment in volume raises domain.dmarc_failure once, by webhook and on the live stream', async () => {
  const port = (receiver.address() as AddressInfo).port;
  const hook = await api('/webhooks', { body: { url: `http://127.0.0.1:${port}/dmarc`, events: ['domain.dmarc_failure'] } });
  assert.is(hook.status, 201, JSON.stringify(hook.body));
  const inboxOnly = await api('/webhooks', { body: { url: `http://127.0.0.1:${port}/inbox-only`, events: ['*'], inbox_id: s.inbox.id } });
  assert.is(inboxOnly.status, 201);
  const stream = await openEventStream<{ type: string; data: Record<string, unknown> }>(`${s.t.api}/events/stream?types=domain.dmarc_failure`, s.key);
  await eventually(() => stream.connected(), 5000, 'the stream to connect');

  const id = await report('r-1', [
    { ip: '198.51.100.7', count: 30, dkim: 'fail', spf: 'fail' },
    { ip: '198.51.100.7', count: 12, dkim: 'fail', spf: 'fail', disposition: 'none' },
    { ip: '198.51.100.7', count: 5, dkim: 'pass', spf: 'fail' },
    { ip: '192.0.2.9', count: 9, dkim: 'fail', spf: 'fail' },
    { ip: '203.0.113.25', count: 500, dkim: 'pass', spf: 'pass' },
  ]);

  const hit = await eventually(() => hits.find((h) => h.path === '/dmarc'), 10_000, 'the webhook delivery');
  const body = JSON.parse(hit.body);
  assert.is(body.type, 'domain.dmarc_failure');
  assert.match(body.data.id, /^devt_/);
  assert.equal({ ...body.data, id: undefined }, {
    id: undefined,
    domain: { id: shop.id, name: 'shop.example' },
    source: { ip: '198.51.100.7', ptr: 'host7.spoofer.example.net' },
    messages: 42,
    totalMessages: 47,
    threshold: 10,
    report: { id, orgName: 'google.com', reportId: 'r-1', begin: '2025-11-27T00:00:00.000Z', end: '2025-11-27T23:59:59.000Z', authenticated: false },
  });
  assert.ok(hit.headers['webhook-signature'], 'signed like every webhook');
  const [message] = await eventually(() => (stream.messages().length ? stream.messages() : undefined), 10_000, 'the stream message');
  assert.equal(message.data, body, 'the stream carries the webhook body');

  // The same source in the next report is not new: nothing more. 192.0.2.9 stays under the threshold.
  await report('r-2', [{ ip: '198.51.100.7', count: 80, dkim: 'fail', spf: 'fail' }, { ip: '192.0.2.9', count: 9, dkim: 'fail', spf: 'fail' }]);
  await report('r-3', [{ ip: '192.0.2.99', count: 10, dkim: 'fail', spf: 'pass' }]);
  await new Promise((r) => setTimeout(r, 1500));
  assert.is(hits.filter((h) => h.path === '/dmarc').length, 1, 'one delivery');
  assert.is(hits.filter((h) => h.path === '/inbox-only').length, 0, 'an endpoint limited to an inbox takes no domain events');
  assert.is(stream.messages().length, 1);
  stream.close();

  // The webhook's delivery log lists it like any other.
  const deliveries = await api(`/webhooks/${hook.body.id}/deliveries`);
  assert.equal(deliveries.body.data.map((d: { type: string; status: string }) => [d.type, d.status]), [['domain.dmarc_failure', 'delivered']]);
});

test('a report naming many failing sources announces the 20 with the most failing messages', async () => {
  const before = hits.filter((h) => h.path === '/dmarc').length;
  const rows: Row[] = Array.from({ length: 30 }, (_, i) => ({ ip: `192.0.2.${100 + i}`, count: 10 + i, dkim: 'fail', spf: 'fail' }));
  await report('r-many', rows);
  await eventually(() => hits.filter((h) => h.path === '/dmarc').length === before + 20 || undefined, 10_000, '20 deliveries');
  await new Promise((r) => setTimeout(r, 1000));
  const ips = hits.filter((h) => h.path === '/dmarc').slice(before).map((h) => JSON.parse(h.body).data.source.ip as string);
  assert.is(ips.length, 20);
  assert.equal(ips.sort(), rows.slice(10).map((r) => r.ip).sort(), 'the 20 biggest');
});

test('webhook subscriptions and stream filters accept the domain event type', async () => {
  const bad = await api('/webhooks', { body: { url: 'http://127.0.0.1:9/x', events: ['domain.nope'] } });
  assert.is(bad.status, 400);
  assert.match(JSON.stringify(bad.body), /domain\.dmarc_failure/);
});

test.run();
