// The PROXY protocol on the SMTP and HTTP listeners, over real sockets: a trusted proxy (127.0.0.5 here) sends a
// v1 or v2 header and the box sees the client it names (in the Received field and the log, in the audit log's
// address); without a valid header a trusted proxy's connection is closed; anyone else is served as a direct
// client, and a header it sends is no more than a bad command.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect } from 'node:net';
import proxyProtocol from 'proxy-protocol-js';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { login, request } from '../testkit/app.ts';
import { loadConfig, ConfigError } from '../config/config.ts';
import { testEnv, tempDir } from '../testkit/app.ts';

const { V2ProxyProtocol, Command, TransportProtocol, IPv4ProxyAddress, IPv4Address, IPv6ProxyAddress, IPv6Address } = proxyProtocol;
const PROXY = '127.0.0.5';
let s: InboundScene;

test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_TRUSTED_PROXIES: PROXY, MAILWRIGHT_SMTP_PROXY_PROTOCOL: 'true', MAILWRIGHT_HTTP_PROXY_PROTOCOL: 'true' } });
});
test.after(() => s.stop());

const v2 = (command: number, address: InstanceType<typeof IPv4ProxyAddress> | InstanceType<typeof IPv6ProxyAddress>) => Buffer.from(new V2ProxyProtocol(command, TransportProtocol.STREAM, address).build());
const v2From4 = (ip: number[], command = Command.PROXY) => v2(command, new IPv4ProxyAddress(IPv4Address.createFrom(ip), 40000, IPv4Address.createFrom([127, 0, 0, 1]), 25));

/** One message over SMTP from `from` with `header` first, as a balancer sends it; answers the stored raw message. */
async function deliver(header: Buffer | string, subject: string, from = PROXY) {
  const c = await RawSmtp.open(s.t.smtpPort, '127.0.0.1', from);
  c.write(header);
  assert.is((await c.read()).code, 220);
  assert.is((await c.command('EHLO client.example')).code, 250);
  for (const line of ['MAIL FROM:<bob@sender.example>', `RCPT TO:<${s.inbox.address}>`]) assert.is((await c.command(line)).code, 250, line);
  assert.is((await c.command('DATA')).code, 354);
  const done = await c.command(`From: bob@sender.example\r\nTo: ${s.inbox.address}\r\nSubject: ${subject}\r\n\r\nHello.\r\n.`);
  c.close();
  assert.is(done.code, 250, done.text);
  return (await s.stored('subject = ?', subject))[0].raw.toString('latin1');
}

test('SMTP: the client a v1 or v2 header names is the one in the Received field; LOCAL keeps the proxy', async () => {
  assert.match(await deliver('PROXY TCP4 203.0.113.7 127.0.0.1 40000 25\r\n', 'Through v1'), /^Received: from client\.example \([^)]*\[203\.0\.113\.7\]\)/);
  assert.match(await deliver(v2From4([198, 51, 100, 23]), 'Through v2'), /\[198\.51\.100\.23\]\)/);
  const six = v2(Command.PROXY, new IPv6ProxyAddress(IPv6Address.createFrom([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]), 40000, IPv6Address.createFrom([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]), 25));
  assert.match(await deliver(six, 'Through v2 over IPv6'), /\[2001:db8::7\]\)/);
  assert.match(await deliver(v2From4([192, 0, 2, 1], Command.LOCAL), 'A health check'), /\[127\.0\.0\.5\]\)/);
  assert.match(await deliver('PROXY UNKNOWN\r\n', 'Unknown source'), /\[127\.0\.0\.5\]\)/);
});

test('SMTP: a trusted proxy without a valid header is closed unanswered; a stranger\'s header is only a bad command', async () => {
  for (const bad of ['EHLO no-header.example\r\n', 'PROXY TCP4 999.1.1.1 127.0.0.1 1 25\r\n', `PROXY ${'x'.repeat(200)}\r\n`, Buffer.from('0d0a0d0a000d0a515549540a2111ffff', 'hex')]) {
    const c = await RawSmtp.open(s.t.smtpPort, '127.0.0.1', PROXY);
    c.write(bad);
    const answered = await c.read(3_000).then((r) => r.code, () => null);
    assert.is(answered, null, `no answer to ${JSON.stringify(String(bad).slice(0, 30))}`);
    assert.ok(c.closed, 'closed');
  }
  const stranger = await RawSmtp.open(s.t.smtpPort, '127.0.0.1', '127.0.0.9');
  assert.is((await stranger.read()).code, 220, 'a direct client is greeted at once');
  assert.ok((await stranger.command('PROXY TCP4 203.0.113.66 127.0.0.1 40000 25')).code >= 500);
  assert.is((await stranger.command('EHLO stranger.example')).code, 250);
  stranger.close();
});

test('SMTP: a trusted proxy that sends nothing is closed after the header timeout', async () => {
  const c = await RawSmtp.open(s.t.smtpPort, '127.0.0.1', PROXY);
  const started = Date.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (c.closed || Date.now() - started > 15_000) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
  });
  assert.ok(c.closed, 'closed');
});

/** One HTTP request on a raw socket from `from`, the header and the request in one write; answers status and body. */
function httpOver(header: Buffer | string, req: string, from = PROXY): Promise<{ status: number; body: string }> {
  const port = Number(new URL(s.t.url).port);
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from }, () => socket.write(Buffer.concat([Buffer.from(header), Buffer.from(req)])));
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (d) => (data += d));
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0), body: data.slice(data.indexOf('\r\n\r\n') + 4) }));
  });
}

test('HTTP: the client a header names is the address the audit log records; a health check by LOCAL; no header, closed', async () => {
  const body = JSON.stringify({ url: 'https://hooks.example/proxied', events: ['email.received'] });
  const req = `POST /api/v1/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
  const made = await httpOver('PROXY TCP4 198.51.100.44 127.0.0.1 50000 8080\r\n', req);
  assert.is(made.status, 201, made.body);
  const cookie = await login(s.t, s.email);
  const audit = (await request(`${s.t.api}/audit?action=webhook.created`, { cookie })).body.data;
  assert.is(audit[0].ip, '198.51.100.44');

  const health = await httpOver(v2From4([10, 0, 0, 1], Command.LOCAL), 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
  assert.is(health.status, 200);
  assert.is((await httpOver('', 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')).status, 0, 'a trusted proxy without a header gets no answer');
  // XFF from a direct client is not believed, PROXY or not.
  const direct = await httpOver('', 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', '127.0.0.9');
  assert.is(direct.status, 200);
});

test('the setting needs trusted_proxies', () => {
  const env = testEnv(tempDir(), { MAILWRIGHT_SMTP_PROXY_PROTOCOL: 'true' });
  assert.throws(() => loadConfig(env), (err: Error) => err instanceof ConfigError && /smtp_proxy_protocol needs trusted_proxies/.test(err.message));
});

test.run();
