// Tests for the test DNS server, always through Node's real c-ares Resolver (or raw sockets + dns-packet),
// because "what the app's resolver sees" is the only contract that matters. No mocks of node:dns here.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import dgram from 'node:dgram';
import net from 'node:net';
import { once } from 'node:events';
import dnsPacket from 'dns-packet';
import type { Answer, Packet } from 'dns-packet';
import { startDnsServer } from './dns-server.ts';
import type { DnsServer } from './dns-server.ts';
import type { Resolver } from 'node:dns/promises';

let server: DnsServer;
let resolver: Resolver;

async function newResolver(opts?: { timeout?: number; tries?: number }): Promise<Resolver> {
  const r = new (await import('node:dns')).promises.Resolver(opts);
  r.setServers([server.address]);
  return r;
}

async function errorCode(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code;
  }
  assert.unreachable('expected the lookup to fail');
}

test.before(async () => {
  server = await startDnsServer();
  // Short timeouts so a broken server fails the test in seconds instead of c-ares' default ~minute.
  resolver = await newResolver({ timeout: 1000, tries: 2 });
});

test.after(async () => {
  await server.close();
});

test('listens on UDP and TCP on one port and reports it as host:port', () => {
  assert.is(server.host, '127.0.0.1');
  assert.ok(server.port > 0);
  assert.is(server.address, `127.0.0.1:${server.port}`);
});

test('resolve4 and resolve6 return the published RRset', async () => {
  server.add('host.example.test', 'A', '192.0.2.10');
  server.add('HOST.Example.Test.', 'A', '192.0.2.11'); // same name: case and trailing dot ignored
  server.add('host.example.test', 'AAAA', '2001:db8::10');
  assert.equal((await resolver.resolve4('host.example.test')).sort(), ['192.0.2.10', '192.0.2.11']);
  assert.equal(await resolver.resolve6('host.example.test'), ['2001:db8::10']);
  const withTtl = await resolver.resolve4('host.example.test', { ttl: true });
  assert.equal(withTtl.map((r) => r.ttl), [300, 300]);
});

test('resolveMx returns preference and exchange', async () => {
  server.add('mx.example.test', 'MX', { preference: 10, exchange: 'mx1.example.test' });
  server.add('mx.example.test', 'MX', { preference: 20, exchange: 'mx2.example.test.' });
  const mx = (await resolver.resolveMx('mx.example.test')).sort((a, b) => a.priority - b.priority);
  assert.equal(mx, [
    { exchange: 'mx1.example.test', priority: 10 },
    { exchange: 'mx2.example.test', priority: 20 },
  ]);
});

test('resolveTxt: a string[] is one record of several strings; a long string is chunked at 255 bytes', async () => {
  server.add('split.example.test', 'TXT', ['part1', 'part2']);
  assert.equal(await resolver.resolveTxt('split.example.test'), [['part1', 'part2']]);

  const long = Array.from({ length: 600 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
  server.add('long.example.test', 'TXT', long);
  const [record, ...rest] = await resolver.resolveTxt('long.example.test');
  assert.is(rest.length, 0);
  assert.equal(record?.map((s) => s.length), [255, 255, 90]);
  assert.is(record?.join(''), long);
});

test('resolveNs, resolveSoa and resolveCname', async () => {
  server.add('zone.test', 'NS', 'ns1.zone.test');
  server.add('zone.test', 'NS', 'ns2.zone.test');
  server.add('zone.test', 'SOA', { mname: 'ns1.zone.test', rname: 'hostmaster.zone.test', serial: 2024010101 });
  server.add('alias.zone.test', 'CNAME', 'target.zone.test');
  assert.equal((await resolver.resolveNs('zone.test')).sort(), ['ns1.zone.test', 'ns2.zone.test']);
  assert.equal(await resolver.resolveSoa('zone.test'), {
    nsname: 'ns1.zone.test',
    hostmaster: 'hostmaster.zone.test',
    serial: 2024010101,
    refresh: 3600,
    retry: 600,
    expire: 86400,
    minttl: 60,
  });
  assert.equal(await resolver.resolveCname('alias.zone.test'), ['target.zone.test']);
});

test('reverse() finds a PTR record', async () => {
  server.add('4.3.2.1.in-addr.arpa', 'PTR', 'mail.example.test');
  assert.equal(await resolver.reverse('1.2.3.4'), ['mail.example.test']);
});

test('NXDOMAIN is ENOTFOUND, NODATA is ENODATA, an empty non-terminal is NODATA', async () => {
  server.add('only-a.neg.test', 'A', '192.0.2.20');
  server.add('leaf.mid.neg.test', 'A', '192.0.2.21');
  assert.is(await errorCode(resolver.resolve4('missing.neg.test')), 'ENOTFOUND');
  assert.is(await errorCode(resolver.resolveMx('only-a.neg.test')), 'ENODATA');
  assert.is(await errorCode(resolver.resolve4('mid.neg.test')), 'ENODATA');
});

test('negative answers carry the closest enclosing SOA', async () => {
  server.add('soa.test', 'SOA', { mname: 'ns.soa.test', rname: 'admin.soa.test', minimum: 30 });
  server.add('has-a.soa.test', 'A', '192.0.2.30');
  const nx = await udpQuery({ name: 'nope.deep.soa.test', type: 'A' });
  assert.is(rcodeOf(nx), 'NXDOMAIN');
  assert.is(nx.authorities?.[0]?.type, 'SOA');
  assert.is(nx.authorities?.[0]?.name, 'soa.test');
  assert.is((nx.authorities?.[0] as { ttl?: number }).ttl, 30);
  const nodata = await udpQuery({ name: 'has-a.soa.test', type: 'TXT' });
  assert.is(rcodeOf(nodata), 'NOERROR');
  assert.is(nodata.answers?.length, 0);
  assert.is(nodata.authorities?.[0]?.type, 'SOA');
});

test('resolve4 follows a CNAME chain', async () => {
  server.add('www.chain.test', 'CNAME', 'hop1.chain.test');
  server.add('hop1.chain.test', 'CNAME', 'hop2.chain.test');
  server.add('hop2.chain.test', 'A', '192.0.2.40');
  assert.equal(await resolver.resolve4('www.chain.test'), ['192.0.2.40']);
  const reply = await udpQuery({ name: 'www.chain.test', type: 'A' });
  assert.equal(
    reply.answers?.map((a) => a.type),
    ['CNAME', 'CNAME', 'A'],
  );
});

test('a CNAME loop ends instead of hanging', async () => {
  server.add('loop1.chain.test', 'CNAME', 'loop2.chain.test');
  server.add('loop2.chain.test', 'CNAME', 'loop1.chain.test');
  const reply = await udpQuery({ name: 'loop1.chain.test', type: 'A' });
  assert.is(reply.answers?.length, 2);
});

test('resolveAny returns every record of the name', async () => {
  server.add('any.example.test', 'A', '192.0.2.50');
  server.add('any.example.test', 'TXT', 'hello');
  const types = (await resolver.resolveAny('any.example.test')).map((r) => r.type).sort();
  assert.equal(types, ['A', 'TXT']);
});

test('set replaces, remove and clear delete', async () => {
  server.add('mut.example.test', 'A', '192.0.2.60');
  server.set('mut.example.test', 'A', ['192.0.2.61', '192.0.2.62']);
  assert.equal((await resolver.resolve4('mut.example.test')).sort(), ['192.0.2.61', '192.0.2.62']);
  server.remove('mut.example.test', 'A');
  assert.is(await errorCode(resolver.resolve4('mut.example.test')), 'ENOTFOUND');
  assert.throws(() => server.add('bad.example.test', 'A', 'not-an-ip'), /IPv4/);
});

test('scripted SERVFAIL and REFUSED surface as ESERVFAIL and EREFUSED, until unfail', async () => {
  server.add('flaky.example.test', 'A', '192.0.2.70');
  server.add('flaky.example.test', 'MX', { preference: 1, exchange: 'mx.flaky.example.test' });
  server.fail('flaky.example.test', 'A', 'SERVFAIL');
  server.fail('picky.example.test', '*', 'REFUSED');
  assert.is(await errorCode(resolver.resolve4('flaky.example.test')), 'ESERVFAIL');
  assert.equal((await resolver.resolveMx('flaky.example.test')).length, 1); // only A was scripted
  assert.is(await errorCode(resolver.resolveTxt('picky.example.test')), 'EREFUSED');
  server.unfail('flaky.example.test');
  assert.equal(await resolver.resolve4('flaky.example.test'), ['192.0.2.70']);
  server.unfail();
  assert.is(await errorCode(resolver.resolveTxt('picky.example.test')), 'ENOTFOUND');
});

test('a scripted timeout is ETIMEOUT', async () => {
  server.add('slow.example.test', 'A', '192.0.2.80');
  server.fail('slow.example.test', 'A', 'timeout');
  const impatient = await newResolver({ timeout: 200, tries: 1 });
  const started = Date.now();
  assert.is(await errorCode(impatient.resolve4('slow.example.test')), 'ETIMEOUT');
  assert.ok(Date.now() - started >= 150, 'the server must really stay silent');
  server.unfail('slow.example.test');
});

test('a large RRset is truncated over UDP and arrives complete over TCP', async () => {
  const records = Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, '0')}${'t'.repeat(98)}`);
  for (const r of records) server.add('big.example.test', 'TXT', r);

  const udpReply = await udpQuery({ name: 'big.example.test', type: 'TXT' });
  assert.ok(udpReply.flags !== undefined && (udpReply.flags & dnsPacket.TRUNCATED_RESPONSE) !== 0, 'TC set');
  assert.is(udpReply.answers?.length, 0);

  server.resetQueries();
  const got = await resolver.resolveTxt('big.example.test');
  assert.equal(got.map((r) => r.join('')).sort(), records);
  assert.equal(
    server.queries.map((q) => `${q.transport} ${q.type} ${q.name}`),
    ['udp TXT big.example.test', 'tcp TXT big.example.test'],
  );
});

test('EDNS: an OPT is echoed and raises the UDP limit', async () => {
  for (let i = 0; i < 10; i++) server.add('edns.example.test', 'TXT', `${i}${'e'.repeat(99)}`);
  const plain = await udpQuery({ name: 'edns.example.test', type: 'TXT' });
  assert.is(plain.answers?.length, 0, 'over 512 bytes without EDNS');
  assert.is(plain.additionals?.length, 0, 'no OPT unless asked with one');
  const opt = { type: 'OPT' as const, name: '.', udpPayloadSize: 4096, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] };
  const reply = await udpQuery({ name: 'edns.example.test', type: 'TXT' }, [opt]);
  assert.is(reply.additionals?.[0]?.type, 'OPT');
  assert.ok(!reply.flag_tc);
  assert.is(reply.answers?.length, 10);
});

test('raw TCP: pipelined queries all get answers, with id, question and flags right', async () => {
  server.add('tcp.example.test', 'A', '192.0.2.90');
  const socket = net.connect(server.port, server.host);
  await once(socket, 'connect');
  const queries: Packet[] = [
    { type: 'query', id: 4242, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name: 'tcp.example.test' }] },
    { type: 'query', id: 4343, flags: 0, questions: [{ type: 'A', name: 'nothing.example.test' }] },
  ];
  socket.write(Buffer.concat(queries.map((q) => dnsPacket.streamEncode(q))));
  const replies = await readTcpReplies(socket, 2);
  socket.destroy();

  const [first, second] = replies;
  assert.ok(first && second);
  assert.is(first.id, 4242);
  assert.ok(first.flag_qr && first.flag_aa && first.flag_rd && !first.flag_ra && !first.flag_tc);
  assert.equal(first.questions, [{ name: 'tcp.example.test', type: 'A', class: 'IN' }]);
  assert.equal(first.answers?.map(dataOf), ['192.0.2.90']);
  assert.is(second.id, 4343);
  assert.ok(!second.flag_rd);
  assert.is(rcodeOf(second), 'NXDOMAIN');
  assert.equal(
    server.queries.slice(-2).map((q) => q.transport),
    ['tcp', 'tcp'],
  );
});

test('malformed packets are dropped and the server keeps answering', async () => {
  server.add('robust.example.test', 'A', '192.0.2.91');
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => udp.send(Buffer.from([1, 2, 3]), server.port, server.host, () => resolve()));
  udp.close();
  const socket = net.connect(server.port, server.host);
  await once(socket, 'connect');
  // A complete frame of garbage, then a valid query on the same connection.
  socket.write(Buffer.from([0, 3, 0xff, 0xff, 0xff]));
  socket.write(dnsPacket.streamEncode({ type: 'query', id: 7, questions: [{ type: 'A', name: 'robust.example.test' }] }));
  const [reply] = await readTcpReplies(socket, 1);
  socket.destroy();
  assert.is(reply?.id, 7);
  assert.equal(reply?.answers?.map(dataOf), ['192.0.2.91']);
  assert.equal(await resolver.resolve4('robust.example.test'), ['192.0.2.91']);
});

test('clear() empties the zone', async () => {
  server.add('cleared.example.test', 'A', '192.0.2.99');
  server.clear();
  assert.is(await errorCode(resolver.resolve4('cleared.example.test')), 'ENOTFOUND');
});

type Decoded = ReturnType<typeof dnsPacket.decode>;

function dataOf(answer: Answer): unknown {
  return 'data' in answer ? answer.data : undefined;
}

function rcodeOf(packet: Decoded): string {
  // dns-packet decodes the header's rcode as a name, though its types do not declare it.
  return (packet as Decoded & { rcode: string }).rcode;
}

async function udpQuery(question: { name: string; type: 'A' | 'TXT' }, additionals: Packet['additionals'] = []): Promise<Decoded> {
  const socket = dgram.createSocket('udp4');
  try {
    const id = Math.floor(Math.random() * 0xffff);
    const reply = once(socket, 'message');
    socket.send(dnsPacket.encode({ type: 'query', id, questions: [question], additionals }), server.port, server.host);
    const [msg] = (await withTimeout(reply, 2000)) as [Buffer];
    const decoded = dnsPacket.decode(msg);
    assert.is(decoded.id, id);
    return decoded;
  } finally {
    socket.close();
  }
}

async function readTcpReplies(socket: net.Socket, count: number): Promise<Decoded[]> {
  const replies: Decoded[] = [];
  let buffered: Buffer = Buffer.alloc(0);
  const done = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        if (buffered.length < 2) break;
        const packet = dnsPacket.streamDecode(buffered);
        if (!packet) break;
        replies.push(packet as Decoded);
        buffered = buffered.subarray(2 + dnsPacket.streamDecode.bytes);
      }
      if (replies.length >= count) resolve();
    });
  });
  await withTimeout(done, 2000);
  return replies;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no reply within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

test('addZone publishes SOA and NS; publish() puts records as the box lists them', async () => {
  server.addZone('kit-zone.test', ['ns1.kit.test', 'ns2.kit.test']);
  assert.is((await resolver.resolveSoa('kit-zone.test')).nsname, 'ns1.kit.test');
  assert.equal((await resolver.resolveNs('kit-zone.test')).sort(), ['ns1.kit.test', 'ns2.kit.test']);
  const long = 'v=DKIM1; k=rsa; p=' + 'A'.repeat(400);
  server.publish([
    { type: 'TXT', name: 'sel._domainkey.kit-zone.test', value: long },
    { type: 'MX', name: 'bounces.kit-zone.test', value: 'mx.kit.test', priority: 10 },
  ]);
  const txt = await resolver.resolveTxt('sel._domainkey.kit-zone.test');
  assert.is(txt.length, 1, 'one record');
  assert.is(txt[0].join(''), long, 'split into strings, whole when joined');
  assert.equal(await resolver.resolveMx('bounces.kit-zone.test'), [{ priority: 10, exchange: 'mx.kit.test' }]);
});

test.run();
