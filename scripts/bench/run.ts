// `npm run bench`: every benchmark, one after the other, printing Markdown tables for docs/benchmarks.md, and at the end
// one summary table of the goals as each benchmark measured them (reportGoal in lib.ts), PASS or MISS.
// Figures are ratios to a baseline measured in the same run on the same machine, never absolute targets.
// The sending benchmarks run the app inside their own process and report that process's CPU and RSS, so each
// gets a fresh one (nothing left over from the benchmark before it).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtIsFresh } from '../../src/threads/built-module.ts';
import { benchGroupCommit } from './group-commit.ts';
import { benchDir, fmt, opensslRsa2048SignMicros, table, type GoalResult } from './lib.ts';

// Every benchmark process appends its goals here (the variable is inherited).
const goalsDir = benchDir('mw-bench-goals-');
process.env.BENCH_GOALS_FILE = join(goalsDir, 'goals.jsonl');

function inOwnProcess(file: string, env: Record<string, string> = {}): void {
  const run = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(file, import.meta.url))], { stdio: 'inherit', env: { ...process.env, ...env } });
  if (run.status !== 0) {
    console.error(`bench: ${file} failed (exit code ${run.status ?? run.signal})`);
    process.exitCode = 1;
  }
}

/** BENCH_ONLY=outbound,api,inbound,storage,spam,search (comma-separated) runs those alone; by default, all of them. */
const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;
const wanted = (name: string) => !only || only.has(name);

// serve runs lib/ only while it is newer than every source (scripts/mailwright), else the sources through tsx:
// built first, so that what is measured is what an installed box runs.
if (!builtIsFresh()) {
  console.log('bench: building lib/, older than src/');
  if (spawnSync('npm', ['run', 'build'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: 'inherit' }).status !== 0) throw new Error('npm run build failed');
}

const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}, RSA-2048 sign ${fmt(opensslRsa2048SignMicros())} µs (openssl speed)`;
console.log(`machine: ${machine}`);
if (wanted('group-commit')) await benchGroupCommit();
if (wanted('outbound')) inOwnProcess('./outbound.ts'); // benchOutbound()
if (wanted('api')) inOwnProcess('./api-send.ts'); // benchApiSend()
if (wanted('inbound')) inOwnProcess('./inbound.ts'); // benchInbound()
// BENCH_ONLY=stores (never by default): the API (alone, and serve's), inbound and outbound runs on SQLite, then on PostgreSQL (BENCH_STORE).
if (only?.has('stores')) {
  for (const store of ['sqlite', 'postgres']) {
    inOwnProcess('./outbound.ts', { BENCH_OUTBOUND_SERVERS: 'mailwright', BENCH_STORE: store });
    inOwnProcess('./api-send.ts', { BENCH_API_RUNS: 'alone,serve', BENCH_STORE: store });
    inOwnProcess('./inbound.ts', { BENCH_INBOUND_SERVERS: 'mailwright', BENCH_INBOUND_SESSIONS: '20', BENCH_STORE: store });
  }
}
if (wanted('storage')) inOwnProcess('./storage.ts'); // benchStorage(): bytes on disk per stored message (BENCH_STORAGE_* = 0 skips a run)
if (wanted('spam')) {
  inOwnProcess('./spam-corpus.ts'); // the content filter on the 2002 SpamAssassin corpus (BENCH_SPAM_SA=0, BENCH_SPAM_SIZE_MESSAGES=0 skip parts)
  inOwnProcess('./inbound.ts', { BENCH_INBOUND_SERVERS: 'spam' }); // the same corpus end to end: taught through the API, delivered over SMTP (spam-e2e.ts)
}
if (wanted('search') && Number(process.env.BENCH_SEARCH_MESSAGES ?? 1_000_000) > 0) {
  // The search, analytics and labels benchmarks measure the same emails, built once (kept where BENCH_SEARCH_DIR says).
  const shared = process.env.BENCH_SEARCH_DIR ? null : (process.env.BENCH_SEARCH_DIR = benchDir('mw-bench-search-'));
  try {
    inOwnProcess('./search.ts'); // benchSearch(): BENCH_SEARCH_MESSAGES emails (default 1,000,000; 0 skips both)
    inOwnProcess('./analytics.ts'); // benchAnalytics(): GET /analytics on those emails
    inOwnProcess('./labels.ts'); // benchLabels(): GET /labels with 200 labels on those emails
  } finally {
    if (shared) rmSync(shared, { recursive: true, force: true });
  }
}

const goals: GoalResult[] = existsSync(process.env.BENCH_GOALS_FILE) ? readFileSync(process.env.BENCH_GOALS_FILE, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as GoalResult) : [];
rmSync(goalsDir, { recursive: true, force: true });
console.log(`\n## Summary: issue 22's goals, ${new Date().toISOString().slice(0, 10)}, ${machine}\n`);
table(['goal', 'measured', 'target', 'verdict'], goals.map((g) => [g.goal, g.measured, g.target, g.pass === null ? 'not measured' : g.pass ? 'PASS' : 'MISS']));
