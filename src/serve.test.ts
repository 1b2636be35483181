// The appliance as a real process, started the way systemd and users start it (scripts/mailwright):
// health, a clean SIGTERM, start-up refusals with their messages and exit codes, and the CLI working on
// the same data directory while `serve` runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { CLI, ROOT, request, runCli, startAppProcess, tempDir, testEnv, type AppProcess } from './testkit/app.ts';

const dataDir = tempDir();
const env = testEnv(dataDir);
let server: AppProcess;

test.before(async () => {
  server = await startAppProcess(env);
});
test.after(async () => {
  if (server.child.exitCode === null) await server.stop('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

test('serve answers /healthz once SMTP and HTTP are up', async () => {
  const res = await request(`${server.url}/healthz`);
  assert.equal([res.status, res.body], [200, { ok: true }]);
  const greeting = await new Promise<string>((resolve, reject) => {
    import('node:net').then(({ connect }) => {
      const s = connect(server.smtpPort, '127.0.0.1');
      s.once('data', (d) => (s.destroy(), resolve(String(d))));
      s.once('error', reject);
    });
  });
  assert.match(greeting, /^220 mx\.mailwright\.test /);
});

test('the CLI works beside the running server: workspace, user, key', async () => {
  const ws = await runCli(['workspace', 'create', 'acme'], env);
  assert.is(ws.code, 0, ws.stderr);
  assert.match(ws.stdout, /^ws_[0-9A-Z]{26}\n$/);
  const dup = await runCli(['workspace', 'create', 'acme'], env);
  assert.is(dup.code, 1);
  assert.match(dup.stderr, /already exists/);

  const user = await runCli(['user', 'add', '--email', 'Owner@Acme.test', '--workspace', 'acme', '--password-stdin'], env, 'a long enough password\n');
  assert.is(user.code, 0, user.stderr);
  assert.match(user.stdout, /^usr_[0-9A-Z]{26}\n$/);
  const short = await runCli(['user', 'add', '--email', 'x@acme.test', '--password-stdin'], env, 'short\n');
  assert.is(short.code, 1);
  assert.match(short.stderr, /the passphrase must be at least 12 characters/);

  const key = await runCli(['key', 'create', '--name', 'ci', '--workspace', ws.stdout.trim()], env);
  assert.is(key.code, 0, key.stderr);
  assert.match(key.stdout, /^re_[A-Za-z0-9_-]{32}\n$/, 'prints only the key');

  const keys = await request(`${server.url}/api/v1/keys`, { key: key.stdout.trim() });
  assert.is(keys.status, 200, 'the running server accepts the key at once');
  assert.equal(keys.body.data.map((k: any) => k.name), ['ci']);

  const login = await request(`${server.url}/api/v1/auth/login`, { body: { email: 'owner@acme.test', password: 'a long enough password' } });
  assert.is(login.status, 200);
  assert.equal(login.body.workspace, { id: ws.stdout.trim(), name: 'acme' });

  const inDefault = await runCli(['key', 'create', '--name', 'default one'], env);
  assert.is(inDefault.code, 0, 'the default workspace exists from the first start');
});

test('every command has --help; unknown commands and missing options are usage errors', async () => {
  for (const args of [['--help'], ['serve', '--help'], ['workspace', '--help'], ['user', 'add', '--help'], ['key', 'create', '--help']]) {
    const res = await runCli(args, env);
    assert.is(res.code, 0, args.join(' '));
    assert.match(res.stdout, /^Usage: mailwright/, args.join(' '));
  }
  const unknown = await runCli(['frobnicate'], env);
  assert.is(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command "frobnicate"/);
  const noName = await runCli(['key', 'create'], env);
  assert.is(noName.code, 2);
  assert.match(noName.stderr, /--name/);
  const noStdin = await runCli(['user', 'add', '--email', 'a@b.test'], env);
  assert.is(noStdin.code, 2);
  assert.match(noStdin.stderr, /--password-stdin/);
});

test('SIGTERM drains and exits 0', async () => {
  const code = await server.stop('SIGTERM');
  assert.is(code, 0);
  assert.match(server.output(), /"msg":"stopped"/);
});

test('a bad config value stops start-up with exit 78 and a message naming the key', async () => {
  const res = await runCli(['serve'], { ...env, MAILWRIGHT_HTTP_PORT: 'eighty' });
  assert.is(res.code, 78);
  assert.match(res.stderr, /http_port \(MAILWRIGHT_HTTP_PORT\)/);
  assert.not.match(res.stderr, /    at /, 'no stack trace');
});

test('port 25 without the right to bind it names CAP_NET_BIND_SERVICE and MAILWRIGHT_SMTP_PORT', async () => {
  const dir = tempDir();
  const dirEnv = testEnv(dir, { MAILWRIGHT_SMTP_PORT: '25' });
  // The data directory must be nobody's own: one that others can write is refused before any port is tried.
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'nobody:nogroup', dir]);
  const unprivileged = process.getuid?.() === 0 ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', CLI] : [CLI];
  const res = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(unprivileged[0], [...unprivileged.slice(1), 'serve'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH!, HOME: '/tmp', ...dirEnv },
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.resume();
    child.on('close', (code) => resolve({ code, stderr }));
  });
  rmSync(dir, { recursive: true, force: true });
  assert.is(res.code, 78, res.stderr);
  assert.match(res.stderr, /permission denied/);
  assert.match(res.stderr, /CAP_NET_BIND_SERVICE/);
  assert.match(res.stderr, /MAILWRIGHT_SMTP_PORT/);
});

test.run();
