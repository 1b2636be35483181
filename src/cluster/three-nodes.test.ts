// Three `serve` processes on one PostgreSQL database, each with its own data directory, as three machines behind
// a balancer would run them, the load spread over all three: sends through each node's API reach the sink
// once each, mail received by each node's MX is listed by another, the event stream on a third shows what the
// others did, and webhook deliveries go out once each although three dispatchers share the outbox.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { ownStores, request, runCli, startAppProcess, tempDir, testEnv, type AppProcess } from '../testkit/app.ts';
import { migratedDatabase } from '../testkit/postgres.ts';
import { openPool } from '../db/postgres.ts';
import type { DnsServer } from '../testkit/dns-server.ts';
import { startSmtpSink, type SmtpSink } from '../testkit/smtp-sink.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { openEventStream } from '../testkit/event-stream.ts';
import { BOX, eventually, startDestinationDns } from '../testkit/outbound.ts';

let dns: DnsServer;
let sink: SmtpSink;
let database: { url: string; drop: () => Promise<void> };
let hooks: Server;
const hookIds: string[] = [];
const nodes: AppProcess[] = [];
const dirs: string[] = [];
let key: string;
let inbox: string;

test.before(async () => {
  dns = await startDestinationDns();
  sink = await startSmtpSink({ host: '127.0.0.2' });
  database = await migratedDatabase();
  hooks = createServer((req, res) => {
    hookIds.push(String(req.headers['webhook-id']));
    req.resume().on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
  const shared = { MAILWRIGHT_DATABASE_URL: database.url, MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_MTA_PORT: String(sink.port), MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true', MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_RATE_LIMIT: '0' };
  for (let i = 0; i < 3; i++) dirs.push(tempDir());
  // One after the other: the first makes the tables, the others find them.
  for (const dir of dirs) nodes.push(await startAppProcess(testEnv(dir, shared)));
  key = (await runCli(['key', 'create', '--name', 'nodes'], testEnv(dirs[0]!, shared))).stdout.trim();
});
test.after(async () => {
  for (const node of nodes) await node.stop('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await sink.close();
  hooks.close();
  dns.close();
  await database.drop();
});

const api = (node: number, path: string, opts: Parameters<typeof request>[1] = {}) => request(`${nodes[node]!.url}/api/v1${path}`, { key, ...opts });

ownStores(test)('a domain set up through one node is ready on all; a webhook made on another', async () => {
  const d = (await api(0, '/domains', { body: { name: 'three.example' } })).body;
  dns.publish(d.records);
  assert.is((await api(1, `/domains/${d.id}/verify`, { method: 'POST' })).body.status, 'verified');
  await api(2, `/domains/${d.id}/inbound/setup`, { method: 'POST' });
  dns.set('three.example', 'MX', [{ preference: 10, exchange: BOX }]);
  assert.is((await api(0, `/domains/${d.id}/inbound/verify`, { method: 'POST' })).body.status, 'ready');
  inbox = (await api(1, '/inboxes', { body: { domain_id: d.id, local_part: 'hello', name: 'hello' } })).body.address;
  const port = (hooks.address() as AddressInfo).port;
  assert.is((await api(2, '/webhooks', { body: { url: `http://127.0.0.1:${port}/hook`, events: ['email.received'] } })).status, 201);
});

ownStores(test)('sends and received mail spread over three nodes: each once, seen from any node, live on a third', async () => {
  const stream = await openEventStream<{ type: string; data: { email: { id: string } } }>(`${nodes[2]!.url}/api/v1/events/stream`, key);
  await eventually(() => stream.connected(), 5000, 'the stream on node 3');
  const N = 24;
  const sent = await Promise.all(Array.from({ length: N }, (_, i) => api(i % 3, '/emails', { body: { from: 'app@three.example', to: [`reader${i}@dest.test`], subject: `send ${i}`, text: 'x' } })));
  assert.ok(sent.every((r) => r.status === 200));
  const received: string[] = [];
  for (let i = 0; i < N; i++) {
    const c = await RawSmtp.open(nodes[i % 3]!.smtpPort, '127.0.0.1');
    try {
      await c.read();
      await c.command('EHLO client.sender.example');
      await c.command('MAIL FROM:<ann@sender.example>');
      assert.is((await c.command(`RCPT TO:<${inbox}>`)).code, 250);
      await c.command('DATA');
      c.write(Buffer.from(`From: Ann <ann@sender.example>\r\nTo: ${inbox}\r\nSubject: letter ${i}\r\nMessage-ID: <${randomUUID()}@sender.example>\r\n\r\nLetter ${i}.\r\n.\r\n`));
      const reply = await c.read(30_000);
      assert.is(reply.code, 250, reply.text);
      received.push(/queued as (em_\w+)/.exec(reply.text)![1]!);
    } finally {
      c.close();
    }
  }

  await eventually(() => sink.messages.length >= N, 30_000, 'every send delivered');
  const recipients = sink.messages.flatMap((m) => m.rcptTo);
  assert.is(new Set(recipients).size, N);
  assert.is(recipients.length, N, 'none twice');
  const listed = (await api(1, '/emails?direction=in&limit=100')).body.data.map((e: { id: string }) => e.id);
  assert.equal([...listed].sort(), [...received].sort(), 'node 2 lists what all three received');
  await eventually(() => received.every((id) => stream.messages().some((m) => m.data.type === 'email.received' && m.data.data.email.id === id)), 10_000, 'node 3 streamed every received email');
  stream.close();
  await eventually(() => hookIds.length >= N, 30_000, 'a webhook delivery per received email');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.is(new Set(hookIds).size, hookIds.length, 'no webhook delivery twice');
  assert.is(hookIds.length, N);
});

ownStores(test)('a stream hears another node\'s commit when it happens (LISTEN/NOTIFY), and again once its listening connection was cut', async () => {
  const pool = openPool(database.url, { max: 1 });
  const listeners = async () => (await pool.query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'mailwright-listen' AND query = 'LISTEN mailwright_events'")).rows.map((r) => Number(r.pid));
  try {
    await eventually(async () => (await listeners()).length === 3, 10_000, 'a listening connection per node');
    const stream = await openEventStream<{ type: string; data: { email: { id: string } } }>(`${nodes[2]!.url}/api/v1/events/stream`, key);
    await eventually(() => stream.connected(), 5000, 'the stream on node 3');
    // Within less than the stream's slow poll (5 s while it hears commits): the notice woke it.
    const sendAndHear = async (label: string) => {
      const id = (await api(0, '/emails', { body: { from: 'app@three.example', to: ['heard@dest.test'], subject: label, text: 'x' } })).body.id as string;
      await eventually(() => stream.messages().some((m) => m.data.data?.email?.id === id), 3000, `node 3 heard ${label}`);
    };
    await sendAndHear('the first');
    const before = await listeners();
    await pool.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [before]);
    await eventually(async () => {
      const now = await listeners();
      return now.length === 3 && now.every((pid) => !before.includes(pid));
    }, 15_000, 'every node listening again on a new connection');
    await sendAndHear('the second');
    stream.close();
  } finally {
    await pool.end();
  }
});


ownStores(test)('a stream resumed on another node with Last-Event-ID gets what happened meanwhile, and nothing it had', async () => {
  type Event = { type: string; data: { email?: { id: string } } };
  const send = async (node: number, label: string) => (await api(node, '/emails', { body: { from: 'app@three.example', to: ['resumed@dest.test'], subject: label, text: 'x' } })).body.id as string;
  const first = await openEventStream<Event>(`${nodes[0]!.url}/api/v1/events/stream`, key);
  await eventually(() => first.connected(), 5000, 'the stream on node 1');
  const before = await send(1, 'before');
  await eventually(() => first.messages().some((m) => m.data.data.email?.id === before), 5000, 'node 1 streaming the first send');
  first.close();
  const last = first.messages().at(-1)!;
  const meanwhile = [await send(2, 'meanwhile 1'), await send(1, 'meanwhile 2')];
  const resumed = await openEventStream<Event>(`${nodes[1]!.url}/api/v1/events/stream`, key, last.lastId);
  await eventually(() => meanwhile.every((id) => resumed.messages().some((m) => m.data.data.email?.id === id)), 5000, 'node 2 replaying what was missed');
  resumed.close();
  const replayed = resumed.messages();
  assert.ok(replayed.every((m) => m.id > last.id), 'nothing at or before the Last-Event-ID');
  const had = new Set(first.messages().map((m) => m.lastId));
  assert.not.ok(replayed.some((m) => had.has(m.lastId)), 'no event the first stream had is sent again');
});

test.run();
