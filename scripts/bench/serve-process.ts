// `scripts/mailwright serve` as a process of its own, for benchmarks whose memory and CPU must be the server's
// alone (RSS, VmHWM and per-thread CPU read from /proc), not the load generator's sharing its process. Its
// output goes to a file, as journald would take it; it runs `lib/` when the build is fresh, as in production.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, ROOT } from '../../src/testkit/app.ts';
import { logTail, until } from './lib.ts';

export interface ServeProcess {
  pid: number;
  logFile: string;
  /** SIGTERM, then the exit code (SIGKILL after 60 s). */
  stop(): Promise<number | null>;
}

/** Starts serve with `env` (a testEnv) and resolves once it logged "ready"; BENCH_NODE_OPTIONS become its NODE_OPTIONS. */
export async function startServeProcess(env: Record<string, string>, opts: { logFile?: string; command?: [string, string[]] } = {}): Promise<ServeProcess> {
  const logFile = opts.logFile ?? join(env.MAILWRIGHT_DATA_DIR, 'serve.log');
  const fd = openSync(logFile, 'a');
  const [cmd, args] = opts.command ?? [CLI, ['serve']];
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}), ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('MALLOC_'))), ...env },
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
