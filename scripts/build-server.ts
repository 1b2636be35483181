// `npm run build` (and `npm ci`'s prepare): the server as plain JavaScript in lib/, one file per src/ module,
// so `serve` and its worker threads run without tsx. tsx runs each thread's module hooks on a loader thread of
// their own and keeps esbuild and source maps around: about 35 MiB in the main thread and 15-30 MiB in every
// worker. lib/ mirrors src/ at the same depth, so paths a module finds relative to itself
// (../../package.json, ../../dist/dashboard, ./migrations/) hold in both. Type checking stays `npm test`'s job.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
export const LIB = join(ROOT, 'lib');
// lib/.built is written last: scripts/mailwright runs lib/ only when it is newer than every source file.

/** Test files, the test kit and the browser app (built into dist/dashboard by src/dashboard/build.ts) stay out. */
const skipped = (path: string) => path.endsWith('.test.ts') || path.startsWith('testkit/') || path.startsWith('dashboard/ui/');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

// Relative specifiers naming a .ts module, in import/export statements, import() and new URL(): the same
// module as .js in lib/. Package specifiers never end in .ts here.
const SPECIFIER = /((?:from|import)\s*\(?\s*|new URL\(\s*)(['"])(\.{1,2}\/[^'"]+)\.ts\2/g;

/** `into` must sit at the repository's root like lib/ (tests build a copy of their own beside it). */
export async function buildServer(into = LIB): Promise<number> {
  rmSync(into, { recursive: true, force: true });
  let count = 0;
  for (const file of files(SRC)) {
    const path = relative(SRC, file);
    if (skipped(path)) continue;
    const out = join(into, path.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(out), { recursive: true });
    if (!path.endsWith('.ts')) {
      copyFileSync(file, out); // migrations (.sql), quick-check.mjs, worker-boot.mjs
      continue;
    }
    const { code } = await transform(readFileSync(file, 'utf8'), { loader: 'ts', format: 'esm', target: 'node20', sourcefile: path });
    writeFileSync(out, code.replace(SPECIFIER, (_m, before: string, quote: string, spec: string) => `${before}${quote}${spec}.js${quote}`));
    count++;
  }
  writeFileSync(join(into, '.built'), `${new Date().toISOString()}\n`);
  return count;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  const count = await buildServer();
  console.log(`built ${count} modules into lib/ in ${Math.round(performance.now() - started)} ms`);
}
