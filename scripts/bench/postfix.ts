// Postfix 3.7 (Debian's package) for the benchmarks to compare with, in a directory of its own (postfix -c): its
// own main.cf, master.cf, queue and log file, its smtpd on one free loopback port, never on 25. What each
// benchmark needs besides (outbound: relay to the sink, deferred; inbound: a relay domain delivered to discard:)
// it passes as main.cf lines and options. OpenDkim is Debian's opendkim as Postfix's milter, an instance of the
// benchmark's own on a unix socket (or one loopback port).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { OPENDKIM_BIN, benchDir, canConnect, freePort, logTail, procCpuMicros, until } from './lib.ts';

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
  masterPid(): number | null {
    try {
      return Number(readFileSync(join(this.dir, 'queue', 'pid', 'master.pid'), 'utf8').trim()) || null;
    } catch {
      return null;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// OpenDKIM

export interface OpenDkimOptions {
  domain: string;
  selector: string;
  /** The signing key, PEM. */
  privateKeyPem: string;
  /**
   * How Postfix reaches the milter: a unix socket (Debian's stock opendkim.conf, the default; BENCH_OPENDKIM_SOCKET=inet
   * for the other) or inet on a free loopback port.
   */
  socket?: 'unix' | 'inet';
}

/** Where keys go when the bench's own directory cannot hold them. */
const SAFE_KEY_ROOT = '/var/lib/mailwright-bench';

/** Some directory from `dir` up to / is writable by others (/tmp is): opendkim refuses keys below it. */
function underWorldWritable(dir: string): boolean {
  for (let d = realpathSync(dir); ; d = dirname(d)) {
    if (statSync(d).mode & 0o002) return true;
    if (d === dirname(d)) return false;
  }
}

/** A user's uid or a group's gid, by `id`. */
function idOf(flag: '-u' | '-g', name: string): number {
  const r = spawnSync('id', [flag, name], { encoding: 'utf8' });
  const id = Number(r.stdout.trim());
  if (r.status !== 0 || !Number.isInteger(id)) throw new Error(`id ${flag} ${name} failed: ${r.stderr}`);
  return id;
}

/** Something accepts connections on this unix socket. */
function canConnectPath(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Debian's opendkim signing everything from DOMAIN that its internal hosts (127.0.0.1, the default) hand it:
 * rsa-sha256 with the given key, relaxed/relaxed, From oversigned as Debian's stock opendkim.conf does, run as
 * the opendkim user, in the foreground as this process's child. It listens on a unix socket in a directory of its
 * own that only it and the postfix group reach (Debian's default is a unix socket too), or on one loopback port.
 * Its key and configuration sit in a directory of mode 0700 outside world-writable directories (opendkim refuses
 * a key file whose path crosses one): below the bench's own directory when that allows, else below
 * /var/lib/mailwright-bench. stop() ends it and removes both directories.
 */
export class OpenDkim {
  private constructor(
    private readonly child: ChildProcess,
    /** inet:PORT@127.0.0.1 or local:PATH, as opendkim.conf names it. */
    private readonly listen: { port: number } | { path: string },
    readonly dir: string,
    private readonly socketDir: string | null,
    private readonly root: string | null,
    private readonly output: () => string,
  ) {}

  /** The milter address for main.cf's smtpd_milters. */
  get milter(): string {
    return 'port' in this.listen ? `inet:127.0.0.1:${this.listen.port}` : `unix:${this.listen.path}`;
  }

  private reachable(): Promise<boolean> {
    return 'port' in this.listen ? canConnect(this.listen.port) : canConnectPath(this.listen.path);
  }

  static async start(options: OpenDkimOptions): Promise<OpenDkim> {
    const base = process.env.BENCH_DIR ?? tmpdir();
    let root: string | null = null;
    if (underWorldWritable(base)) {
      mkdirSync(SAFE_KEY_ROOT, { recursive: true, mode: 0o700 });
      chmodSync(SAFE_KEY_ROOT, 0o700);
      root = SAFE_KEY_ROOT;
    }
    const dir = mkdtempSync(join(root ?? base, 'mw-bench-opendkim-'));
    chmodSync(dir, 0o700);
    let socketDir: string | null = null;
    let listen: { port: number } | { path: string };
    if ((options.socket ?? 'unix') === 'unix') {
      // Owned by opendkim, group postfix with setgid, so that the socket is in the postfix group and UMask 007 lets smtpd in.
      socketDir = benchDir('mw-bench-opendkim-socket-');
      chownSync(socketDir, idOf('-u', 'opendkim'), idOf('-g', 'postfix'));
      chmodSync(socketDir, 0o2750);
      listen = { path: join(socketDir, 'opendkim.sock') };
    } else {
      listen = { port: await freePort() };
    }
    const keyFile = join(dir, `${options.selector}.private`);
    writeFileSync(keyFile, options.privateKeyPem, { mode: 0o600 });
    const conf = join(dir, 'opendkim.conf');
    writeFileSync(
      conf,
      [
        'Syslog no',
        'Mode s',
        `Domain ${options.domain}`,
        `Selector ${options.selector}`,
        `KeyFile ${keyFile}`,
        'SignatureAlgorithm rsa-sha256',
        'Canonicalization relaxed/relaxed',
        'OversignHeaders From',
        'UserID opendkim',
        'UMask 007',
        `Socket ${'port' in listen ? `inet:${listen.port}@127.0.0.1` : `local:${listen.path}`}`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    const child = spawn(OPENDKIM_BIN, ['-f', '-x', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d) => (output = (output + d).slice(-2000)));
    child.stderr!.on('data', (d) => (output = (output + d).slice(-2000)));
    const dkim = new OpenDkim(child, listen, dir, socketDir, root, () => output);
    try {
      await until(
        'opendkim to listen',
        () => {
          if (child.exitCode !== null) throw new Error(`opendkim exited with code ${child.exitCode}: ${output}`);
          return dkim.reachable();
        },
        20_000,
        50,
      );
    } catch (err) {
      await dkim.stop();
      throw err;
    }
    return dkim;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** CPU opendkim has used so far (all its threads), µs. */
  cpuMicros(): number {
    return procCpuMicros(`/proc/${this.child.pid}/stat`);
  }

  /** Ends opendkim, checks that nothing answers on its socket any more, and removes its directories (and the key root, once empty). */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    if (await this.reachable()) throw new Error(`something still answers on opendkim's ${this.milter} after it exited: ${this.output()}`);
    rmSync(this.dir, { recursive: true, force: true });
    if (this.socketDir) rmSync(this.socketDir, { recursive: true, force: true });
    if (this.root) {
      try {
        rmdirSync(this.root); // only when no other run's directory is left in it
      } catch {}
    }
  }
}
