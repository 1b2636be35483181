// Postfix 3.7 (Debian's package) for the benchmarks to compare with, in a directory of its own (postfix -c): its
// own main.cf, master.cf, queue and log file, its smtpd on one free loopback port, never on 25. What each
// benchmark needs besides (outbound: relay to the sink, deferred; inbound: a relay domain delivered to discard:)
// it passes as main.cf lines and options.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchDir, canConnect, freePort, logTail, until } from './lib.ts';

/** Runs a command to its end: its exit code and its stdout and stderr together. */
export function exec(cmd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** The process exists and is not a zombie waiting to be reaped. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

export interface PostfixOptions {
  /** The start of the instance directory's name (mkdtemp), under BENCH_DIR or the temp directory. */
  label: string;
  /** This benchmark's main.cf lines, written after the shared ones. */
  main: string[];
  /** smtpd's process limit in master.cf; Postfix's default_process_limit (100) when unset. */
  smtpdProcessLimit?: number;
}

/** main.cf lines every instance has: its own directories and log file, loopback IPv4 only, no local delivery, no TLS. */
function sharedMain(dir: string): string[] {
  return [
    'compatibility_level = 3.6',
    `queue_directory = ${dir}/queue`,
    `data_directory = ${dir}/data`,
    'inet_interfaces = loopback-only',
    'inet_protocols = ipv4',
    'myhostname = postfix.bench.test',
    'mydestination =',
    'mynetworks = 127.0.0.0/8',
    'alias_maps =',
    'alias_database =',
    'local_recipient_maps =',
    'smtpd_tls_security_level = none',
    'biff = no',
    // Logs to a file, as in performance-baseline.md (there is no syslog here).
    `maillog_file = ${dir}/maillog`,
    `maillog_file_prefixes = ${dir}`,
  ];
}

/** Debian's stock master.cf with its smtpd on a loopback port instead of *:25, with this process limit ('-': the default). */
function masterCf(port: number, processLimit = '-'): string {
  const master = readFileSync('/usr/share/postfix/master.cf.dist', 'utf8').replace(/^smtp\s+inet\s.*$/m, `127.0.0.1:${port} inet n - n - ${processLimit} smtpd`);
  if (!master.includes(`127.0.0.1:${port}`)) throw new Error('could not find the smtpd line in master.cf.dist');
  return master;
}

export class Postfix {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get conf() {
    return join(this.dir, 'conf');
  }

  get maillog() {
    return join(this.dir, 'maillog');
  }

  /** Writes and checks the configuration of a new instance; start() starts it. */
  static async create(options: PostfixOptions): Promise<Postfix> {
    const dir = benchDir(options.label);
    chmodSync(dir, 0o755); // its daemons run as the postfix user and must reach the queue
    const pf = new Postfix(dir, await freePort());
    mkdirSync(pf.conf, { mode: 0o755 });
    mkdirSync(join(dir, 'queue'), { mode: 0o755 });
    writeFileSync(join(pf.conf, 'main.cf'), [...sharedMain(dir), ...options.main, ''].join('\n'));
    writeFileSync(join(pf.conf, 'master.cf'), masterCf(pf.port, options.smtpdProcessLimit?.toString()));
    // Nothing chrooted: a chroot would need copies of /etc files in the queue directory.
    await pf.must('postconf', ['-c', pf.conf, '-F', '*/*/chroot = n']);
    await pf.must('postfix', ['-c', pf.conf, 'check']);
    return pf;
  }

  /** Runs a command and returns its output; when it fails, throws with the output and the log's last lines. */
  async must(cmd: string, args: string[]): Promise<string> {
    const { code, out } = await exec(cmd, args);
    if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${code}): ${out}\n${logTail(this.maillog)}`);
    return out;
  }

  /** Starts Postfix and waits until its smtpd port accepts connections. */
  async start(): Promise<void> {
    await this.must('postfix', ['-c', this.conf, 'start']);
    await until('Postfix to listen', () => canConnect(this.port), 20_000);
  }

  /** Stops Postfix, waits until it is down, its smtpd port closed and its master process gone, and removes its directory. */
  async destroy(): Promise<void> {
    const master = this.masterPid();
    await exec('postfix', ['-c', this.conf, 'stop']);
    for (let i = 0; i < 100; i++) {
      const { code } = await exec('postfix', ['-c', this.conf, 'status']);
      if (code !== 0 && !(await canConnect(this.port)) && !(master && running(master))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    if (await canConnect(this.port)) throw new Error(`Postfix still listens on 127.0.0.1:${this.port} after postfix stop`);
    if (master && running(master)) throw new Error(`Postfix's master (pid ${master}) still runs 10 s after postfix stop`);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The master process's pid from its pid file, or null when it has not started. */
  private masterPid(): number | null {
    try {
      return Number(readFileSync(join(this.dir, 'queue', 'pid', 'master.pid'), 'utf8').trim()) || null;
    } catch {
      return null;
    }
  }
}
