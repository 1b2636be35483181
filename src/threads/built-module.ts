// A worker's module from the plain JavaScript build in lib/ when the process itself runs from the TypeScript
// sources (tests, a checkout being worked on) and that build is up to date: such a worker then loads without
// tsx, whose hooks cost it about twice the CPU (the analyze thread 0.9 s instead of 1.6 s), and a test run
// starts a few hundred of them. Up to date means what scripts/mailwright means: lib/.built is newer than every
// source file. Otherwise, and for a module the build leaves out, the worker loads the source as before.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SRC = fileURLToPath(new URL('../', import.meta.url));
const BUILT = join(SRC, '../lib/.built');
let fresh: boolean | undefined;

export function builtModule(module: URL): URL {
  if (module.protocol !== 'file:' || !module.pathname.endsWith('.ts')) return module;
  const path = fileURLToPath(module);
  if (!path.startsWith(SRC)) return module;
  fresh ??= builtIsFresh();
  const built = join(SRC, '../lib', path.slice(SRC.length).replace(/\.ts$/, '.js'));
  return fresh && existsSync(built) ? pathToFileURL(built) : module;
}

/** Whether lib/ holds a build newer than every source file (scripts/mailwright's test, for node scripts). */
export function builtIsFresh(): boolean {
  let built: number;
  try {
    built = statSync(BUILT).mtimeMs;
  } catch {
    return false;
  }
  const newer = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) => {
      const path = join(dir, e.name);
      if (e.isDirectory()) return newer(path);
      return /\.(ts|sql|mjs)$/.test(e.name) && statSync(path).mtimeMs > built;
    });
  return !newer(SRC);
}
