// Test-only: a newcomer's machine for the quick-start test. A fresh copy of the checkout (what `git clone` gives,
// with the work tree's changes) owned by an ordinary user, with node_modules linked from this checkout in place
// of `npm ci`; commands run as that user (CI runs as root: `setpriv` to nobody, with a throwaway home) in a
// network namespace of their own when root can make one, so the README's fixed ports (8080, 2525, ...) are free
// whatever else runs on the machine.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT, tempDir } from '../src/testkit/app.ts';

const NOBODY = 65534;

export interface Ran {
  code: number | null;
  output: string;
}

export interface Newcomer {
  repo: string;
  /** Who runs the commands: `nobody` under root, else the current user. */
  user: string;
  /** Whether the commands have a network namespace of their own (only loopback). */
  isolated: boolean;
  run(command: string, timeoutMs?: number): Promise<Ran>;
  /** Starts a long-running command on a terminal of its own (script(1)): serve prints the setup link only to a TTY. */
  start(command: string): Background;
  close(): Promise<void>;
}

export interface Background {
  output(): string;
  exited(): Promise<number | null>;
  running(): boolean;
  /** SIGTERM to every process of it, then SIGKILL to what is left after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

/** The files a clone would have, with the work tree's changes: tracked and untracked, not ignored. */
function copyCheckout(to: string): void {
  const listed = spawnSync('git', ['-C', ROOT, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  for (const path of new Set(listed.stdout.split('\0').filter(Boolean))) {
    if (path === 'node_modules' || path.startsWith('node_modules/')) continue;
    const from = join(ROOT, path);
    if (!existsSync(from) || !lstatSync(from).isFile()) continue; // deleted in the work tree, or a link
    mkdirSync(dirname(join(to, path)), { recursive: true, mode: 0o755 });
    copyFileSync(from, join(to, path));
    chmodSync(join(to, path), lstatSync(from).mode & 0o755);
  }
}

function chownTree(path: string, uid: number): void {
  chownSync(path, uid, uid);
  if (!lstatSync(path).isDirectory()) return;
  for (const entry of readdirSync(path)) if (entry !== 'node_modules') chownTree(join(path, entry), uid);
}

const works = (command: string, args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;

/** The processes under `pid` (itself included), from /proc: each with whether it has children of its own. */
function processTree(pid: number): Array<{ pid: number; leaf: boolean }> {
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

export async function newcomer(): Promise<Newcomer> {
  const base = tempDir('mailwright-newcomer-');
  chmodSync(base, 0o755);
  const repo = join(base, 'mailwright');
  const home = join(base, 'home');
  mkdirSync(home, { mode: 0o700 });
  copyCheckout(repo);
  symlinkSync(join(ROOT, 'node_modules'), join(repo, 'node_modules'));
  const root = process.getuid?.() === 0;
  if (root) chownTree(base, NOBODY);

  // A namespace with loopback only: root makes it, a holder process keeps it, each command enters it.
  let holder: ChildProcess | null = null;
  if (root && works('unshare', ['--net', 'true']) && works('nsenter', ['--version']) && works('ip', ['-V'])) {
    holder = spawn('unshare', ['--net', 'sh', '-c', 'ip link set lo up && echo up && exec sleep 3600'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const up = await new Promise<boolean>((resolve) => {
      holder!.stdout!.once('data', (d) => resolve(String(d).includes('up')));
      holder!.once('exit', () => resolve(false));
    });
    if (!up) holder = null;
  }

  const env = [`PATH=${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, `HOME=${home}`, 'LANG=C.UTF-8', 'TERM=dumb', 'npm_config_update_notifier=false', 'npm_config_fund=false'];
  const wrap = (argv: string[]): string[] => {
    let a = ['env', '-i', ...env, ...argv];
    if (root) a = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...a];
    if (holder) a = ['nsenter', `--net=/proc/${holder.pid}/ns/net`, ...a];
    return a;
  };
  const children = new Set<ChildProcess>();

  const launch = (argv: string[]) => {
    const [command, ...args] = wrap(argv);
    const child = spawn(command, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => (children.delete(child), resolve(code))));
    return { child, output: () => output, exited };
  };
  // SIGTERM to the box itself (`mailwright serve`'s node; else the innermost processes), as systemd would send it:
  // npm and the shells above end with it. A second SIGTERM forwarded by npm would cut the box's drain short.
  const stopTree = async (child: ChildProcess, exited: Promise<number | null>, graceMs: number) => {
    if (child.exitCode !== null || child.pid === undefined) return exited;
    const tree = processTree(child.pid);
    const box = tree.filter((p) => /\/main\.(ts|js)\0serve\b/.test(cmdline(p.pid)));
    signal((box.length ? box : tree.filter((p) => p.leaf)).map((p) => p.pid), 'SIGTERM');
    const timer = setTimeout(() => signal(processTree(child.pid!).map((p) => p.pid), 'SIGKILL'), graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };

  return {
    repo,
    user: root ? 'nobody' : (process.env.USER ?? 'the current user'),
    isolated: holder !== null,
    run: async (command, timeoutMs = 120_000) => {
      const { child, output, exited } = launch(['sh', '-c', command]);
      const timer = setTimeout(() => void stopTree(child, exited, 2000), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return { code, output: output() };
    },
    start: (command) => {
      const { child, output, exited } = launch(['script', '-qfec', command, '/dev/null']);
      return { output, exited: () => exited, running: () => child.exitCode === null && child.signalCode === null, stop: (graceMs = 30_000) => stopTree(child, exited, graceMs) };
    },
    close: async () => {
      for (const child of children) if (child.pid !== undefined) signal(processTree(child.pid).map((p) => p.pid), 'SIGKILL');
      holder?.kill('SIGKILL');
      rmSync(base, { recursive: true, force: true });
    },
  };
}
