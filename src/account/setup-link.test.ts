// The first start's one-time link (account/setup.ts) never reaches the log: serve, a real process, logs only that
// the box has no owner and which command prints the link; `mailwright setup link` prints one that creates the
// owner once, and each new one replaces the last. On a terminal (npm start), serve shows the link there itself.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, request, ROOT, runCli, startAppProcess, tempDir, testEnv } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';
import { servingProcesses } from '../db/serving.ts';

const dirs: string[] = [];
test.after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const newEnv = () => {
  const dir = tempDir();
  dirs.push(dir);
  return testEnv(dir, { MAILWRIGHT_RATE_LIMIT: '0' });
};

const LINK = /^http:\/\/localhost:8080\/setup#([A-Za-z0-9_-]{43})$/;
const owner = (token: string, email = 'owner@box.example') => ({ token, email, password: 'orbit lantern quietly 42' });

/** Whether any file under `dir` holds `text`: the database, its WAL, the TLS files. */
function anyFileHolds(dir: string, text: string): string | null {
  for (const name of readdirSync(dir, { recursive: true }).map(String)) {
    const path = join(dir, name);
    if (statSync(path).isFile() && readFileSync(path).includes(text)) return path;
  }
  return null;
}

test('serve logs no setup link; the CLI prints one that creates the owner once, and a newer one replaces it', async () => {
  const env = newEnv();
  const app = await startAppProcess(env);
  try {
    const started = app.output();
    assert.match(started, /"msg":"this box has no owner yet: run 'mailwright setup link' on this machine for the one-time link that creates one"/);
    assert.not.match(started, /setup#|setupUrl/);

    const first = await runCli(['setup', 'link'], env);
    assert.is(first.code, 0, first.stderr);
    const replaced = LINK.exec(first.stdout.trim())![1];
    assert.match(first.stderr, /works once, for 24 hours/);
    const second = await runCli(['setup', 'link'], env);
    const token = LINK.exec(second.stdout.trim())![1];
    assert.is.not(token, replaced);

    const api = `${app.url}/api/v1`;
    const old = await request(`${api}/setup`, { body: owner(replaced) });
    assert.equal([old.status, old.body.error.code], [403, 'invalid_setup_token'], 'the earlier link is replaced');
    assert.match(old.body.error.message, /Run 'mailwright setup link' on the box for a new one/);
    assert.equal((await request(`${api}/setup`)).body, { needed: true });
    const made = await request(`${api}/setup`, { body: owner(token) });
    assert.is(made.status, 201, JSON.stringify(made.body));
    assert.is(made.body.user.email, 'owner@box.example');
    const again = await request(`${api}/setup`, { body: owner(token, 'thief@evil.example') });
    assert.equal([again.status, again.body.error.code], [403, 'invalid_setup_token']);
    assert.equal((await request(`${api}/setup`)).body, { needed: false });

    const late = await runCli(['setup', 'link'], env);
    assert.is(late.code, 1);
    assert.is(late.stdout, '');
    assert.match(late.stderr, /this box has an owner already: sign in at http:\/\/localhost:8080\/login, or add a user with 'mailwright user add'/);

    assert.is(await app.stop(), 0);
    const log = app.output();
    for (const t of [replaced, token]) {
      assert.not.ok(log.includes(t), 'the log never holds a setup token');
      assert.is(anyFileHolds(env.MAILWRIGHT_DATA_DIR, t), null, 'only its hash is stored');
    }
  } finally {
    await app.stop('SIGKILL');
  }
});

test('setup link: usage errors', async () => {
  const env = newEnv();
  const wrong = await runCli(['setup'], env);
  assert.is(wrong.code, 2);
  assert.match(wrong.stderr, /use "setup link"/);
  const help = await runCli(['setup', '--help'], env);
  assert.is(help.code, 0);
  assert.match(help.stdout, /Usage: mailwright setup link/);
});

// util-linux script(1) gives serve a terminal for stderr, as `npm start` in a shell does; the log (stdout) goes
// to a file, as under systemd it goes to journald.
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
if (!hasScript) console.log('setup-link.test.ts: the terminal case skipped: script(1) is not installed');

if (hasScript) {
  test('serve on a terminal shows the link there, and only there', async () => {
    const env = newEnv();
    const logFile = join(env.MAILWRIGHT_DATA_DIR, '..', `${env.MAILWRIGHT_DATA_DIR.split('/').pop()}-serve.log`);
    dirs.push(logFile);
    const child = spawn('script', ['-qfec', `exec ${CLI} serve >${logFile}`, '/dev/null'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', SHELL: '/bin/sh', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let terminal = '';
    child.stdout.on('data', (d) => (terminal += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      const token = await eventually(() => /\/setup#([A-Za-z0-9_-]{43})/.exec(terminal)?.[1], 60_000, 'the link on the terminal');
      assert.match(terminal, /Open this link to create the owner of this box \(it works once, for 24 hours\):/);
      const ready = await eventually(() => readFileSync(logFile, 'utf8').split('\n').find((l) => l.includes('"msg":"ready"')), 30_000, 'serve ready');
      const made = await request(`http://${JSON.parse(ready).http}/api/v1/setup`, { body: owner(token) });
      assert.is(made.status, 201, JSON.stringify(made.body));
      const [pid] = servingProcesses(env.MAILWRIGHT_DATA_DIR);
      process.kill(pid, 'SIGTERM');
      assert.is(await exited, 0);
      const log = readFileSync(logFile, 'utf8');
      assert.match(log, /"msg":"this box has no owner yet/);
      assert.not.ok(log.includes(token), 'the log never holds the token');
    } finally {
      child.kill('SIGKILL');
      for (const pid of servingProcesses(env.MAILWRIGHT_DATA_DIR)) process.kill(pid, 'SIGKILL');
    }
  });
}

test.run();
