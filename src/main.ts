// The command line (scripts/mailwright): `serve` runs the appliance; the other commands act on the same
// data directory and work while `serve` runs (SQLite WAL with a busy timeout lets them share the file), but for
// `restore`, which replaces the database and so refuses while a serve uses it.
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { text } from 'node:stream/consumers';
import { ConfigError, loadConfig, type Config } from './config/config.ts';
import { openStore, startApp, StartupError, type RunningApp } from './app.ts';
import { createLog, type Log } from './log.ts';
import { systemClock } from './clock.ts';
import { databasePath, type Db } from './db/open.ts';
import { databaseProblems } from './db/integrity.ts';
import { storageFault } from './db/health.ts';
import { hasUsers, issueSetupToken, SETUP_LINK_COMMAND, setupLink } from './account/setup.ts';
import { createWorkspace, findWorkspace, DEFAULT_WORKSPACE } from './account/workspaces.ts';
import { createUser, findUserByEmail, setPasswordHash } from './account/users.ts';
import { passphraseProblem } from './account/passphrase.ts';
import { hashPassword } from './account/passwords.ts';
import { revokeUserSessions } from './account/sessions.ts';
import { unlockLogin } from './account/login-throttle.ts';
import { createKey } from './account/keys.ts';
import { doctor } from './doctor/doctor.ts';
import { flushQueue, listQueue } from './send/queue-admin.ts';
import { buildDashboard, isBuilt } from './dashboard/build.ts';
import { createBackup } from './db/backup.ts';
import { restoreBackup } from './db/restore.ts';
import { generateDkimKey, RotationInProgress, startRotation } from './domains/dkim-keys.ts';
import { holderOf } from './domains/claims.ts';
import { dkimName, dkimValue } from './dns/records.ts';
import { runTry, TRY_DEFAULTS, TRY_HELP } from './try/try.ts';

// Everything this process creates (database, WAL, keys, backups) is its owner's alone (DESIGN.md 3, SEC-01).
process.umask(0o077);

const EX_USAGE = 2;
const EX_CONFIG = 78; // sysexits.h; the systemd unit does not restart on it, since retrying cannot help

class UsageError extends Error {}

const HELP: Record<string, string> = {
  '': `Usage: mailwright <command> [options]

Commands:
  serve                  run the appliance (SMTP, HTTP API, queue) until SIGTERM
  try                    run a box on this machine without DNS: mail to other domains is kept, never sent
  workspace create NAME  create a workspace; prints its id
  setup link             print a one-time link that creates the box's owner (while it has none)
  user add | unlock      create the user who signs in to a workspace's dashboard; clear its failed sign-ins
  user passwd EMAIL      set a user's new passphrase; signs out every session of that user
  key create             create an API key; prints only the key (re_...)
  doctor                 check the box's DNS, ports and every domain's records; prints what to fix
  queue list | flush     show queued and deferred mail; attempt every deferred delivery now
  dkim rotate DOMAIN     start a DKIM key rotation: prints the record to publish; signing switches once DNS has it
  backup FILE            copy all state into one file while the box runs
  restore FILE           put a backup back (serve stopped)

Run 'mailwright <command> --help' for a command's options. Configuration comes from
config/mailwright.toml (or MAILWRIGHT_CONFIG) and MAILWRIGHT_* variables; see the README.`,
  serve: `Usage: mailwright serve

Runs the appliance in the foreground on the configured ports. SIGTERM or SIGINT stops accepting new
connections, lets work in flight finish, commits and exits 0. /healthz answers 200 once it is up.`,
  try: TRY_HELP,
  setup: `Usage: mailwright setup link

While the box has no owner, prints a one-time link (<public_url>/setup#<token>) on standard output: open it
in a browser and create the owner. It works once, for 24 hours; each new link replaces the one before. serve
never writes the link to its log; run this on the box (as the user serve runs as) to get it.`,
  workspace: `Usage: mailwright workspace create NAME

Creates a workspace named NAME (1-64 printable characters, unique) and prints its id (ws_...).
A workspace named "${DEFAULT_WORKSPACE}" exists from the first start.`,
  user: `Usage: mailwright user add --email ADDRESS [--workspace ID|NAME] --password-stdin
       mailwright user passwd EMAIL --password-stdin
       mailwright user unlock EMAIL

add creates the user who signs in to the dashboard of a workspace (default: "${DEFAULT_WORKSPACE}") and
prints the user id. The passphrase is read from standard input, e.g.
  printf '%s' "$PASSPHRASE" | mailwright user add --email owner@example.com --password-stdin
The rule is the dashboard's: at least 12 characters with at least 6 different ones; not a common
password, a simple sequence or the e-mail address.
passwd sets a new passphrase for that user (read the same way, same rule) and signs out every browser
session of the user at once; the dashboard's Settings page changes it too, knowing the current one.
unlock clears every failed sign-in that could stop that user: those against the account and those of
every address (the user's own address is not known), so a locked-out owner can sign in again at once.`,
  key: `Usage: mailwright key create --name NAME [--workspace ID|NAME]

Creates an API key in a workspace (default: "${DEFAULT_WORKSPACE}") and prints only the key (re_...) on
standard output. It is shown this once: the box keeps only its hash.`,
  queue: `Usage: mailwright queue list [--json]
       mailwright queue flush

list shows every recipient still queued, being sent or deferred: its email, state, attempts, when the
next attempt is due and the last answer; --json prints one JSON array. flush makes every queued and
deferred recipient due now (like postqueue -f); a running serve picks them up within a second.
Both need the box's database: a data directory without one is refused (exit 78), never made.`,
  doctor: `Usage: mailwright doctor

Checks, without changing anything: that serve is listening, that MAILWRIGHT_HOSTNAME is a public name
with an address whose PTR names it back, and every domain's DKIM, return-path MX and SPF, DMARC and (if
set up) inbound MX, through the configured resolvers. Prints each problem with the record to publish; exits 1 if any.
A data directory without a database is refused (exit 78): point MAILWRIGHT_DATA_DIR at the box's.`,
  dkim: `Usage: mailwright dkim rotate DOMAIN

Makes a new DKIM key for DOMAIN and prints the TXT record to publish. The current key keeps signing until
DNS serves the new record (checked on verify and by the periodic DNS re-check), then the new key signs and
the old record must stay published for queue_lifetime, so mail signed before still verifies. One rotation
at a time. The same as POST /api/v1/domains/:id/dkim/rotate.`,
  backup: `Usage: mailwright backup FILE

Writes a consistent copy of the data directory to FILE (mode 0600) while serve runs: a snapshot of the
database and every other file there (the TLS certificate and key, the Domain Connect key). The file is
checksummed; restore checks it. Scheduled backups: backup_schedule in the configuration.`,
  restore: `Usage: mailwright restore FILE

Puts the backup FILE back into the data directory (made if missing, as on a new machine). Refuses while
serve runs on it. Checks the file's checksums and the database's integrity before it changes anything;
what it replaces is kept beside it as NAME.before-restore-TIME. Queued mail is delivered once serve starts.`,
};

async function main(argv: string[]): Promise<number> {
  const [command = '', sub, ...rest] = argv;
  if (command === '' || command === 'help' || command === '--help' || command === '-h') {
    console.log(HELP[sub && HELP[sub] ? sub : '']);
    return command === '' ? EX_USAGE : 0;
  }
  if (!(command in HELP)) throw new UsageError(`unknown command "${command}"`);
  if (sub === '--help' || sub === '-h' || rest.includes('--help') || rest.includes('-h')) {
    console.log(HELP[command]);
    return 0;
  }
  if (command === 'serve') {
    if (sub !== undefined) throw new UsageError(`serve takes no arguments, got "${sub}"`);
    return serve(loadConfig());
  }
  // Before loadConfig: try reads no configuration file and few variables (try/try.ts).
  if (command === 'try') return runTry(tryOptions([sub, ...rest].filter((a) => a !== undefined)));
  const config = loadConfig();
  if (command === 'backup' || command === 'restore') {
    const { positionals } = parseArgs({ args: [sub, ...rest].filter((a) => a !== undefined), allowPositionals: true, strict: true });
    if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one FILE`);
    if (command === 'backup') {
      requireDatabase(config);
      const made = await createBackup({ dataDir: config.dataDir, file: positionals[0], skip: [config.backupDir] });
      for (const path of made.skipped) console.error(`mailwright: left out ${path}: not a regular file or folder`);
      console.log(`wrote ${made.file} (${made.bytes} bytes: the database and ${made.entries.filter((e) => e.type === 'file').length - 1} other files)`);
      return 0;
    }
    const done = await restoreBackup(positionals[0], config.dataDir);
    console.log(`restored ${done.restored.join(', ')} into ${config.dataDir} from the backup of ${done.manifest.created} (${done.manifest.hostname})`);
    if (done.movedAside.length) console.log(`kept what they replaced as ${done.movedAside.join(', ')}`);
    return 0;
  }
  if (command === 'doctor') {
    if (sub !== undefined) throw new UsageError(`doctor takes no arguments, got "${sub}"`);
    requireDatabase(config);
    const damage = await databaseProblems(databasePath(config.dataDir));
    if (damage) {
      console.log(damage.join('\n'));
      return 1;
    }
    const db = openStore(config);
    try {
      return await doctor(config, db);
    } finally {
      db.close();
    }
  }
  if (command === 'dkim') {
    if (sub !== 'rotate' || rest.length !== 1) throw new UsageError('use "dkim rotate DOMAIN"');
    requireDatabase(config);
    const key = await generateDkimKey();
    return withStore(config, (db) => {
      const domain = holderOf(db, rest[0].trim().toLowerCase());
      if (!domain || domain.name !== rest[0].trim().toLowerCase()) throw new Error(`no domain ${rest[0]} on this box`);
      try {
        db.transaction(() => startRotation(db, systemClock, domain.workspace_id, domain.id, key)).immediate();
      } catch (err) {
        if (err instanceof RotationInProgress) throw new Error(`a new key for ${domain.name} already waits for its DNS record; mailwright doctor or the dashboard shows it`);
        throw err;
      }
      console.log(`Publish this TXT record; the new key signs once DNS serves it:\n${dkimName({ selector: key.selector, domain: domain.name })}  TXT  "${dkimValue(key.publicKey)}"`);
    });
  }
  if (command === 'queue') {
    if (sub !== 'list' && sub !== 'flush') throw new UsageError(`unknown command "queue ${sub ?? ''}"; use "queue list" or "queue flush"`);
    const { values } = parseArgs({ args: rest, strict: true, options: { json: { type: 'boolean' } } });
    requireDatabase(config);
    return withStore(config, (db) => {
      if (sub === 'flush') {
        console.log(`${flushQueue(db)} deliveries will be attempted now`);
        return;
      }
      const rows = listQueue(db);
      if (values.json) console.log(JSON.stringify(rows, null, 2));
      else if (rows.length === 0) console.log('The queue is empty.');
      else for (const r of rows) console.log([r.emailId, r.recipient, r.state, `attempts ${r.attempts}`, r.nextAttemptAt ? `next ${r.nextAttemptAt}` : '', r.lastResponse ?? ''].filter(Boolean).join('  '));
    });
  }
  if (command === 'setup') {
    if (sub !== 'link' || rest.length) throw new UsageError('use "setup link"');
    return withStore(config, (db) => {
      const token = issueSetupToken(db, systemClock);
      if (token === null) throw new Error(`this box has an owner already: sign in at ${config.publicUrl.replace(/\/+$/, '')}/login, or add a user with 'mailwright user add'`);
      console.log(setupLink(config.publicUrl, token));
      console.error('mailwright: open it in a browser to create the owner; it works once, for 24 hours, and replaces any earlier link');
    });
  }
  if (command === 'workspace') {
    if (sub !== 'create') throw new UsageError(`unknown command "workspace ${sub ?? ''}"; did you mean "workspace create NAME"?`);
    const { positionals } = parseArgs({ args: rest, allowPositionals: true, strict: true });
    if (positionals.length !== 1) throw new UsageError('workspace create takes exactly one NAME');
    return withStore(config, (db) => console.log(createWorkspace(db, systemClock, positionals[0]).id));
  }
  if (command === 'user' && sub === 'unlock') {
    const { positionals } = parseArgs({ args: rest, allowPositionals: true, strict: true });
    if (positionals.length !== 1) throw new UsageError('user unlock takes exactly one EMAIL');
    requireDatabase(config);
    return withStore(config, (db) => {
      if (!findUserByEmail(db, positionals[0].trim().toLowerCase())) throw new Error(`no user ${positionals[0]}`);
      console.log(`cleared ${unlockLogin(db)} failed login attempts: those against ${positionals[0]} and every address's`);
    });
  }
  if (command === 'user' && sub === 'passwd') {
    const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, strict: true, options: { 'password-stdin': { type: 'boolean' } } });
    if (positionals.length !== 1) throw new UsageError('user passwd takes exactly one EMAIL');
    if (!values['password-stdin']) throw new UsageError('user passwd needs --password-stdin (the passphrase is never taken from the command line)');
    return withStore(config, async (db) => {
      const user = findUserByEmail(db, positionals[0]);
      if (!user) throw new Error(`no user ${positionals[0]}`);
      const password = (await text(process.stdin)).replace(/\r?\n$/, '');
      const weak = passphraseProblem(password, user.email);
      if (weak) throw new Error(`the passphrase ${weak}`);
      const passwordHash = await hashPassword(password);
      // One transaction: no session outlives the passphrase it was opened with.
      const revoked = db.transaction(() => {
        if (!setPasswordHash(db, user.id, passwordHash)) throw new Error(`no user ${positionals[0]}`);
        return revokeUserSessions(db, systemClock, user.id);
      }).immediate();
      console.log(`set a new passphrase for ${user.email} and signed out its ${revoked} ${revoked === 1 ? 'session' : 'sessions'}`);
    });
  }
  if (command === 'user') {
    if (sub !== 'add') throw new UsageError(`unknown command "user ${sub ?? ''}"; did you mean "user add", "user passwd" or "user unlock"?`);
    const { values } = parseArgs({ args: rest, strict: true, options: { email: { type: 'string' }, workspace: { type: 'string' }, 'password-stdin': { type: 'boolean' } } });
    if (!values.email) throw new UsageError('user add needs --email ADDRESS');
    if (!values['password-stdin']) throw new UsageError('user add needs --password-stdin (the password is never taken from the command line)');
    const password = (await text(process.stdin)).replace(/\r?\n$/, '');
    return withStore(config, async (db) => {
      const workspace = pickWorkspace(db, values.workspace);
      console.log((await createUser(db, systemClock, { workspaceId: workspace.id, email: values.email!, password })).id);
    });
  }
  if (sub !== 'create') throw new UsageError(`unknown command "key ${sub ?? ''}"; did you mean "key create --name NAME"?`);
  const { values } = parseArgs({ args: rest, strict: true, options: { name: { type: 'string' }, workspace: { type: 'string' } } });
  const name = values.name?.trim();
  if (!name || name.length > 100) throw new UsageError('key create needs --name NAME (1 to 100 characters)');
  return withStore(config, (db) => console.log(createKey(db, systemClock, pickWorkspace(db, values.workspace).id, name).key));
}

function tryOptions(args: string[]) {
  let values: { dir?: string; 'http-port'?: string; 'smtp-port'?: string; 'submission-port'?: string };
  try {
    ({ values } = parseArgs({ args, strict: true, options: { dir: { type: 'string' }, 'http-port': { type: 'string' }, 'smtp-port': { type: 'string' }, 'submission-port': { type: 'string' } } }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const port = (flag: string, raw: string | undefined, fallback: number, min = 1) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!/^\d{1,5}$/.test(raw) || n < min || n > 65535) throw new UsageError(`--${flag} must be a port from ${min} to 65535, got "${raw}"`);
    return n;
  };
  if (values.dir !== undefined && !values.dir.trim()) throw new UsageError('--dir must name a directory');
  return {
    dir: values.dir ?? TRY_DEFAULTS.dir,
    httpPort: port('http-port', values['http-port'], TRY_DEFAULTS.httpPort),
    smtpPort: port('smtp-port', values['smtp-port'], TRY_DEFAULTS.smtpPort),
    submissionPort: port('submission-port', values['submission-port'], TRY_DEFAULTS.submissionPort, 0),
  };
}

/**
 * The commands that read the box, or act on what it must already hold (queued mail, a domain, a user), refuse a
 * data directory without a database: making an empty one there would answer "the queue is empty" about a box
 * that is not this one. Exit 78, naming the file and the setting that points elsewhere.
 */
function requireDatabase(config: Config): void {
  const file = databasePath(config.dataDir);
  if (existsSync(file)) return;
  throw new ConfigError(
    `no database at ${file}: no box has run with this data directory. Point data_dir (MAILWRIGHT_DATA_DIR) at the box's data directory ` +
      `(the systemd unit's is /var/lib/mailwright), or run 'mailwright serve' here first. Nothing was created.`,
  );
}

async function withStore(config: Config, work: (db: Db) => void | Promise<void>): Promise<number> {
  const db = openStore(config);
  try {
    await work(db);
    return 0;
  } finally {
    db.close();
  }
}

function pickWorkspace(db: Db, idOrName = DEFAULT_WORKSPACE) {
  const workspace = findWorkspace(db, idOrName);
  if (!workspace) throw new Error(`no workspace "${idOrName}"`);
  return workspace;
}

async function serve(config: Config): Promise<number> {
  const log = createLog({ level: config.logLevel });
  process.on('uncaughtException', (err) => {
    log.error('uncaught exception; exiting', { err });
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    log.error('unhandled rejection; exiting', { err });
    process.exit(1);
  });
  // `npm ci` builds the dashboard; a checkout whose UI sources changed since is built again here (about a second).
  if (!isBuilt()) {
    log.info('building the dashboard');
    await buildDashboard().catch((err) => log.error('the dashboard could not be built; the API works without it', { err }));
  }
  const running = await startApp(config, { log });
  if (process.stderr.isTTY) await showSetupLink(running, config, log);
  return new Promise((resolve) => {
    const shutdown = (signal: string) => {
      log.info('shutting down', { signal });
      running.stop().then(() => resolve(0));
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    // `systemctl reload`: a renewed TLS certificate and the settings that can change live (config/live.ts LIVE_KEYS)
    // are taken without dropping a connection.
    process.on('SIGHUP', () => {
      let next: Config;
      try {
        next = loadConfig();
      } catch (err) {
        log.error('reload: the configuration does not load; keeping the running one', { err });
        return;
      }
      running.reload(next).catch((err: unknown) => log.error('reload failed; keeping the current certificate and settings', { err }));
    });
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
}

/**
 * serve on a terminal (npm start) shows a box without an owner its one-time link there, where the newcomer
 * looks. Never through the logger: under systemd stderr is no terminal, and the log is journald's.
 */
async function showSetupLink(running: RunningApp, config: Config, log: Log): Promise<void> {
  const { db, clock, commit } = running.app;
  if (hasUsers(db)) return;
  let token: string | null;
  try {
    token = await commit.run(() => issueSetupToken(db, clock));
  } catch (err) {
    if (storageFault(err) !== 'full') throw err;
    log.warn(`could not issue a setup link: the disk is full; run '${SETUP_LINK_COMMAND}' once there is room`);
    return;
  }
  if (token) process.stderr.write(`\nOpen this link to create the owner of this box (it works once, for 24 hours):\n  ${setupLink(config.publicUrl, token)}\n\n`);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof UsageError) {
      console.error(`mailwright: ${message}\nRun 'mailwright --help' for usage.`);
      process.exit(EX_USAGE);
    }
    console.error(`mailwright: ${message}`);
    process.exit(err instanceof ConfigError || err instanceof StartupError ? EX_CONFIG : 1);
  },
);
