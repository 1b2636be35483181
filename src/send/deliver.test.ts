// Deliverer against real SMTP peers on loopback (the test kit's sink, smtp-server scripted per scenario, and two
// tiny `net` fakes for what no well-behaved server does) and the kit's DNS server: per-recipient outcomes
// (catalogue DUR-16/17), exact bytes (PROTO-02), STARTTLS as Postfix "may", pooling, 421, 452 and relay mode.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import net from 'node:net';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Resolver } from 'node:dns/promises';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerOptions } from 'smtp-server';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startSmtpSink, type SmtpSink } from '../testkit/smtp-sink.ts';
import { createResolver } from '../dns/resolver.ts';
import { systemClock } from '../clock.ts';
import { dialTcp } from './connect.ts';
import { Deliverer, type DelivererOptions, type OutboundMessage, type RecipientOutcome } from './deliver.ts';

// Every peer listens on the same port, each on its own loopback address, because the Deliverer has one MTA port.
// They sit in 127.0.77.0/24, a block no other test file uses, so files running alongside never hold our port there.
const SINK = '127.0.77.2';
const TLS_SINK = '127.0.77.3';
const DOWN_A = '127.0.77.4';
const DOWN_B = '127.0.77.5';
const BROKEN_TLS = '127.0.77.6';
const CLOSES_421 = '127.0.77.7';
const RELAY = '127.0.77.8';
const VERIFIED = '127.0.77.9';
const REFUSER = '127.0.77.10';
const PIPELINE_550 = '127.0.77.11';
const RCPT_LIMIT = '127.0.77.12';
const HAND = '127.0.77.13';
const SMALL = '127.0.77.14';
const SMTPS_RELAY = '127.0.77.15';
const HELO = 'out.mailwright.test';

interface Received {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  secure: boolean;
  user: string | null;
  sessionId: string;
}

let dns: DnsServer;
let resolver: Resolver;
let sink: SmtpSink;
let tlsSink: SmtpSink;
let port: number;
let certDir: string;
let verifiedCert: string;
const closers: Array<() => Promise<unknown>> = [];

/** An smtp-server of our own on the shared port, recording what it accepts. */
async function startServer(host: string, options: SMTPServerOptions): Promise<{ received: Received[]; sessions: string[] }> {
  const received: Received[] = [];
  const sessions: string[] = [];
  const server = new SMTPServer({
    logger: false,
    disableReverseLookup: true,
    authOptional: true,
    closeTimeout: 200,
    onConnect: (session, callback) => {
      sessions.push(session.id);
      callback();
    },
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          secure: session.secure,
          user: (session.user as string | undefined) ?? null,
          sessionId: session.id,
        });
        callback(null, 'Queued');
      });
    },
    ...options,
  });
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const c of [...server.connections]) c.close();
      }),
  );
  return { received, sessions };
}

/** A hand-scripted peer for behaviour smtp-server will not produce; `script` answers each line received. */
async function startFake(host: string, greeting: string, script: (line: string, socket: net.Socket) => void): Promise<void> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.write(`${greeting}\r\n`);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      let at: number;
      while ((at = buffered.indexOf('\r\n')) >= 0 && !socket.destroyed) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 2);
        script(line, socket);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
}

let broken: Awaited<ReturnType<typeof startServer>>;
let closing: Awaited<ReturnType<typeof startServer>>;
let relay: Awaited<ReturnType<typeof startServer>>;
let verified: Awaited<ReturnType<typeof startServer>>;
let limited: Awaited<ReturnType<typeof startServer>>;
let smtpsRelay: Awaited<ReturnType<typeof startServer>>;
const hand = { received: [] as string[], sessions: 0 };

test.before(async () => {
  dns = await startDnsServer();
  resolver = createResolver([dns.address], { timeoutMs: 500, tries: 1 });
  sink = await startSmtpSink({ host: SINK });
  port = sink.port;
  tlsSink = await startSmtpSink({ host: TLS_SINK, port, starttls: true });

  // Offers STARTTLS, answers 220, and then speaks only TLS 1.0, which Node's client refuses: the handshake breaks.
  broken = await startServer(BROKEN_TLS, { minVersion: 'TLSv1', maxVersion: 'TLSv1', disabledCommands: ['AUTH'] });

  // Catalogue RES-13: a server that closes with 421 instead of taking a second message on a connection.
  const mailsPerSession = new Map<string, number>();
  closing = await startServer(CLOSES_421, {
    disabledCommands: ['AUTH', 'STARTTLS'],
    onMailFrom: (_address, session, callback) => {
      const n = (mailsPerSession.get(session.id) ?? 0) + 1;
      mailsPerSession.set(session.id, n);
      if (n > 1) return callback(Object.assign(new Error('Too many messages on this connection'), { responseCode: 421 }));
      callback();
    },
  });

  // A smarthost: AUTH only after STARTTLS (smtp-server's default), no mail without it.
  relay = await startServer(RELAY, {
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: false,
    onAuth: (auth, _session, callback) => {
      if (auth.username === 'mailwright' && auth.password === 'p@ss:word') return callback(null, { user: auth.username });
      callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
  });

  certDir = await mkdtemp(join(tmpdir(), 'deliver-test-'));
  await promisify(execFile)('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(certDir, 'key.pem'), '-out', join(certDir, 'cert.pem'),
    '-days', '2', '-subj', '/CN=mx.verified.test', '-addext', 'subjectAltName=DNS:mx.verified.test',
  ]);
  verifiedCert = await readFile(join(certDir, 'cert.pem'), 'utf8');
  verified = await startServer(VERIFIED, { key: await readFile(join(certDir, 'key.pem'), 'utf8'), cert: verifiedCert, disabledCommands: ['AUTH'] });

  // Refuses every session in its greeting.
  await startServer(REFUSER, {
    disabledCommands: ['AUTH', 'STARTTLS'],
    onConnect: (_session, callback) => callback(Object.assign(new Error('5.7.1 Service refused to your network'), { responseCode: 554 })),
  });

  // Catalogue DUR-17 (mox client_test.go "outlook.com that has your IP blocklisted"): a pipelined 550, then a close.
  await startFake(PIPELINE_550, '220 fake ESMTP', (line, socket) => {
    const verb = line.slice(0, 4).toUpperCase();
    if (verb === 'EHLO') socket.write('250-fake\r\n250 PIPELINING\r\n');
    else if (verb === 'MAIL') socket.write('250 2.1.0 Ok\r\n');
    else if (verb === 'RCPT') socket.end('550 5.7.1 Your address is on our blocklist\r\n');
    else socket.write('502 5.5.1 Not here\r\n');
  });

  // RFC 5321 4.5.3.1.10 and catalogue RES-13: two recipients per transaction, 452 for the rest.
  const rcptsPerTransaction = new Map<string, number>();
  limited = await startServer(RCPT_LIMIT, {
    disabledCommands: ['AUTH', 'STARTTLS'],
    onMailFrom: (_address, session, callback) => {
      rcptsPerTransaction.set(session.id, 0);
      callback();
    },
    onRcptTo: (_address, session, callback) => {
      const n = (rcptsPerTransaction.get(session.id) ?? 0) + 1;
      rcptsPerTransaction.set(session.id, n);
      if (n > 2) return callback(Object.assign(new Error('4.5.3 Too many recipients'), { responseCode: 452 }));
      callback();
    },
  });

  // No PIPELINING, STARTTLS offered but refused with 454, and a connection's second MAIL FROM is met by a drop.
  const state = new WeakMap<net.Socket, { mails: number; data: string[] | null }>();
  await startFake(HAND, '220 hand ESMTP', (line, socket) => {
    let conn = state.get(socket);
    if (!conn) {
      hand.sessions++;
      conn = { mails: 0, data: null };
      state.set(socket, conn);
    }
    if (conn.data) {
      if (line !== '.') return void conn.data.push(line.startsWith('.') ? line.slice(1) : line);
      hand.received.push(conn.data.join('\r\n') + '\r\n');
      conn.data = null;
      return void socket.write('250 2.0.0 Queued\r\n');
    }
    const verb = line.slice(0, 4).toUpperCase();
    if (verb === 'EHLO') socket.write('250-hand\r\n250 STARTTLS\r\n');
    else if (verb === 'STAR') socket.write('454 4.7.0 TLS not available due to local problem\r\n');
    else if (verb === 'MAIL' && ++conn.mails === 2) socket.destroy();
    else if (verb === 'MAIL' || verb === 'RCPT' || verb === 'RSET') socket.write('250 2.0.0 Ok\r\n');
    else if (verb === 'DATA') {
      conn.data = [];
      socket.write('354 Go ahead\r\n');
    } else if (verb === 'QUIT') socket.end('221 2.0.0 Bye\r\n');
    else socket.write('502 5.5.1 Not here\r\n');
  });

  await startServer(SMALL, { size: 1000, disabledCommands: ['AUTH', 'STARTTLS'] });
  // Implicit TLS (RFC 8314) with smtp-server's own certificate; AUTH is allowed at once on a secure socket.
  smtpsRelay = await startServer(SMTPS_RELAY, {
    secure: true,
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: false,
    onAuth: (auth, _session, callback) => {
      if (auth.username === 'mailwright' && auth.password === 'tls-only') return callback(null, { user: auth.username });
      callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
  });

  dns.addZone('test');
  const mx = (domain: string, ...hosts: Array<[number, string]>) => {
    for (const [preference, exchange] of hosts) dns.add(domain, 'MX', { preference, exchange });
  };
  const a = (host: string, ip: string) => dns.add(host, 'A', ip);
  a('mx.sink.test', SINK);
  a('mx.tls.test', TLS_SINK);
  a('mx.down-a.test', DOWN_A);
  a('mx.down-b.test', DOWN_B);
  a('mx.broken-tls.test', BROKEN_TLS);
  a('mx.closing.test', CLOSES_421);
  a('relay.example.test', RELAY);
  a('mx.verified.test', VERIFIED);
  a('other-name.verified.test', VERIFIED);
  a('mx.refuser.test', REFUSER);
  a('mx.pipeline.test', PIPELINE_550);
  a('mx.limited.test', RCPT_LIMIT);
  mx('sink.test', [10, 'mx.sink.test']);
  mx('tls.test', [10, 'mx.tls.test']);
  mx('fallback.test', [10, 'mx.down-a.test'], [20, 'mx.sink.test']);
  mx('alldown.test', [10, 'mx.down-a.test'], [20, 'mx.down-b.test']);
  mx('brokentls.test', [10, 'mx.broken-tls.test']);
  mx('closing.test', [10, 'mx.closing.test']);
  mx('verified.test', [10, 'mx.verified.test']);
  mx('misnamed.test', [10, 'other-name.verified.test']);
  mx('refused.test', [10, 'mx.refuser.test'], [20, 'mx.sink.test']);
  mx('pipeline.test', [10, 'mx.pipeline.test']);
  mx('limited.test', [10, 'mx.limited.test']);
  mx('nullmx.test', [0, '.']);
  a('mx.hand.test', HAND);
  a('mx.small.test', SMALL);
  mx('hand.test', [10, 'mx.hand.test']);
  mx('small.test', [10, 'mx.small.test']);
  dns.fail('servfail.test', 'MX', 'SERVFAIL');
});

test.after(async () => {
  for (const close of closers) await close();
  await Promise.all([sink.close(), tlsSink.close(), dns.close()]);
  await rm(certDir, { recursive: true, force: true });
});

test.before.each(() => {
  sink.clear();
  tlsSink.clear();
});

function deliverer(extra: Partial<DelivererOptions> = {}): Deliverer {
  return new Deliverer({ resolver, dial: dialTcp, clock: systemClock, heloName: HELO, port, allowPrivate: true, connectTimeoutMs: 3000, socketTimeoutMs: 5000, ...extra });
}

async function deliver(domain: string, messages: OutboundMessage[], extra: Partial<DelivererOptions> = {}): Promise<RecipientOutcome[]> {
  const d = deliverer(extra);
  try {
    return await d.deliver(domain, messages);
  } finally {
    await d.close();
  }
}

let seq = 0;
function message(recipients: string[], body = 'Hello there.\r\n', from = 'bounces+x@bounces.example.test'): OutboundMessage {
  const id = `msg_${++seq}`;
  const raw = Buffer.from(`From: Sender <sender@example.test>\r\nTo: ${recipients.join(', ')}\r\nSubject: test ${id}\r\nMessage-ID: <${id}@example.test>\r\n\r\n${body}`);
  return { id, envelopeFrom: from, recipients, raw };
}

async function eventually(check: () => boolean, message: string, timeoutMs = 1000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.unreachable(message);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function byRecipient(outcomes: RecipientOutcome[]): Record<string, RecipientOutcome> {
  return Object.fromEntries(outcomes.map((o) => [o.recipient, o]));
}

test('a message arrives with its exact envelope and exact bytes', async () => {
  const m = message(['alice@sink.test', 'Bob@sink.test'], 'Caf\xc3\xa9 au lait\r\nsecond line\r\n');
  const outcomes = await deliver('sink.test', [m]);
  assert.is(sink.messages.length, 1);
  const got = sink.messages[0]!;
  assert.is(got.mailFrom, 'bounces+x@bounces.example.test');
  assert.equal(got.rcptTo, ['alice@sink.test', 'Bob@sink.test']);
  assert.ok(got.raw.equals(m.raw), `bytes differ:\n${JSON.stringify(got.raw.toString('latin1'))}\n${JSON.stringify(m.raw.toString('latin1'))}`);
  assert.is(got.helo, HELO);
  assert.is(outcomes.length, 2);
  for (const o of outcomes) {
    assert.is(o.messageId, m.id);
    assert.is(o.result, 'delivered');
    assert.is(o.code, 250);
    assert.ok(o.response.startsWith('250'), o.response);
    assert.is(o.mx, 'mx.sink.test');
    assert.is(o.tls, false);
  }
  assert.equal(outcomes.map((o) => o.recipient), ['alice@sink.test', 'Bob@sink.test']);
});

test('the null sender goes out as MAIL FROM:<>', async () => {
  const outcomes = await deliver('sink.test', [message(['alice@sink.test'], 'DSN\r\n', '')]);
  assert.is(outcomes[0]!.result, 'delivered');
  assert.is(sink.messages[0]!.mailFrom, '');
});

test('lines starting with a dot and a lone dot line arrive intact, as one message (catalogue PROTO-02)', async () => {
  const body = '.leading dot\r\n..two dots\r\n.\r\nafter the lone dot\r\n.\r\nMAIL FROM:<evil@example.test>\r\n.';
  const m = message(['alice@sink.test'], `${body}\r\n`);
  const outcomes = await deliver('sink.test', [m]);
  assert.is(outcomes[0]!.result, 'delivered');
  assert.is(sink.messages.length, 1);
  assert.ok(sink.messages[0]!.raw.equals(m.raw), JSON.stringify(sink.messages[0]!.raw.toString('latin1')));
});

test('550 for one of two recipients: one delivered, one bounced with the reply (catalogue DUR-16)', async () => {
  sink.replyTo('nobody@sink.test', { code: 550, message: '5.1.1 No such user here' });
  const outcomes = byRecipient(await deliver('sink.test', [message(['alice@sink.test', 'nobody@sink.test'])]));
  assert.is(outcomes['alice@sink.test']!.result, 'delivered');
  const bounced = outcomes['nobody@sink.test']!;
  assert.is(bounced.result, 'bounced');
  assert.is(bounced.code, 550);
  assert.is(bounced.enhanced, '5.1.1');
  assert.ok(bounced.response.includes('No such user here'), bounced.response);
  assert.is(bounced.mx, 'mx.sink.test');
  assert.equal(sink.messages.map((m) => m.rcptTo), [['alice@sink.test']]);
});

test('451 at RCPT defers that recipient only', async () => {
  sink.replyTo('later@sink.test', { code: 451, message: '4.3.0 Try again later' });
  const outcomes = byRecipient(await deliver('sink.test', [message(['alice@sink.test', 'later@sink.test'])]));
  assert.is(outcomes['alice@sink.test']!.result, 'delivered');
  assert.is(outcomes['later@sink.test']!.result, 'deferred');
  assert.is(outcomes['later@sink.test']!.code, 451);
  assert.ok(outcomes['later@sink.test']!.response.includes('Try again later'));
});

test('452 for the 3rd of 5 recipients: sent again at once in a second transaction carrying only it (RFC 5321 4.5.3.1.10)', async () => {
  const rcpts = ['r1@sink.test', 'r2@sink.test', 'r3@sink.test', 'r4@sink.test', 'r5@sink.test'];
  sink.replyTo('r3@sink.test', { code: 452, message: '4.5.3 Too many recipients' });
  // The server's limit is per transaction: once the first one is done, r3 is welcome.
  void sink.waitForMessages(1).then(() => sink.replyTo('r3@sink.test', { code: 250 }));
  const outcomes = await deliver('sink.test', [message(rcpts)]);
  assert.equal(outcomes.map((o) => o.result), ['delivered', 'delivered', 'delivered', 'delivered', 'delivered']);
  assert.equal(sink.messages.map((m) => m.rcptTo), [['r1@sink.test', 'r2@sink.test', 'r4@sink.test', 'r5@sink.test'], ['r3@sink.test']]);
  assert.is(sink.messages[0]!.sessionId, sink.messages[1]!.sessionId);
  assert.ok(sink.messages[1]!.raw.equals(sink.messages[0]!.raw));
});

test('a server that takes two recipients per transaction gets 5 recipients in three transactions (catalogue RES-13)', async () => {
  const rcpts = ['r1@limited.test', 'r2@limited.test', 'r3@limited.test', 'r4@limited.test', 'r5@limited.test'];
  const before = limited.received.length;
  const outcomes = await deliver('limited.test', [message(rcpts)]);
  assert.equal(outcomes.map((o) => o.result), ['delivered', 'delivered', 'delivered', 'delivered', 'delivered']);
  assert.equal(limited.received.slice(before).map((m) => m.rcptTo), [['r1@limited.test', 'r2@limited.test'], ['r3@limited.test', 'r4@limited.test'], ['r5@limited.test']]);
});

test('452 that makes no progress is deferred, not repeated', async () => {
  sink.replyTo('full@sink.test', { code: 452, message: '4.2.2 Mailbox full' });
  const outcomes = byRecipient(await deliver('sink.test', [message(['alice@sink.test', 'full@sink.test'])]));
  assert.is(outcomes['alice@sink.test']!.result, 'delivered');
  assert.is(outcomes['full@sink.test']!.result, 'deferred');
  assert.is(outcomes['full@sink.test']!.code, 452);
  assert.is(sink.messages.length, 1);
  // Refused alone in the second transaction, MAIL FROM included: nothing more was tried after that.
  assert.is(sink.sessions.length, 1);
});

test('552 at RCPT is read as 452 (RFC 5321 4.5.3.1.10): deferred, not bounced (catalogue DUR-17)', async () => {
  sink.replyTo('many@sink.test', { code: 552, message: '5.5.3 Too many recipients' });
  const outcomes = byRecipient(await deliver('sink.test', [message(['alice@sink.test', 'many@sink.test'])]));
  assert.is(outcomes['alice@sink.test']!.result, 'delivered');
  assert.equal([outcomes['many@sink.test']!.result, outcomes['many@sink.test']!.code], ['deferred', 552]);
});

test('DATA 554 bounces every accepted recipient; a recipient refused at RCPT keeps its own reply', async () => {
  sink.replyToData({ code: 554, message: '5.6.0 Content rejected' });
  sink.replyTo('later@sink.test', { code: 450, message: '4.2.1 Busy' });
  const outcomes = byRecipient(await deliver('sink.test', [message(['alice@sink.test', 'bob@sink.test', 'later@sink.test'])]));
  for (const r of ['alice@sink.test', 'bob@sink.test']) {
    assert.is(outcomes[r]!.result, 'bounced', r);
    assert.is(outcomes[r]!.code, 554);
    assert.ok(outcomes[r]!.response.includes('Content rejected'));
  }
  assert.is(outcomes['later@sink.test']!.result, 'deferred');
  assert.is(outcomes['later@sink.test']!.code, 450);
  assert.is(sink.messages.length, 0);
});

test('DATA 451 defers every recipient, and the session stays usable for the next message', async () => {
  sink.replyToData({ code: 451, message: '4.3.0 Queue busy' });
  const first = message(['alice@sink.test', 'bob@sink.test']);
  const d = deliverer({ maxConnectionsPerHost: 1 });
  try {
    const outcomes = await d.deliver('sink.test', [first]);
    assert.equal(outcomes.map((o) => [o.result, o.code]), [['deferred', 451], ['deferred', 451]]);
    sink.replyToData(null);
    const again = await d.deliver('sink.test', [message(['carol@sink.test'])]);
    assert.is(again[0]!.result, 'delivered');
    assert.is(sink.sessions.length, 1);
  } finally {
    await d.close();
  }
});

test('MAIL FROM refused with 5xx bounces the message, with 4xx defers it', async () => {
  sink.replyToMail({ code: 553, message: '5.1.8 Sender domain refused' });
  const bounced = await deliver('sink.test', [message(['alice@sink.test'])]);
  assert.equal([bounced[0]!.result, bounced[0]!.code, bounced[0]!.enhanced], ['bounced', 553, '5.1.8']);
  sink.replyToMail({ code: 451, message: '4.7.1 Greylisted' });
  const deferred = await deliver('sink.test', [message(['alice@sink.test'])]);
  assert.equal([deferred[0]!.result, deferred[0]!.code], ['deferred', 451]);
});

test('first MX down (nothing listening): the second MX is used', async () => {
  const outcomes = await deliver('fallback.test', [message(['alice@fallback.test'])]);
  assert.is(outcomes[0]!.result, 'delivered');
  assert.is(outcomes[0]!.mx, 'mx.sink.test');
  assert.is(sink.messages.length, 1);
});

test('an MX that refuses in its greeting (554) is skipped for the next one', async () => {
  const outcomes = await deliver('refused.test', [message(['alice@refused.test'])]);
  assert.is(outcomes[0]!.result, 'delivered');
  assert.is(outcomes[0]!.mx, 'mx.sink.test');
});

test('all MX down: every recipient deferred with the last error and the last host tried', async () => {
  const outcomes = await deliver('alldown.test', [message(['a@alldown.test', 'b@alldown.test']), message(['c@alldown.test'])]);
  assert.is(outcomes.length, 3);
  for (const o of outcomes) {
    assert.is(o.result, 'deferred');
    assert.is(o.code, null);
    assert.is(o.mx, 'mx.down-b.test');
    assert.ok(o.response.includes('ECONNREFUSED') && o.response.includes(DOWN_B), o.response);
  }
});

test('STARTTLS with a self-signed certificate: delivered encrypted, recorded as not verified', async () => {
  const outcomes = await deliver('tls.test', [message(['alice@tls.test'])]);
  assert.is(outcomes[0]!.result, 'delivered');
  assert.is(outcomes[0]!.tls, true);
  assert.is(outcomes[0]!.tlsVerified, false);
  assert.ok(outcomes[0]!.tlsError?.includes('mx.tls.test'));
  assert.is(tlsSink.messages.length, 1);
  assert.is(tlsSink.messages[0]!.secure, true);
});

test('STARTTLS with a certificate for the MX name from a trusted CA is recorded as verified; another name is not', async () => {
  const good = await deliver('verified.test', [message(['alice@verified.test'])], { tlsCa: verifiedCert });
  assert.equal([good[0]!.result, good[0]!.tls, good[0]!.tlsVerified, good[0]!.tlsError], ['delivered', true, true, null]);
  const wrongName = await deliver('misnamed.test', [message(['alice@misnamed.test'])], { tlsCa: verifiedCert });
  assert.equal([wrongName[0]!.result, wrongName[0]!.tls, wrongName[0]!.tlsVerified], ['delivered', true, false]);
  // The right name on a certificate nobody vouches for is not verified either.
  const untrusted = await deliver('verified.test', [message(['bob@verified.test'])]);
  assert.equal([untrusted[0]!.result, untrusted[0]!.tls, untrusted[0]!.tlsVerified], ['delivered', true, false]);
  assert.ok(untrusted[0]!.tlsError?.includes('self-signed') || untrusted[0]!.tlsError?.includes('SELF_SIGNED'), String(untrusted[0]!.tlsError));
  assert.ok(verified.received.every((m) => m.secure));
  assert.is(verified.received.length, 3);
});

test('a STARTTLS handshake that breaks: delivered in plaintext on a new connection, with the reason', async () => {
  const before = { received: broken.received.length, sessions: broken.sessions.length };
  const outcomes = await deliver('brokentls.test', [message(['alice@brokentls.test'])]);
  assert.is(outcomes[0]!.result, 'delivered');
  assert.is(outcomes[0]!.tls, false);
  assert.is(outcomes[0]!.tlsVerified, false);
  assert.ok(outcomes[0]!.tlsError?.startsWith('STARTTLS failed'), String(outcomes[0]!.tlsError));
  assert.is(broken.received.length - before.received, 1);
  assert.is(broken.received.at(-1)!.secure, false);
  assert.is(broken.sessions.length - before.sessions, 2);
});

test('50 messages to one host share at most maxConnectionsPerHost connections', async () => {
  const messages = Array.from({ length: 50 }, (_, i) => message([`user${i}@sink.test`]));
  const outcomes = await deliver('sink.test', messages, { maxConnectionsPerHost: 3 });
  assert.is(outcomes.filter((o) => o.result === 'delivered').length, 50);
  assert.is(sink.messages.length, 50);
  // Spread: all three slots were opened at once; reused: far fewer connections than messages.
  assert.is(sink.sessions.length, 3);
  assert.is(sink.sessions.reduce((n, s) => n + s.messages, 0), 50);
});

test('concurrent deliver() calls to one host stay within the per-host limit together', async () => {
  const d = deliverer({ maxConnectionsPerHost: 2 });
  try {
    const batch = (tag: string) => Array.from({ length: 20 }, (_, i) => message([`${tag}${i}@sink.test`]));
    const results = await Promise.all([d.deliver('sink.test', batch('a')), d.deliver('sink.test', batch('b')), d.deliver('fallback.test', batch('c'))]);
    assert.is(results.flat().filter((o) => o.result === 'delivered').length, 60);
    assert.ok(sink.sessions.length <= 2, `${sink.sessions.length} sessions`);
  } finally {
    await d.close();
  }
});

test('an idle connection is reused by the next deliver() within idleMs, then QUIT', async () => {
  const d = deliverer({ idleMs: 300 });
  try {
    await d.deliver('sink.test', [message(['alice@sink.test'])]);
    await d.deliver('sink.test', [message(['bob@sink.test'])]);
    assert.is(sink.sessions.length, 1);
    assert.is(sink.sessions[0]!.messages, 2);
    const idleSince = Date.now();
    await eventually(() => sink.sessions[0]!.closedAt !== null, 'still open long after idleMs', 3000);
    assert.ok(sink.sessions[0]!.closedAt! - idleSince >= 250, 'closed before idleMs');
    await d.deliver('sink.test', [message(['carol@sink.test'])]);
    assert.is(sink.sessions.length, 2);
  } finally {
    await d.close();
  }
  // The sink hears of the close a moment after our side is done with it.
  await eventually(() => sink.sessions.every((s) => s.closedAt !== null), 'close() left a connection open');
});

test('a 421 after the first message on a session: that message deferred, later ones on a new connection', async () => {
  const before = { received: closing.received.length, sessions: closing.sessions.length };
  const messages = [message(['m1@closing.test']), message(['m2@closing.test']), message(['m3@closing.test'])];
  const outcomes = await deliver('closing.test', messages, { maxConnectionsPerHost: 1 });
  assert.equal(outcomes.map((o) => [o.recipient, o.result, o.code]), [
    ['m1@closing.test', 'delivered', 250],
    ['m2@closing.test', 'deferred', 421],
    ['m3@closing.test', 'delivered', 250],
  ]);
  assert.equal(closing.received.slice(before.received).map((m) => m.rcptTo[0]), ['m1@closing.test', 'm3@closing.test']);
  assert.is(closing.sessions.length - before.sessions, 2);
});

test('a pooled connection answered with 421 is given up and the message tried once more on a new connection', async () => {
  const before = { received: closing.received.length, sessions: closing.sessions.length };
  const d = deliverer({ maxConnectionsPerHost: 1 });
  try {
    await d.deliver('closing.test', [message(['p1@closing.test'])]);
    const outcomes = await d.deliver('closing.test', [message(['p2@closing.test'])]);
    assert.equal(outcomes.map((o) => [o.recipient, o.result]), [['p2@closing.test', 'delivered']]);
  } finally {
    await d.close();
  }
  assert.equal(closing.received.slice(before.received).map((m) => m.rcptTo[0]), ['p1@closing.test', 'p2@closing.test']);
  assert.is(closing.sessions.length - before.sessions, 2);
});

test('a pipelined 550 and then a closed connection is still a bounce for that recipient (catalogue DUR-17)', async () => {
  const outcomes = await deliver('pipeline.test', [message(['listed@pipeline.test'])]);
  assert.equal([outcomes[0]!.result, outcomes[0]!.code, outcomes[0]!.enhanced], ['bounced', 550, '5.7.1']);
  assert.ok(outcomes[0]!.response.includes('blocklist'));
});

test('relay mode: everything goes to the smarthost with AUTH over STARTTLS, whatever the domain', async () => {
  const before = relay.received.length;
  const relayUrl = `smtp://mailwright:${encodeURIComponent('p@ss:word')}@relay.example.test:${port}`;
  // No DNS at all for these domains: the relay is the only route, and it is exempt from the private rule.
  const outcomes = await deliver('no-such-domain.test', [message(['x@no-such-domain.test', 'y@elsewhere.test']), message(['z@third.test'])], { relayUrl, allowPrivate: false });
  assert.equal(outcomes.map((o) => [o.result, o.mx, o.tls]), [
    ['delivered', 'relay.example.test', true],
    ['delivered', 'relay.example.test', true],
    ['delivered', 'relay.example.test', true],
  ]);
  const got = relay.received.slice(before);
  assert.equal(got.map((m) => m.rcptTo), [['x@no-such-domain.test', 'y@elsewhere.test'], ['z@third.test']]);
  assert.ok(got.every((m) => m.user === 'mailwright' && m.secure));
});

test('relay mode with wrong credentials defers everything and sends nothing', async () => {
  const before = relay.received.length;
  const relayUrl = `smtp://mailwright:wrong@relay.example.test:${port}`;
  const outcomes = await deliver('sink.test', [message(['alice@sink.test']), message(['bob@sink.test'])], { relayUrl });
  assert.is(outcomes.length, 2);
  for (const o of outcomes) {
    assert.is(o.result, 'deferred');
    assert.is(o.mx, 'relay.example.test');
    assert.ok(o.response.includes('credentials') && o.response.includes('535'), o.response);
  }
  assert.is(relay.received.length, before);
  assert.is(sink.messages.length, 0);
});

test('relay mode over smtps: implicit TLS and AUTH, with the relay given as an IP address', async () => {
  const before = smtpsRelay.received.length;
  const relayUrl = `smtps://mailwright:tls-only@${SMTPS_RELAY}:${port}`;
  const outcomes = await deliver('example.test', [message(['x@example.test'])], { relayUrl });
  assert.equal(outcomes.map((o) => [o.result, o.mx, o.tls, o.tlsVerified]), [['delivered', SMTPS_RELAY, true, false]]);
  const got = smtpsRelay.received.slice(before);
  assert.equal(got.map((m) => [m.rcptTo, m.user, m.secure]), [[['x@example.test'], 'mailwright', true]]);
});

test('[[relay]]: chosen by sender or recipient domain (with subdomains) in order, relay_url for the rest, else the MX', () => {
  const d = deliverer({
    relayUrl: `smtp://smarthost.test:${port}`,
    relays: [
      { match: [{ on: 'sender', domain: 'shop.test' }], url: `smtps://u:p@first.test`, tlsVerify: true },
      { match: [{ on: 'recipient', domain: 'outlook.test' }, { on: 'recipient', domain: 'hotmail.test' }], url: `smtp://second.test:2525`, tlsVerify: false },
      { match: [{ on: 'any' }], url: `smtp://third.test`, tlsVerify: true },
    ],
  });
  const via = (sender: string | null, recipient: string) => d.relayFor(sender, recipient)?.id ?? 'mx';
  assert.is(via('shop.test', 'outlook.test'), 'relay[0]');
  assert.is(via('News.Shop.TEST', 'x.test'), 'relay[0]');
  assert.is(via('myshop.test', 'eu.hotmail.test'), 'relay[1]');
  assert.is(via(null, 'outlook.test'), 'relay[1]');
  assert.is(via('other.test', 'x.test'), 'relay[2]');
  assert.equal({ ...d.relayFor('shop.test', 'x')!, pool: '' }, { id: 'relay[0]', pool: '', host: 'first.test', port: 465, secure: true, user: 'u', pass: 'p', requireTls: true, verifyTls: true });
  const fallback = deliverer({ relayUrl: `smtp://smarthost.test:${port}`, relays: [{ match: [{ on: 'sender', domain: 'shop.test' }], url: 'smtps://first.test', tlsVerify: true }] });
  assert.equal([fallback.relayFor('other.test', 'x.test')!.id, fallback.relayFor('other.test', 'x.test')!.requireTls], ['relay_url', false]);
  assert.is(deliverer({ relays: [{ match: [{ on: 'sender', domain: 'shop.test' }], url: 'smtps://first.test', tlsVerify: true }] }).relayFor('other.test', 'x.test'), null);
});

test('[[relay]] requires TLS: a relay without STARTTLS gets nothing, and the mail waits', async () => {
  const relays = [{ match: [{ on: 'any' as const }], url: `smtp://${SINK}:${port}`, tlsVerify: false }];
  const outcomes = await deliver('example.test', [message(['x@example.test'])], { relays });
  assert.equal(outcomes.map((o) => [o.result, o.mx]), [['deferred', SINK]]);
  assert.ok(/STARTTLS/.test(outcomes[0]!.response), outcomes[0]!.response);
  assert.is(sink.messages.length, 0);
});

test('[[relay]] verifies the certificate: a name it does not cover keeps credentials back; tls_verify = false or a matching one delivers', async () => {
  const url = `smtp://mailwright:${encodeURIComponent('p@ss:word')}@relay.example.test:${port}`;
  const before = relay.received.length;
  // smtp-server's built-in certificate names no relay.example.test and no CA of ours signed it.
  const refused = await deliver('example.test', [message(['x@example.test'])], { relays: [{ match: [{ on: 'any' }], url, tlsVerify: true }] });
  assert.is(refused[0]!.result, 'deferred');
  assert.ok(/certificate|self.signed|verify/i.test(refused[0]!.response), refused[0]!.response);
  assert.is(relay.received.length, before);
  const unverified = await deliver('example.test', [message(['x@example.test'])], { relays: [{ match: [{ on: 'any' }], url, tlsVerify: false }] });
  assert.equal(unverified.map((o) => [o.result, o.tls, o.tlsVerified]), [['delivered', true, false]]);
  assert.equal(relay.received.slice(before).map((m) => [m.user, m.secure]), [['mailwright', true]]);
  // A certificate for the relay's name from a CA the box trusts.
  const verifiedRelay = await deliver('example.test', [message(['y@example.test'])], { relays: [{ match: [{ on: 'any' }], url: `smtp://mx.verified.test:${port}`, tlsVerify: true }], tlsCa: verifiedCert });
  assert.equal(verifiedRelay.map((o) => [o.result, o.mx, o.tls, o.tlsVerified]), [['delivered', 'mx.verified.test', true, true]]);
});

test('a refused STARTTLS (454) is recorded, and the message goes in plaintext on the same connection', async () => {
  const before = { received: hand.received.length, sessions: hand.sessions };
  const m = message(['alice@hand.test'], '.dot line\r\nend\r\n');
  const outcomes = await deliver('hand.test', [m]);
  assert.equal([outcomes[0]!.result, outcomes[0]!.tls, outcomes[0]!.tlsVerified], ['delivered', false, false]);
  assert.is(outcomes[0]!.tlsError, 'STARTTLS refused: 454 4.7.0 TLS not available due to local problem');
  assert.is(hand.received.at(-1), m.raw.toString('latin1'));
  assert.equal([hand.received.length - before.received, hand.sessions - before.sessions], [1, 1]);
});

test('a drop mid-session defers the message in flight; a pooled connection found dropped is retried on a new one', async () => {
  const d = deliverer({ maxConnectionsPerHost: 1 });
  try {
    const before = hand.sessions;
    // One acquisition: the second transaction dies with the connection, and nothing says it was not received.
    const fresh = await d.deliver('hand.test', [message(['m1@hand.test']), message(['m2@hand.test'])]);
    assert.equal(fresh.map((o) => [o.recipient, o.result, o.code]), [['m1@hand.test', 'delivered', 250], ['m2@hand.test', 'deferred', null]]);
    assert.ok(fresh[1]!.response.includes('closed'), fresh[1]!.response);
    assert.is(hand.sessions - before, 1);
    // Pooled from the last call: the same drop before any reply means the server had let the connection go.
    await d.deliver('hand.test', [message(['m3@hand.test'])]);
    const reused = await d.deliver('hand.test', [message(['m4@hand.test'])]);
    assert.equal(reused.map((o) => [o.recipient, o.result]), [['m4@hand.test', 'delivered']]);
    assert.is(hand.sessions - before, 3);
  } finally {
    await d.close();
  }
});

test('a message larger than the SIZE the server advertises bounces with 5.3.4 (RFC 1870)', async () => {
  const outcomes = await deliver('small.test', [message(['a@small.test'], 'x'.repeat(2000) + '\r\n'), message(['b@small.test'])]);
  assert.equal(outcomes.map((o) => [o.recipient, o.result, o.code]), [['a@small.test', 'bounced', null], ['b@small.test', 'delivered', 250]]);
  assert.is(outcomes[0]!.enhanced, '5.3.4');
  assert.ok(outcomes[0]!.response.includes('1000'), outcomes[0]!.response);
});

test('an MX on a private address is refused unless allowPrivate (catalogue API-10c)', async () => {
  const outcomes = await deliver('sink.test', [message(['alice@sink.test'])], { allowPrivate: false });
  assert.is(outcomes[0]!.result, 'bounced');
  assert.is(outcomes[0]!.code, null);
  assert.is(outcomes[0]!.response, 'MX of sink.test resolves only to private addresses');
  assert.is(outcomes[0]!.mx, null);
  assert.is(sink.sessions.length, 0);
});

test('null MX bounces at once with 5.1.10; SERVFAIL defers; neither connects', async () => {
  const nul = await deliver('nullmx.test', [message(['a@nullmx.test'])]);
  assert.equal([nul[0]!.result, nul[0]!.code, nul[0]!.enhanced], ['bounced', null, '5.1.10']);
  const sf = await deliver('servfail.test', [message(['a@servfail.test'])]);
  assert.equal([sf[0]!.result, sf[0]!.enhanced], ['deferred', '4.4.3']);
  assert.is(sink.sessions.length + tlsSink.sessions.length, 0);
});

test('an invalid recipient bounces without reaching the wire; duplicates get one outcome', async () => {
  const m = message(['alice@sink.test', 'evil>@sink.test', 'alice@sink.test']);
  const outcomes = await deliver('sink.test', [m]);
  assert.equal(outcomes.map((o) => [o.recipient, o.result]), [['alice@sink.test', 'delivered'], ['evil>@sink.test', 'bounced']]);
  assert.equal(sink.messages.map((x) => x.rcptTo), [['alice@sink.test']]);
});

test.run();
