// serve started as a newcomer starts it (on a terminal, public_url not set, the API on a port of its own): the
// setup link it prints, the `ready` line and `mailwright setup link` all name the port the API listens on, and
// the link's page answers there (issue "a newcomer's first hour", point 3: the link a newcomer opens is live).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { CLI, ROOT, freePort, request, runCli, tempDir, testEnv } from './testkit/app.ts';
import { onTerminal, type Watched } from './testkit/terminal.ts';

const dataDir = tempDir();
let env: Record<string, string>;
let port: number;
let serve: Watched;

test.before(async () => {
  port = await freePort();
  const { MAILWRIGHT_PUBLIC_URL: _set, ...rest } = testEnv(dataDir, { MAILWRIGHT_HTTP_PORT: String(port) });
  env = rest;
  serve = onTerminal(`${CLI} serve`, { cwd: ROOT, env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env } });
});
test.after(async () => {
  if (serve.running()) await serve.stop(10_000);
  rmSync(dataDir, { recursive: true, force: true });
});

/** What `find` picks out of the terminal, once it is there (serve prints the link just after `ready`). */
async function shown<T>(what: string, find: (output: string) => T | undefined): Promise<T> {
  const until = Date.now() + 60_000;
  for (;;) {
    const found = find(serve.output());
    if (found !== undefined) return found;
    if (!serve.running() || Date.now() > until) throw new Error(`serve did not show ${what}:\n${serve.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function ready(): Promise<{ http: string; publicUrl: string }> {
  const line = await shown('ready', (out) => out.split('\n').find((l) => l.includes('"msg":"ready"')));
  return JSON.parse(line.trim());
}

test('the setup link printed on the terminal names the HTTP port, and its page answers there', async () => {
  const line = await ready();
  assert.is(line.http, `127.0.0.1:${port}`);
  assert.is(line.publicUrl, `http://localhost:${port}`, 'public_url follows http_port');
  const link = await shown('the setup link', (out) => /Open this link to create the owner of this box[^\n]*\n\s*(\S+)/.exec(out)?.[1]);
  assert.match(link, new RegExp(`^http://localhost:${port}/setup#[A-Za-z0-9_-]{43}$`));
  assert.is((await request(`http://localhost:${port}/setup`)).status, 200);
  assert.equal((await request(`http://localhost:${port}/healthz`)).body, { ok: true });
});

test('mailwright setup link, run with the same settings, names the same port', async () => {
  const res = await runCli(['setup', 'link'], env);
  assert.is(res.code, 0, res.stderr);
  assert.match(res.stdout, new RegExp(`^http://localhost:${port}/setup#[A-Za-z0-9_-]{43}\\n$`));
});

test('SIGTERM to the box on its terminal drains and exits 0', async () => {
  assert.is(await serve.stop(), 0);
  assert.match(serve.output(), /"msg":"stopped"/);
});

test.run();
