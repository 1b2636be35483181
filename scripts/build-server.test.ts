// The plain JavaScript build: every server module becomes a .js file that names its neighbours as
// .js, and `serve` run from it, without tsx, starts its worker threads and delivers a signed message. It
// builds into a directory of its own beside lib/, so the lib/ other tests may be running is never touched.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT, tempDir, testEnv, request } from '../src/testkit/app.ts';
import { startDnsServer } from '../src/testkit/dns-server.ts';
import { startSmtpSink } from '../src/testkit/smtp-sink.ts';
import { eventually } from '../src/testkit/outbound.ts';
import { buildServer } from './build-server.ts';

const OUT = join(ROOT, `lib-test-${process.pid}`);
test.after(() => rmSync(OUT, { recursive: true, force: true }));

const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));

test('every server module is built, naming its neighbours as .js; tests, the test kit and the UI stay out', async () => {
  const count = await buildServer(OUT);
  const built = walk(OUT).map((f) => relative(OUT, f));
  assert.ok(count > 100, `${count} modules`);
  for (const m of ['main.js', 'app.js', 'db/writer-worker.js', 'send/sign-worker.js', 'receive/analyze-worker.js', 'threads/worker-boot.mjs', 'db/quick-check.mjs', 'db/migrations/0001_foundation.sql', '.built']) assert.ok(built.includes(m), `has ${m}`);
  assert.not.ok(built.some((f) => f.endsWith('.test.js') || f.startsWith('testkit/') || f.startsWith('dashboard/ui/')));
  for (const f of built.filter((x) => x.endsWith('.js'))) {
    assert.not.match(readFileSync(join(OUT, f), 'utf8'), /(?:from|import\(|new URL\()\s*["']\.{1,2}\/[^"']+\.ts["']/, `${f} names no .ts module`);
  }
});

test('serve from the build, without tsx, signs and delivers through its worker threads', async () => {
  const dns = await startDnsServer();
  const sink = await startSmtpSink({ host: '127.0.0.2' });
  const env = testEnv(tempDir(), { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_MTA_PORT: String(sink.port), MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true' });
  const node = (args: string[]) => spawnSync(process.execPath, [join(OUT, 'main.js'), ...args], { env: { PATH: process.env.PATH!, ...env }, encoding: 'utf8' });
  const key = node(['key', 'create', '--name', 'build']).stdout.trim();
  assert.match(key, /^re_/);
  const child = spawn(process.execPath, [join(OUT, 'main.js'), 'serve'], { env: { PATH: process.env.PATH!, ...env } });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  try {
    const ready = await eventually(() => output.split('\n').find((l) => l.includes('"msg":"ready"')), 20_000, 'ready');
    const api = `http://${JSON.parse(ready).http}/api/v1`;
    const domain = (await request(`${api}/domains`, { key, body: { name: 'built.test' } })).body;
    dns.add('mx.mailwright.test', 'A', '127.0.0.1');
    dns.publish(domain.records);
    assert.is((await request(`${api}/domains/${domain.id}/verify`, { method: 'POST', key })).body.status, 'verified');
    dns.set('dest.test', 'MX', [{ preference: 10, exchange: 'mx.dest.test' }]);
    dns.set('mx.dest.test', 'A', ['127.0.0.2']);
    const sent = await request(`${api}/emails`, { key, body: { from: 'a@built.test', to: 'b@dest.test', subject: 'built', text: 'Hello from lib/.' } });
    assert.is(sent.status, 200, JSON.stringify(sent.body));
    const got = await eventually(() => sink.messages.find((m) => m.rcptTo.includes('b@dest.test')), 15_000, 'delivered');
    assert.match(got.raw.toString('latin1'), /^DKIM-Signature:/);
    const threads = readdirSync(`/proc/${child.pid}/task`).map((t) => readFileSync(`/proc/${child.pid}/task/${t}/comm`, 'utf8').trim());
    for (const name of ['mw-writer', 'mw-sign']) assert.ok(threads.includes(name), `${name} runs: ${threads.join(',')}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await sink.close();
    await dns.close();
  }
  assert.ok(existsSync(join(OUT, '.built')));
});

test.run();
