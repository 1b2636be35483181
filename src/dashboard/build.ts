// Building the dashboard: esbuild bundles the Preact app (src/dashboard/ui) and its CSS into dist/dashboard,
// with content hashes in the file names so a browser may cache them forever, and writes the index.html that
// names them. Run by `npm ci` (the `prepare` script) and by `serve` when the bundle is missing or stale.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// By way of the repository root, so that the server's plain JavaScript build in lib/dashboard finds it too.
export const UI_DIR = fileURLToPath(new URL('../../src/dashboard/ui', import.meta.url));
export const DIST_DIR = fileURLToPath(new URL('../../dist/dashboard', import.meta.url));

/** The newest modification time among the sources (the UI and the packages it bundles). */
function newestSource(dir = UI_DIR): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((newest, e) => {
    const path = join(dir, e.name);
    return Math.max(newest, e.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }, 0);
}

export const isBuilt = () => existsSync(join(DIST_DIR, 'index.html')) && statSync(join(DIST_DIR, 'index.html')).mtimeMs >= newestSource();

/** Builds into a directory of its own, then swaps it in, so a running box never serves half a build. */
export async function buildDashboard(opts: { minify?: boolean } = {}): Promise<void> {
  const out = `${DIST_DIR}.building-${process.pid}`;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  // esbuild only when a build is due: serve checks isBuilt() at every start.
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: { app: join(UI_DIR, 'main.tsx') },
    bundle: true,
    format: 'esm',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: opts.minify ?? true,
    sourcemap: false,
    entryNames: '[name]-[hash]',
    outdir: out,
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
  const js = outputs.find((f) => f.endsWith('.js'))!;
  const css = outputs.find((f) => f.endsWith('.css'));
  const html = readFileSync(join(UI_DIR, 'index.html'), 'utf8')
    .replace('<!--css-->', css ? `<link rel="stylesheet" href="/assets/${css}">` : '')
    .replace('<!--js-->', `<script type="module" src="/assets/${js}"></script>`);
  writeFileSync(join(out, 'index.html'), html);
  rmSync(DIST_DIR, { recursive: true, force: true });
  renameSync(out, DIST_DIR);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildDashboard();
