// A client's broken TLS is its noise, not our error (catalogue RES-04b's log side): garbage after STARTTLS, an
// old client with no protocol in common. Over real sockets to a whole app: no warning or error line, one debug
// line with the listener and the client's address, and mailwright_smtp_tls_handshake_failures_total moved once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SMTPServer } from 'smtp-server';
import { freePort, startTestApp, type TestApp } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { createLog } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import { reportListenerErrors } from './listener-errors.ts';

let t: TestApp;
test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_SUBMISSION_PORT: String(await freePort()) } });
});
test.after(() => t.stop());

const WAIT = 5_000;

interface Line {
  level: string;
  msg: string;
  listener?: string;
  ip?: string;
  code?: string;
}
const linesFrom = (start: number): Line[] => t.logs.slice(start).map((l) => JSON.parse(l) as Line);

/** The counter's value for `listener`, as GET /metrics shows it (loopback may scrape by default). */
async function failures(listener: string): Promise<number> {
  const res = await fetch(`${t.url}/metrics`);
  assert.is(res.status, 200);
  const line = (await res.text()).split('\n').find((l) => l.startsWith(`mailwright_smtp_tls_handshake_failures_total{listener="${listener}"} `));
  assert.ok(line, 'the counter is exposed from the start');
  return Number(line.split(' ')[1]);
}

/** A session from `localAddress` that has had its 220 to STARTTLS. */
async function afterStartTls(port: number, localAddress: string): Promise<RawSmtp> {
  const c = await RawSmtp.open(port, '127.0.0.1', localAddress);
  assert.is((await c.read(WAIT)).code, 220);
  assert.is((await c.command('EHLO scanner.example', WAIT)).code, 250);
  assert.is((await c.command('STARTTLS', WAIT)).code, 220);
  return c;
}

test('STARTTLS then garbage: no warning or error, one debug line with the address, the counter moves by one', async () => {
  const start = t.logs.length;
  const before = await failures('mx');
  const c = await afterStartTls(t.smtpPort, '127.0.0.40');
  c.write('GET / HTTP/1.0\r\nHost: scanner\r\n\r\n');
  await eventually(() => c.closed, WAIT, 'the server to close the connection');
  await eventually(async () => (await failures('mx')) > before, WAIT, 'the counter to move');
  assert.is(await failures('mx'), before + 1, 'one failure counted once');
  const lines = linesFrom(start);
  assert.equal(lines.filter((l) => l.level === 'error' || l.level === 'warn'), []);
  const debug = lines.filter((l) => l.msg === 'smtp tls handshake failed');
  assert.is(debug.length, 1);
  assert.is(debug[0].level, 'debug');
  assert.is(debug[0].listener, 'mx');
  assert.is(debug[0].ip, '127.0.0.40');
  assert.match(debug[0].code ?? '', /^ERR_SSL_/);
});

test('submission: an old client with no TLS version in common is counted for its listener, at debug', async () => {
  const start = t.logs.length;
  const before = await failures('submission');
  const mxBefore = await failures('mx');
  const c = await afterStartTls(t.submissionPort!, '127.0.0.41');
  const refused = await c.startTls(undefined, { minVersion: 'TLSv1', maxVersion: 'TLSv1' }).then(
    () => false,
    () => true,
  );
  assert.ok(refused, 'no TLS 1.0 session');
  c.close();
  await eventually(async () => (await failures('submission')) > before, WAIT, 'the counter to move');
  assert.is(await failures('submission'), before + 1);
  assert.is(await failures('mx'), mxBefore, 'the other listener counts its own');
  const lines = linesFrom(start);
  assert.equal(lines.filter((l) => l.level === 'error' || l.level === 'warn'), []);
  assert.equal(
    lines.filter((l) => l.msg === 'smtp tls handshake failed').map((l) => [l.level, l.listener, l.ip]),
    [['debug', 'submission', '127.0.0.41']],
  );
});

test('the listener still serves TLS: a proper client gets through STARTTLS and EHLO after the failures', async () => {
  const c = await afterStartTls(t.smtpPort, '127.0.0.40');
  await c.startTls();
  assert.is((await c.command('EHLO client.example', WAIT)).code, 250);
  c.close();
});

test('other errors keep their level: a client socket error a warning, an error of the listener itself an error', () => {
  const lines: Line[] = [];
  const log = createLog({ level: 'debug', write: (line) => lines.push(JSON.parse(line) as Line) });
  const metrics = new Metrics({ queueDepth: () => ({ byState: { queued: 0, sending: 0, deferred: 0 }, oldestAgeMs: 0 }), searchBacklog: () => 0 });
  const server = new SMTPServer({ logger: false });
  reportListenerErrors(server, log, metrics, 'mx');
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', remoteAddress: '::ffff:192.0.2.9' });
  server.emit('error', reset);
  server.emit('error', Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' }));
  const tls = Object.assign(new Error('wrong version number'), { code: 'ERR_SSL_WRONG_VERSION_NUMBER', library: 'SSL routines', remoteAddress: '192.0.2.10', meta: { protocol: 'smtp', stage: 'connect' } });
  server.emit('error', tls);
  server.emit('error', tls); // smtp-server emits a failed handshake twice
  assert.equal(
    lines.map((l) => [l.level, l.msg, l.ip]),
    [
      ['warn', 'smtp connection error', '192.0.2.9'],
      ['error', 'smtp listener error', undefined],
      ['debug', 'smtp tls handshake failed', '192.0.2.10'],
    ],
  );
});

test.run();
