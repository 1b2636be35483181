// `scripts/mailwright serve` in a process of its own for a benchmark, its output to a file (as journald would
// take it): its RSS, VmHWM and threads are then the server's alone, apart from the load generator and this
// process (inbound.ts, api-send.ts, outbound.ts). It runs `lib/` when the build is fresh, as in production.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLI, ROOT, runCli, testEnv } from '../../src/testkit/app.ts';
import { benchDir, freePort, logTail, until } from './lib.ts';
import { freshDatabase } from '../../src/testkit/postgres.ts';

export interface ServeProcess {
  pid: number;
  logFile: string;
  /** SIGTERM, then the exit code (SIGKILL after 60 s). */
  stop(): Promise<number | null>;
}

/** A serve on a fresh data directory of its own, with its ports and an API key. */
export interface FreshServe extends ServeProcess {
  smtpPort: number;
  api: string;
  key: string;
  dataDir: string;
  /** Where its state is: MAILWRIGHT_DATA_DIR, and MAILWRIGHT_DATABASE_URL on PostgreSQL (readBox reads it). */
  env: Record<string, string>;
  /** Removes the data directory, and on PostgreSQL drops the database (after the last read of it). */
  dispose(): Promise<void>;
}

/**
 * BENCH_STORE=postgres: serve keeps its state in a fresh PostgreSQL database (the test kit's server,
 * MAILWRIGHT_TEST_POSTGRES) instead of SQLite, for the same runs on both stores.
 */
export const BENCH_STORE = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite';

export interface SpawnOptions {
  /** More NODE_OPTIONS (heap-split.ts), after BENCH_NODE_OPTIONS. */
  nodeOptions?: string;
  /** A directory: serve runs under node --cpu-prof and leaves its .cpuprofile there. */
  profileDir?: string;
}

export interface ServeOptions extends SpawnOptions {
  /** Names the data directory. */
  label: string;
  /** MAILWRIGHT_* settings beyond the ports, the data directory and an empty config file (testEnv). */
  env: Record<string, string>;
}

/** BENCH_SERVE_ENV: more of serve's environment, as space-separated NAME=value (e.g. MALLOC_ARENA_MAX=2). */
const serveEnv = () => Object.fromEntries((process.env.BENCH_SERVE_ENV ?? '').split(/\s+/).filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));

/** The V8 flags scripts/mailwright gives node (its `v8flags=`). */
export function launcherV8Flags(): string[] {
  const flags = /^v8flags="([^"]*)"$/m.exec(readFileSync(CLI, 'utf8'));
  if (!flags) throw new Error(`no v8flags="..." line in ${CLI}`);
  return flags[1].split(' ').filter(Boolean);
}

/** serve on a fresh data directory: free ports, an API key made with the CLI. */
export async function startServe(opts: ServeOptions): Promise<FreshServe> {
  const dataDir = benchDir(opts.label);
  const [smtpPort, httpPort] = [await freePort(), await freePort()];
  const database = BENCH_STORE === 'postgres' ? await freshDatabase() : null;
  const env = testEnv(dataDir, { MAILWRIGHT_SMTP_PORT: String(smtpPort), MAILWRIGHT_HTTP_PORT: String(httpPort), MAILWRIGHT_LOG_LEVEL: 'info', ...(database ? { MAILWRIGHT_DATABASE_URL: database.url } : {}), ...opts.env });
  const created = await runCli(['key', 'create', '--name', 'bench'], env);
  const key = created.stdout.trim();
  if (created.code !== 0 || !key.startsWith('re_')) throw new Error(`mailwright key create failed (${created.code}): ${created.stderr}`);
  const serve = await spawnServe(env, opts);
  const dispose = async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  };
  return { ...serve, smtpPort, api: `http://127.0.0.1:${httpPort}/api/v1`, key, dataDir, env, dispose };
}

/** serve with `env` (a testEnv, on a data directory set up already); resolves once it logged "ready". */
export async function spawnServe(env: Record<string, string>, opts: SpawnOptions = {}): Promise<ServeProcess> {
  const logFile = join(env.MAILWRIGHT_DATA_DIR, 'serve.log');
  const fd = openSync(logFile, 'a');
  // node refuses --cpu-prof in NODE_OPTIONS, so when profiling scripts/mailwright's command is spelled out with
  // the flag, and its V8 flags.
  const [cmd, args] = opts.profileDir
    ? [process.execPath, [...launcherV8Flags(), '--cpu-prof', `--cpu-prof-dir=${opts.profileDir}`, '--import', pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href, join(ROOT, 'src/main.ts'), 'serve']]
    : [CLI, ['serve']];
  const nodeOptions = `${process.env.BENCH_NODE_OPTIONS ?? ''} ${opts.nodeOptions ?? ''}`.trim();
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}), ...serveEnv(), ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  const stop = async () => {
    if (exitCode !== undefined) return exitCode;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  try {
    await until(
      'Mailwright to log "ready"',
      () => {
        if (exitCode !== undefined) throw new Error(`mailwright serve exited with code ${exitCode} before it was ready:\n${logTail(logFile)}`);
        return readFileSync(logFile, 'utf8').includes('"msg":"ready"');
      },
      30_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { pid: child.pid!, logFile, stop };
}
