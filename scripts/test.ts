// `npm test`: type-checks the project, checks the import rules, then runs every *.test.ts under src/ and
// scripts/ in its own node process (uvu), a few at a time, those that start the box again with its store on
// PostgreSQL, and ends with the one line CI reads: `N passed, N failed`.
// `npm test -- keys auth` runs only the files whose path contains one of those words.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtIsFresh } from '../src/threads/built-module.ts';
import { buildServer } from './build-server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/**
 * A file that starts the box through the test kit (startTestApp, testStoreEnv, or the kit's outbound and Stripe
 * helpers built on them) or asks which store the suite runs on runs twice, the second time with every test app
 * on PostgreSQL (MAILWRIGHT_TEST_STORE=postgres, testkit/app.ts); a file that does neither would run the same
 * code twice.
 */
const USES_THE_STORE = /\b(startTestApp|testStoreEnv|TEST_STORE|sqliteOnly|ownStores)\b|testkit\/(outbound|stripe)\.ts/;
/**
 * A file none of whose tests is a plain `test(`: each is sqliteOnly or ownStores, so the PostgreSQL pass would
 * skip them all.
 */
const PLAIN_TEST = /(^|[^.\w])test\(/m;
/**
 * The dashboard's pages are the API's client: the API under them runs on both stores through its own files, so
 * of the browser tests only the main flows and search run on PostgreSQL too. The others (layout, keyboard,
 * settings pages) would show the same pages over the same answers, at 30-60 s of a browser each.
 */
const PAGES_ON_POSTGRES = ['src/dashboard/dashboard.test.ts', 'src/dashboard/search.test.ts'];
/**
 * Files that start the box to judge what happens before or beside the store: the listeners' answers to hostile
 * or oversized input, the process's memory and thread budgets, reloads, the build, log lines and DNS. The
 * store is not in what they judge, and a PostgreSQL pass would repeat them at 10-90 s each.
 */
const BESIDE_THE_STORE = new Set([
  'src/smtp/client-limits.test.ts',
  'src/smtp/listener-errors.test.ts',
  'src/smtp/reload.test.ts',
  'src/http/fuzz.test.ts',
  'src/http/fuzz-strangers.test.ts',
  'src/http/front-door.test.ts',
  'src/account/setup-flood.test.ts',
  'src/account/behind-proxy.test.ts',
  'src/drafts/upload-budget.test.ts',
  'src/webhooks/stream-limits.test.ts',
  'src/webhooks/stream-memory.test.ts',
  'src/templates/render-load.test.ts',
  'src/config/memory-profile.test.ts',
  'src/serve-reload.test.ts',
  'scripts/build-server.test.ts',
  'src/log.test.ts',
  'src/dns/resolver.test.ts',
  'src/dns/safe-fetch.test.ts',
]);
const onPostgres = (file: string, text: string) =>
  USES_THE_STORE.test(text) &&
  PLAIN_TEST.test(text) &&
  !BESIDE_THE_STORE.has(file) &&
  (!file.startsWith('src/dashboard/') || PAGES_ON_POSTGRES.includes(file));
const FILE_TIMEOUT_MS = 5 * 60_000;
/** Files run at once: one more than the cores, since a test waits on sockets and timers about a third of its time. */
const JOBS = Math.min(4, availableParallelism() + 1);
const filters = process.argv.slice(2);

interface Outcome {
  passed: number;
  failed: number;
  output: string;
}

function findTests(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : findTests(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, NODE_DISABLE_COLORS: '1', FORCE_COLOR: '0', ...env }, detached: true });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      output += `\n[timed out after ${FILE_TIMEOUT_MS / 1000} s; killed]\n`;
      try {
        process.kill(-child.pid!, 'SIGKILL'); // the whole group, with any servers the test started
      } catch {}
    }, FILE_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

async function runTestFile(file: string, env: Record<string, string> = {}): Promise<Outcome> {
  const { code, output } = await run(process.execPath, ['--import', 'tsx', file], env);
  const count = (label: string) => Number(new RegExp(`${label}:\\s+(\\d+)`).exec(output)?.[1] ?? NaN);
  const total = count('Total');
  const passed = count('Passed');
  if (Number.isNaN(total) || Number.isNaN(passed)) return { passed: 0, failed: 1, output: output + `\n[no uvu summary; exit code ${code}]\n` };
  // uvu's Total leaves out what test.skip skipped (sqliteOnly on PostgreSQL).
  let failed = total - passed;
  // A file whose process failed after its tests (an unhandled rejection, a leak that kept it alive) fails too.
  if (code !== 0 && failed === 0) failed = 1;
  return { passed, failed, output };
}

async function main() {
  let passed = 0;
  let failed = 0;
  const failures: string[] = [];

  // The box, then the dashboard's browser code (its own DOM and JSX settings).
  for (const [label, project] of [['typecheck (tsc --noEmit)', ROOT], ['typecheck of the dashboard', join(ROOT, 'src/dashboard/ui')]]) {
    const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', project]);
    process.stdout.write(`\n== ${label}: ${tsc.code === 0 ? 'ok' : 'FAILED'}\n${tsc.output}`);
    if (tsc.code === 0) passed++;
    else {
      failed++;
      failures.push(label);
    }
  }

  // The import rules of docs/architecture.md (.dependency-cruiser.cjs): a violation names the rule and the import.
  const rules = await run(process.execPath, [join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'), 'src', '--config', join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'err']);
  process.stdout.write(`\n== import rules (dependency-cruiser): ${rules.code === 0 ? 'ok' : 'FAILED'}\n${rules.output}`);
  if (rules.code === 0) passed++;
  else {
    failed++;
    failures.push('import rules');
  }

  // A query made and never run (db/query.ts) compiles, and silently does nothing: scripts/unrun-queries.ts.
  const unrun = await run(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/unrun-queries.ts')]);
  process.stdout.write(`\n== queries made and never run: ${unrun.code === 0 ? 'ok' : 'FAILED'}\n${unrun.output}`);
  if (unrun.code === 0) passed++;
  else {
    failed++;
    failures.push('queries made and never run');
  }

  // Worker threads and the command line run the plain JavaScript build when it is up to date (threads/built-module.ts,
  // scripts/mailwright), at half the CPU of the sources through tsx; a checkout being worked on builds it first.
  if (!builtIsFresh()) await buildServer();

  const files = [...findTests(join(ROOT, 'src')), ...findTests(join(ROOT, 'scripts'))]
    .map((f) => relative(ROOT, f))
    .filter((f) => filters.length === 0 || filters.some((w) => f.includes(w)))
    .sort();
  // With `words`, only on the store MAILWRIGHT_TEST_STORE names; otherwise each file on the stores it can tell apart.
  const named = [...BESIDE_THE_STORE, ...PAGES_ON_POSTGRES].filter((f) => !existsSync(join(ROOT, f)));
  if (named.length) throw new Error(`scripts/test.ts names test files that do not exist: ${named.join(', ')}`);
  const postgres = filters.length ? [] : files.filter((f) => onPostgres(f, readFileSync(join(ROOT, f), 'utf8')));
  const queue = [...files.map((file) => ({ file, store: 'sqlite' })), ...postgres.map((file) => ({ file, store: 'postgres' }))];
  const workers = Array.from({ length: Math.min(Number(process.env.TEST_JOBS) || JOBS, queue.length) }, async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const { file, store } = next;
      const started = Date.now();
      const outcome = await runTestFile(file, store === 'postgres' ? { MAILWRIGHT_TEST_STORE: 'postgres' } : {});
      const name = store === 'postgres' ? `${file} on PostgreSQL` : file;
      passed += outcome.passed;
      failed += outcome.failed;
      if (outcome.failed) failures.push(name);
      const verdict = outcome.failed ? `FAILED (${outcome.failed})` : 'ok';
      process.stdout.write(`\n== ${name}: ${outcome.passed} passed, ${verdict}, ${((Date.now() - started) / 1000).toFixed(1)} s\n${outcome.output}`);
    }
  });
  await Promise.all(workers);

  if (failures.length) process.stdout.write(`\nFailed: ${failures.join(', ')}\n`);
  process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
  process.exitCode = failed === 0 ? 0 : 1;
}

main();
