// `systemctl reload` (SIGHUP) beyond the certificate: a running serve takes the settings config/live.ts lists as
// live (a metrics token, the log level, relays when port 25 turns out blocked) and names the changed ones
// that wait for a restart. The certificate itself is src/smtp/reload.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { startAppProcess, tempDir, testEnv } from './testkit/app.ts';
import { startOutboundScene, eventually } from './testkit/outbound.ts';
import { loadConfig } from './config/config.ts';

const TOKEN = 'reload-test-token-0123456789';

test('SIGHUP takes a new metrics token and log level from the file, and names what waits for a restart', async () => {
  const dir = tempDir();
  const file = join(dir, 'mailwright.toml');
  writeFileSync(file, 'log_level = "info"\n');
  const env = testEnv(dir, { MAILWRIGHT_CONFIG: file });
  delete env.MAILWRIGHT_LOG_LEVEL; // the file decides
  const serve = await startAppProcess(env);
  try {
    const metrics = () => fetch(`${serve.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    const apiCall = () => fetch(`${serve.url}/api/v1/domains`).then((r) => r.status);
    const loudBefore = serve.output().length;
    assert.is((await metrics()).status, 200, 'no token yet: loopback may read it');
    assert.is(await apiCall(), 401);
    await eventually(() => serve.output().slice(loudBefore).includes('"msg":"http request"'), 5000, 'an access log line at info');

    writeFileSync(file, `log_level = "warn"\nmetrics_token = "${TOKEN}"\nmax_message_bytes = 1048576\n`);
    serve.child.kill('SIGHUP');
    const reloaded = await eventually(() => serve.output().split('\n').find((l) => l.includes('"msg":"reloaded the configuration"')), 10_000, 'the reload line');
    assert.equal(JSON.parse(reloaded).applied.sort(), ['log_level', 'metrics_token']);
    const later = serve.output().split('\n').find((l) => l.includes('take effect at the next restart'));
    assert.ok(later, serve.output());
    assert.equal(JSON.parse(later!).atRestart, ['max_message_bytes']);
    assert.not.ok(serve.output().includes(TOKEN), 'the token is never logged');

    const quietBefore = serve.output().length;
    assert.is((await fetch(`${serve.url}/metrics`)).status, 401, 'the token is required now');
    assert.is((await metrics()).status, 200);
    assert.is(await apiCall(), 401);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.not.ok(serve.output().slice(quietBefore).includes('"msg":"http request"'), 'warn: no access log lines');
  } finally {
    assert.is(await serve.stop(), 0);
  }
});

test('port 25 blocked: mail waits; a [[relay]] added and reloaded carries it', async () => {
  const carried: string[][] = [];
  const relay = new SMTPServer({
    authOptional: true,
    logger: false,
    onData: (stream, session, callback) => {
      stream.resume();
      stream.on('end', () => {
        carried.push(session.envelope.rcptTo.map((r) => r.address));
        callback();
      });
    },
  });
  relay.on('error', () => {});
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.5', () => resolve()));
  const relayPort = (relay.server.address() as AddressInfo).port;
  const s = await startOutboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '1s' } });
  try {
    await s.verifiedDomain('sender.test');
    s.routeTo('dest.test', '127.0.0.6'); // nothing listens there: the host "blocks" port 25
    const res = await s.send({ from: 'a@sender.test', to: 'x@dest.test', subject: 'hi', text: 'Hello.' });
    assert.is(res.status, 200, JSON.stringify(res.body));
    await eventually(async () => (await s.events(res.body.id)).some((e) => e.type === 'delivery_delayed'), 10_000, 'deferred');

    const relays = JSON.stringify([{ match: '*', url: `smtp://127.0.0.5:${relayPort}`, tls_verify: false }]);
    const changed = await s.t.running.reload(loadConfig({ ...s.t.env, MAILWRIGHT_RELAY: relays }));
    assert.equal(changed, { applied: ['relay'], atRestart: [] });
    await eventually(() => carried.some((r) => r.includes('x@dest.test')), 10_000, 'the relay carries the waiting mail');
    const delivered = await eventually(async () => (await s.events(res.body.id)).find((e) => e.type === 'delivered'), 10_000, 'delivered');
    assert.is(delivered.data.mx, '127.0.0.5');
    assert.is(s.sink.messages.length, 0);
  } finally {
    await s.stop();
    await new Promise<void>((resolve) => relay.close(() => resolve()));
  }
});

test.run();
