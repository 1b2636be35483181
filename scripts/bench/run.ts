// `npm run bench`: every benchmark, one after the other, printing Markdown tables for the README.
// Figures are ratios to a baseline measured in the same run on the same machine, never absolute targets.
// The sending benchmarks run the app inside their own process and report that process's CPU and RSS, so each
// gets a fresh one (nothing left over from the benchmark before it).
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchGroupCommit } from './group-commit.ts';
import { benchDir } from './lib.ts';

function inOwnProcess(file: string): void {
  const run = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(file, import.meta.url))], { stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(`bench: ${file} failed (exit code ${run.status ?? run.signal})`);
    process.exitCode = 1;
  }
}

console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`);
await benchGroupCommit();
inOwnProcess('./outbound.ts'); // benchOutbound()
inOwnProcess('./api-send.ts'); // benchApiSend()
inOwnProcess('./inbound.ts'); // benchInbound()
if (Number(process.env.BENCH_SEARCH_MESSAGES ?? 1_000_000) > 0) {
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
