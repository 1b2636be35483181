// Test-only: a newcomer's machine for the quick-start test. A fresh copy of the checkout (what `git clone` gives,
// with the work tree's changes) owned by an ordinary user, with node_modules linked from this checkout in place
// of `npm ci`; commands run as that user (CI runs as root: `setpriv` to nobody, with a throwaway home) in a
// network namespace of their own when root can make one, so the README's fixed ports (8080, 2525, ...) are free
// whatever else runs on the machine.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT, tempDir } from '../src/testkit/app.ts';
import { watch, type Watched } from '../src/testkit/terminal.ts';

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
  start(command: string): Watched;
  close(): Promise<void>;
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
  const children = new Set<Watched>();
  const launch = (argv: string[]) => {
    const [command, ...args] = wrap(argv);
    const watched = watch(spawn(command, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] }));
    children.add(watched);
    void watched.exited().then(() => children.delete(watched));
    return watched;
  };

  return {
    repo,
    user: root ? 'nobody' : (process.env.USER ?? 'the current user'),
    isolated: holder !== null,
    run: async (command, timeoutMs = 120_000) => {
      const watched = launch(['sh', '-c', command]);
      const timer = setTimeout(() => void watched.stop(2000), timeoutMs);
      const code = await watched.exited();
      clearTimeout(timer);
      return { code, output: watched.output() };
    },
    start: (command) => launch(['script', '-qfec', command, '/dev/null']),
    close: async () => {
      for (const watched of children) watched.kill();
      holder?.kill('SIGKILL');
      rmSync(base, { recursive: true, force: true });
    },
  };
}
