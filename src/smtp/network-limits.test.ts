// Catalogue RES-16 on the MX listener: connections per network (an IPv4 /24, an IPv6 /64) beside those per
// address, and the slots of smtp_max_clients kept for servers that delivered mail before. The arithmetic of
// client-limits.ts first, then over real sockets on loopback: 127.0.0.x share one /24, 127.0.1.x another.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { networkOf } from '../dns/ip-ranges.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { firstReply, RawSmtp, type SmtpReply } from '../testkit/smtp-client.ts';
import { ANVIL_RATE_TIME_UNIT, ClientTable } from './client-limits.ts';
import { KnownNetworks } from './known-senders.ts';

const WAIT = 5_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ------------------------------------------------------------------------------------------------ arithmetic

const arithmetic = suite('arithmetic');

arithmetic('the network of an address: its IPv4 /24 or IPv6 /64, however the address was written', () => {
  assert.is(networkOf('192.0.2.77'), '192.0.2.0/24');
  assert.is(networkOf('::ffff:192.0.2.77'), '192.0.2.0/24');
  assert.is(networkOf('2001:DB8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.is(networkOf('2001:db8:0001:0002::9'), '2001:db8:1:2::/64');
  assert.is(networkOf('2001:db8::1'), '2001:db8::/64');
  assert.is(networkOf('2001:db8:1::'), '2001:db8:1::/64');
  assert.is(networkOf('2001:0:0:5::7'), '2001:0:0:5::/64');
  assert.is(networkOf('64:ff9b::192.0.2.1'), '64:ff9b::/64');
  assert.is(networkOf('::1'), '::/64');
  assert.is(networkOf('fe80::1%eth0'), 'fe80::/64');
  assert.is.not(networkOf('2001:db8:1:2::1'), networkOf('2001:db8:1:3::1'));
});

const table = (limits: Partial<ConstructorParameters<typeof ClientTable>[0]> = {}) =>
  new ClientTable({ maxOpen: 20, ratePerMinute: 0, maxOpenPerNetwork: 50, maxTotal: 200, reserved: 40, ...limits });

arithmetic('one /24 holds at most maxOpenPerNetwork, whatever its addresses; another /24 and a release make room', () => {
  const t = table({ maxOpenPerNetwork: 5, maxOpen: 3 });
  const verdicts = Array.from({ length: 9 }, (_, i) => t.admit(`c${i}`, `198.51.100.${10 + (i % 3)}`, 0));
  assert.is(verdicts.filter((v) => v.ok).length, 5);
  const refused = verdicts.find((v) => !v.ok);
  assert.equal(refused, { ok: false, status: '4.7.0', reason: 'Too many connections from your network 198.51.100.0/24 (5 open), try again later', report: true });
  assert.ok(verdicts.filter((v) => !v.ok).every((v, i) => !v.ok && v.report === (i === 0)), 'reported once for the network');
  assert.is(t.openFromNetwork('198.51.100.0/24'), 5);
  assert.ok(t.admit('other', '198.51.101.10', 0).ok);
  t.release('c0');
  assert.ok(t.admit('again', '198.51.100.99', 1).ok);
  assert.not.ok(t.admit('late', '198.51.100.98', ANVIL_RATE_TIME_UNIT).ok);
  const nextWindow = t.admit('later', '198.51.100.97', ANVIL_RATE_TIME_UNIT + 1);
  assert.ok(!nextWindow.ok && !nextWindow.report, 'once a window: the window above already reported it');
});

arithmetic('past the unreserved slots only known senders get in, up to the whole maxTotal; then 4.3.2 for all', () => {
  const t = table({ maxTotal: 6, reserved: 2, maxOpenPerNetwork: 100, maxOpen: 100 });
  for (let i = 0; i < 4; i++) assert.ok(t.admit(`s${i}`, '203.0.113.1', 0).ok);
  const stranger = t.admit('s4', '203.0.113.2', 0);
  assert.ok(!stranger.ok && stranger.status === '4.7.0' && /kept for servers that delivered mail here before/.test(stranger.reason), JSON.stringify(stranger));
  assert.ok(t.admit('k0', '192.0.2.1', 0, true).ok);
  assert.ok(t.admit('k1', '192.0.2.2', 0, true).ok);
  const full = t.admit('k2', '192.0.2.3', 0, true);
  assert.equal(full, { ok: false, status: '4.3.2', reason: 'All connection slots are busy, try again later', report: false });
  assert.is(t.openTotal, 6);
  t.release('k0');
  t.release('s0');
  assert.not.ok(t.admit('s5', '203.0.113.3', 1).ok, 'known senders count against the slots strangers may take: 2 of 6 are kept free');
  t.release('s1');
  assert.ok(t.admit('s6', '203.0.113.3', 1).ok, 'a stranger again with 3 open');
  assert.is(t.openTotal, 4);
});

arithmetic('known networks: bounded, the least recent delivery forgotten first', () => {
  const known = new KnownNetworks(3);
  for (const n of ['a', 'b', 'c']) known.delivered(n);
  known.delivered('a');
  known.delivered('d');
  assert.equal(['a', 'b', 'c', 'd'].map((n) => known.has(n)), [true, false, true, true]);
  assert.is(known.size, 3);
});

arithmetic.run();

// ------------------------------------------------------------------------------------------------ sockets

const dial = (port: number, localAddress: string) => firstReply(port, localAddress, WAIT);

type Dialed = Awaited<ReturnType<typeof dial>>;

/**
 * `count` connections greeted from each of `addresses`, all held open. A connection that has just ended may
 * still hold its slot until the server has seen it close, so a shortfall is retried within WAIT.
 */
async function holdGreeted(port: number, addresses: string[], count: number): Promise<Dialed[]> {
  const want = addresses.length * count;
  let held: Dialed[] = [];
  for (const started = Date.now(); Date.now() - started < WAIT; await sleep(100)) {
    held = await Promise.all(addresses.flatMap((a) => Array.from({ length: count }, () => dial(port, a))));
    if (held.filter((c) => c.code === 220).length === want) return held;
    for (const c of held) c.socket.destroy();
  }
  throw new Error(`not ${want} greeted within ${WAIT} ms: ${held.map((c) => c.line).find((l) => !l.startsWith('220'))}`);
}

/** One message from `localAddress` to the scene's inbox; the reply to the final dot, or the first refusal. */
async function deliverFrom(s: InboundScene, localAddress: string, subject: string): Promise<SmtpReply> {
  const c = await RawSmtp.open(s.t.smtpPort, '127.0.0.1', localAddress);
  try {
    const greeting = await c.read(WAIT);
    if (greeting.code !== 220) return greeting;
    await c.command('EHLO client.sender.example', WAIT);
    for (const line of ['MAIL FROM:<alice@sender.example>', `RCPT TO:<${s.inbox.address}>`, 'DATA']) {
      const reply = await c.command(line, WAIT);
      if (reply.code >= 400) return reply;
    }
    c.write(`From: alice@sender.example\r\nSubject: ${subject}\r\n\r\nhi\r\n.\r\n`);
    return await c.read(30_000);
  } finally {
    c.close();
  }
}

const refusedLines = (s: InboundScene, reason: RegExp) =>
  s.t.logs.filter((line) => line.includes('"smtp client refused"') && reason.test((JSON.parse(line) as { reason: string }).reason));

/** Refusals are logged once a minute: at least one line, and no more than the minutes begun since `started`. */
function loggedOnceAMinute(lines: string[], started: number): void {
  assert.ok(lines.length >= 1, 'the refusal is logged');
  assert.ok(lines.length <= Math.ceil((Date.now() - started + 1) / 60_000), `once a minute, not once a connection: ${lines.length} lines`);
}

// --- the defaults: smtp_max_clients 200 (40 reserved), 50 per network, 20 per address

const defaults = suite('defaults');
let d: InboundScene;
defaults.before(async () => {
  d = await startInboundScene();
});
defaults.after(() => d.stop());

defaults('11 addresses of one /24 x 20 connections: 50 greeted, the rest 421 4.7.0; another network still delivers', async () => {
  const port = d.t.smtpPort;
  const started = Date.now();
  const addresses = Array.from({ length: 11 }, (_, i) => `127.0.0.${10 + i}`);
  const held = await Promise.all(addresses.flatMap((a) => Array.from({ length: 20 }, () => dial(port, a))));
  const greeted = held.filter((c) => c.code === 220);
  const refused = held.filter((c) => c.code !== 220);
  assert.is(greeted.length, 50);
  assert.is(refused.length, 170);
  for (const c of refused) assert.match(c.line, /^421 4\.7\.0 mx\.mailwright\.test Too many connections from your (network 127\.0\.0\.0\/24 \(50 open\)|address \(20 open\)), try again later$/);
  assert.ok(refused.some((c) => c.line.includes('your network 127.0.0.0/24')));
  loggedOnceAMinute(refusedLines(d, /your network 127\.0\.0\.0\/24/), started);

  const reply = await deliverFrom(d, '127.0.1.5', 'from the next network');
  assert.is(reply.code, 250, reply.text);
  assert.is((await d.stored('subject = ?', 'from the next network')).length, 1);

  // Once the server has seen them close, the /24 has its 50 slots again: none leaked.
  for (const c of held) c.socket.destroy();
  const again = await holdGreeted(port, addresses.slice(0, 5), 10);
  const over = await dial(port, '127.0.0.30');
  assert.match(over.line, /^421 4\.7\.0 .* your network 127\.0\.0\.0\/24 \(50 open\)/);
  for (const c of [...again, over]) c.socket.destroy();
});

defaults.run();

// --- small limits: smtp_max_clients 30, of them 10 reserved; 10 per network, 10 per address

const reserved = suite('reserved');
let r: InboundScene;
reserved.before(async () => {
  r = await startInboundScene({
    env: {
      MAILWRIGHT_SMTP_MAX_CLIENTS: '30',
      MAILWRIGHT_SMTP_RESERVED_CLIENTS: '10',
      MAILWRIGHT_SMTP_MAX_CLIENTS_PER_NETWORK: '10',
      MAILWRIGHT_SMTP_MAX_CLIENTS_PER_IP: '10',
      MAILWRIGHT_SMTP_CONNECTION_RATE_PER_IP: '0',
    },
  });
});
reserved.after(() => r.stop());

reserved('strangers fill the unreserved slots: a new stranger gets 421 4.7.0, a sender known before still delivers', async () => {
  const port = r.t.smtpPort;
  const started = Date.now();
  // Two servers with a good history: each delivered a message before the flood.
  for (const from of ['127.0.2.7', '127.0.6.7']) assert.is((await deliverFrom(r, from, `before, from ${from}`)).code, 250);

  const strangers = await holdGreeted(port, ['127.0.3.1', '127.0.4.1'], 10);
  const stranger = await dial(port, '127.0.5.1');
  assert.is(stranger.line, '421 4.7.0 mx.mailwright.test Too many connections: the slots left are kept for servers that delivered mail here before, try again later');
  stranger.socket.destroy();

  // The known network, from the same address and from a neighbour in its /24.
  assert.is((await deliverFrom(r, '127.0.2.7', 'during, same address')).code, 250);
  const during = await deliverFrom(r, '127.0.2.8', 'during, its neighbour');
  assert.is(during.code, 250, during.text);
  assert.is((await r.stored("subject LIKE 'during, %'")).length, 2);

  // A known sender takes the reserved slots until all smtp_max_clients are used; then everyone gets 4.3.2.
  const known = await holdGreeted(port, ['127.0.2.9'], 10);
  for (const from of ['127.0.6.7', '127.0.7.1']) {
    const full = await dial(port, from);
    assert.is(full.line, '421 4.3.2 mx.mailwright.test All connection slots are busy, try again later');
    full.socket.destroy();
  }
  loggedOnceAMinute(refusedLines(r, /slots/), started);
  for (const c of [...strangers, ...known]) c.socket.destroy();
});

reserved.run();
