// ACME on two nodes sharing one PostgreSQL database, as behind a balancer: Pebble's HTTP-01 validation reaches
// the node that did NOT place the order (a relay in front of the nodes' challenge ports picks the other one),
// which answers from the store. One order for the box, one account, and both nodes serve the certificate over
// TLS; a renewal by one is swapped in by the other without a restart.
import { eventually } from '../testkit/outbound.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect as tcpConnect, createServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { freePort, ownStores, request, seedWorkspace, startTestApp, TEST_STORE, type TestApp } from '../testkit/app.ts';
import { migratedDatabase } from '../testkit/postgres.ts';
import { startPebble, type Pebble } from '../testkit/pebble.ts';
import { value } from '../db/query.ts';
import { POLL_MS } from './certificates.ts';

const HOST = 'mx.mailwright.test';
let dns: DnsServer;
let pebble: Pebble;
let database: { url: string; drop: () => Promise<void> };
let relay: Server;
let root: string;
const nodes: TestApp[] = [];
/** Which node's challenge port each validation connection went to (index in `nodes`). */
const validatedBy: number[] = [];

/** The node that holds (or last held) the box's ACME lease, as an index in `nodes`, once both run. */
async function orderer(): Promise<{ index: number } | null> {
  if (nodes.length < 2) return null;
  const id = await nodes[0]!.app.store.read(value<number>("SELECT node_id FROM job_runs WHERE name = 'acme'"));
  const index = nodes.findIndex((n) => n.app.node.id === id);
  return index < 0 ? null : { index };
}

/** Port 80 of the box as the CA reaches it: each connection goes to the node that did not place the order. */
function startRelay(port: number): Promise<Server> {
  const server = createServer((client: Socket) => {
    client.pause();
    client.on('error', () => {});
    void eventually(orderer, 10_000, 'both nodes up and one ordering').then(
      ({ index }) => {
        const other = 1 - index;
        validatedBy.push(other);
        const upstream = tcpConnect({ host: '127.0.0.1', port: nodes[other]!.running.acmeHttp!.port });
        upstream.on('error', () => client.destroy());
        client.pipe(upstream).pipe(client);
        client.resume();
      },
      () => client.destroy(),
    );
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

/** The certificate a node's HTTPS listener presents for HOST, verified against Pebble's root. */
function servedSerial(node: TestApp): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: node.running.https!.port, servername: HOST, ca: root }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      const ok = socket.authorized;
      socket.end();
      if (ok) resolve(serial);
      else reject(new Error(`not verified: ${socket.authorizationError}`));
    });
    socket.on('error', reject);
  });
}

const obtained = (node: TestApp) => node.logs.filter((l) => l.includes('obtained a certificate by ACME')).length;

test.before(async () => {
  if (TEST_STORE === 'postgres') return; // the nodes share a database of their own: ownStores
  dns = await startDnsServer();
  dns.add(HOST, 'A', '127.0.0.1');
  const port80 = await freePort();
  relay = await startRelay(port80);
  pebble = await startPebble({ httpPort: port80, dnsServer: dns.address });
  database = await migratedDatabase();
  for (let i = 0; i < 2; i++) {
    nodes.push(
      await startTestApp({
        env: {
          MAILWRIGHT_DATABASE_URL: database.url,
          MAILWRIGHT_DNS_SERVERS: dns.address,
          MAILWRIGHT_ACME: 'true',
          MAILWRIGHT_ACME_DIRECTORY: pebble.directory,
          MAILWRIGHT_ACME_CA_FILE: pebble.caFile,
          MAILWRIGHT_ACME_HTTP_PORT: String(await freePort()),
          MAILWRIGHT_HTTPS_PORT: String(await freePort()),
        },
      }),
    );
  }
  root = await pebble.root();
});
test.after(async () => {
  for (const node of nodes) await node.stop();
  await pebble?.stop();
  relay?.close();
  await dns?.close();
  await database?.drop();
});

ownStores(test)('one node orders, the other answers the CA from the store; both serve the one certificate', async () => {
  const ordering = (await eventually(orderer, 10_000, 'a node ordering')).index;
  const other = nodes[1 - ordering]!;
  const cert = await eventually(() => nodes[ordering]!.running.acme!.currentStatus()[HOST]?.certificate, 60_000, 'the first certificate');
  assert.ok(validatedBy.length > 0, 'the CA validated');
  assert.ok(validatedBy.every((n) => n === 1 - ordering), 'every validation reached the other node');
  assert.equal(nodes.map(obtained), nodes.map((_, i) => (i === ordering ? 1 : 0)), 'exactly one order, by one node');
  assert.is(await nodes[0]!.app.store.read(value("SELECT count(*) FROM box_settings WHERE key = 'acme_account_key'")), 1, 'one account for the box');
  assert.is(await nodes[0]!.app.store.read(value('SELECT count(*) FROM acme_challenges')), 0, 'the challenge is gone once validated');

  // The other node picks it up at its next look at the store, without a restart.
  await eventually(() => other.running.acme!.forHostname(), POLL_MS + 15_000, 'the other node serving it');
  for (const node of nodes) assert.is(await servedSerial(node), cert.serial, 'HTTPS on each node serves the certificate');
  const { key } = await seedWorkspace(other);
  const tls = (await request(`${other.api}/account`, { key })).body.infrastructure.tls;
  assert.equal([tls.source, tls.names], ['acme', [HOST]], 'GET /account on the other node shows it in use');
});

ownStores(test)('a renewal by one node is swapped in by the other; a pass on the other finds nothing due', async () => {
  const before = nodes[0]!.running.acme!.currentStatus()[HOST]!.certificate!;
  await nodes[0]!.running.acme!.renewDue(Date.parse(before.renewAt) + 1000);
  const after = nodes[0]!.running.acme!.currentStatus()[HOST]!.certificate!;
  assert.is.not(after.serial, before.serial, nodes.map((n) => n.logs.filter((l) => /ACME|acme/.test(l)).join('\n')).join('\n---\n'));
  assert.is(await servedSerial(nodes[0]!), after.serial);
  await eventually(async () => (await servedSerial(nodes[1]!)) === after.serial, POLL_MS + 15_000, 'node 2 serving the renewed certificate');
  const orders = nodes.map(obtained).reduce((a, b) => a + b);
  await nodes[1]!.running.acme!.renewDue();
  assert.is(nodes.map(obtained).reduce((a, b) => a + b), orders, 'the other node orders nothing: the store says it is done');
  assert.equal(nodes[1]!.running.acme!.currentStatus(), nodes[0]!.running.acme!.currentStatus(), 'both nodes report the same');
});

test.run();
