// The README's Quick start, run as written by an ordinary user on a fresh copy of the checkout (issue "a
// newcomer's first hour", point 3). The commands are read from the README's "## Quick start" section, never
// copied here: each line of its ```sh blocks, in order (scripts/quickstart-commands.ts sorts them). Not run, and
// said so in the output: lines the README marks as needing root (`# needs root`), and `npm test` (every test:
// CI runs it itself). `npm ci` is replaced by a link to this checkout's node_modules (no network, minutes
// saved); serve then builds the dashboard itself, as on a checkout whose build is missing. The README's example
// key (`re_...`) is filled with the key an earlier command printed. `npm start` must reach /healthz 200 and print
// the setup link, whose port must be the HTTP port and whose page must answer. QUICKSTART_README=<file> runs
// another text (a proposed README) instead.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../src/testkit/app.ts';
import { PLACEHOLDERS, quickStartSteps, stepsOf } from './quickstart-commands.ts';
import { newcomer, type Newcomer } from './newcomer.ts';
import type { Watched } from '../src/testkit/terminal.ts';

const README = process.env.QUICKSTART_README || join(ROOT, 'README.md');
const START_BUDGET_MS = 180_000;

test('lines are sorted as the README marks them', () => {
  assert.equal(stepsOf('npm ci && npm start     # install and run').map((s) => s.kind), ['install', 'serve']);
  assert.equal(stepsOf('MAILWRIGHT_SMTP_PORT=2525 npm start').map((s) => s.kind), ['serve']);
  assert.equal(stepsOf('sudo npm start   # needs root: port 25').map((s) => s.kind), ['skip']);
  assert.equal(stepsOf('npm test   # every test').map((s) => s.kind), ['skip']);
  const curl = stepsOf('curl -s http://127.0.0.1:8080/api/v1/keys -H "Authorization: Bearer re_..."   # the key #1')[0];
  assert.equal(curl, { kind: 'run', line: curl.line, command: 'curl -s http://127.0.0.1:8080/api/v1/keys -H "Authorization: Bearer re_..."', placeholders: ['re_...'] });
});

/** The `ready` log line's HTTP port, once serve prints it; throws with the output if serve exits first. */
async function readyPort(server: Watched, command: string): Promise<number> {
  const deadline = Date.now() + START_BUDGET_MS;
  while (Date.now() < deadline) {
    const ready = server.output().split('\n').find((l) => l.includes('"msg":"ready"'));
    if (ready) return Number((JSON.parse(ready.trim()) as { http: string }).http.split(':').pop());
    if (!server.running()) throw new Error(`"${command}" exited (code ${await server.exited()}) before it was ready:\n${server.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`"${command}" was not ready within ${START_BUDGET_MS / 1000} s:\n${server.output()}`);
}

async function checkServe(box: Newcomer, server: Watched, command: string): Promise<void> {
  const port = await readyPort(server, command);
  const health = await box.run(`curl -s -w ' %{http_code}' http://127.0.0.1:${port}/healthz`);
  assert.is(health.output.trim(), '{"ok":true} 200', `${command}: /healthz`);
  // On a terminal, a box without an owner prints its one-time link; the link must reach the box.
  const link = /Open this link to create the owner of this box[^\n]*\n\s*(\S+)/.exec(server.output())?.[1];
  assert.ok(link, `${command} prints the setup link on its terminal:\n${server.output()}`);
  const url = new URL(link);
  assert.is(url.port || '80', String(port), `the setup link ${link} names the port the API listens on (${port})`);
  assert.match(url.hash, /^#[A-Za-z0-9_-]{43}$/);
  const page = await box.run(`curl -s -o /dev/null -w '%{http_code}' '${url.origin}${url.pathname}'`);
  assert.is(page.output.trim(), '200', `the setup page ${url.origin}${url.pathname} answers`);
}

test("every Quick start command works as written for an ordinary user on a fresh copy", async () => {
  const steps = quickStartSteps(readFileSync(README, 'utf8'));
  const box = await newcomer();
  console.log(`  quick start of ${README}, run as ${box.user} in ${box.repo}${box.isolated ? ' (a network namespace of its own)' : ''}`);
  let server: Watched | null = null;
  const filled = new Map<string, string>();
  let served = 0;
  let ran = 0;
  try {
    for (const step of steps) {
      if (step.kind === 'skip') {
        console.log(`  not run: ${step.line}  (${step.reason})`);
        continue;
      }
      if (step.kind === 'install') {
        console.log(`  npm ci: node_modules linked from ${ROOT} instead  (${step.line})`);
        continue;
      }
      if (step.kind === 'serve') {
        if (server) await server.stop();
        console.log(`  started: ${step.command}`);
        server = box.start(step.command);
        await checkServe(box, server, step.command);
        served++;
        continue;
      }
      let command = step.command;
      for (const p of step.placeholders) {
        assert.ok(filled.has(p), `"${step.line}" uses ${p}, which no earlier command printed`);
        command = command.split(p).join(filled.get(p)!);
      }
      const res = await box.run(command);
      console.log(`  ran (exit ${res.code}): ${step.line}`);
      assert.is(res.code, 0, `"${step.line}" exited ${res.code}:\n${res.output}\n--- the box's output:\n${server?.output() ?? '(not started)'}`);
      if (/^curl\b/.test(command)) assert.not.match(res.output, /"error"\s*:/, `"${step.line}" answered an error: ${res.output}`);
      for (const p of PLACEHOLDERS) {
        const value = p === 're_...' ? /\bre_[A-Za-z0-9_-]{32}\b/.exec(res.output)?.[0] : undefined;
        if (value) filled.set(p, value);
      }
      ran++;
    }
    // A quick start every line of which was skipped would prove nothing.
    assert.ok(served > 0, 'the quick start starts the box at least once as an ordinary user');
    assert.ok(ran > 0, 'the quick start runs at least one command beside the box');
    if (server) {
      await server.stop();
      assert.match(server.output(), /"msg":"stopped"/, 'SIGTERM drains and stops the box');
    }
  } finally {
    await box.close();
  }
});

test.run();
