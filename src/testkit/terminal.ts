// Test-only: a process and everything it started, watched from outside: its output, its exit, and a stop that
// reaches the box itself. `serve` prints the setup link only to a terminal, so tests run it under script(1),
// which gives it one; a signal to script would not reach serve (it gets SIGHUP, which is a reload), so stop()
// finds serve's node among the descendants (/proc) and sends SIGTERM there, as systemd would.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface Watched {
  output(): string;
  exited(): Promise<number | null>;
  running(): boolean;
  /** SIGTERM to the box (else to the innermost processes), SIGKILL to all that is left after `graceMs`. */
  stop(graceMs?: number): Promise<number | null>;
  /** SIGKILL to the process and everything under it. */
  kill(): void;
}

/** The processes under `pid` (itself included), from /proc: each with whether it has children of its own. */
export function processTree(pid: number): Array<{ pid: number; leaf: boolean }> {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {} // gone meanwhile
  }
  const walk = (p: number): Array<{ pid: number; leaf: boolean }> => [{ pid: p, leaf: !children.has(p) }, ...(children.get(p) ?? []).flatMap(walk)];
  return walk(pid);
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

function signal(pids: number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {} // gone meanwhile
  }
}

export function watch(child: ChildProcess): Watched {
  let output = '';
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const everything = () => (child.pid === undefined ? [] : processTree(child.pid).map((p) => p.pid));
  return {
    output: () => output,
    exited: () => exited,
    running: () => child.exitCode === null && child.signalCode === null,
    // npm and the shells above serve end with it; a second SIGTERM forwarded by npm would cut its drain short.
    stop: async (graceMs = 30_000) => {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return exited;
      const tree = processTree(child.pid);
      const box = tree.filter((p) => /\/main\.(ts|js)\0serve\b/.test(cmdline(p.pid)));
      signal((box.length ? box : tree.filter((p) => p.leaf)).map((p) => p.pid), 'SIGTERM');
      const timer = setTimeout(() => signal(everything(), 'SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    kill: () => signal(everything(), 'SIGKILL'),
  };
}

/** Runs `command` (a shell line) on a terminal of its own: script(1) with its output as the process's. */
export const onTerminal = (command: string, opts: SpawnOptions) => watch(spawn('script', ['-qfec', command, '/dev/null'], { ...opts, stdio: ['ignore', 'pipe', 'pipe'] }));
