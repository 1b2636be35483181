// The command line (scripts/mailwright): `serve` runs the appliance, `try` a box to try without DNS; the other
// commands act on the same data directory (cli/commands.ts) and their help is cli/help.ts. A usage error exits
// 2, a ConfigError or StartupError 78, any other error 1.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config/config.ts';
import { startApp, type RunningApp } from './app.ts';
import { StartupError } from './errors.ts';
import { createLog, exitOnUncaught, type Log } from './log.ts';
import { storageFault } from './db/health.ts';
import { hasUsers, issueSetupToken, SETUP_LINK_COMMAND, setupLink } from './account/setup.ts';
import { buildDashboard, isBuilt } from './dashboard/build.ts';
import { runTry, TRY_DEFAULTS } from './try/try.ts';
import { HELP, UsageError } from './cli/help.ts';
import { runCommand } from './cli/commands.ts';
import { McpStartError, runMcpStdio } from './mcp/stdio.ts';

// Everything this process creates (database, WAL, keys, backups) is its owner's alone (DESIGN.md 3, SEC-01).
process.umask(0o077);

const EX_USAGE = 2;
const EX_CONFIG = 78; // sysexits.h; the systemd unit does not restart on it, since retrying cannot help

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
  if (command === 'mcp') {
    if (sub !== undefined) throw new UsageError(`mcp takes no arguments, got "${sub}"`);
    return runMcpStdio(process.env, loadConfig);
  }
  const config = loadConfig();
  return runCommand(config, command, sub, rest);
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

async function serve(config: Config): Promise<number> {
  const log = createLog({ level: config.logLevel });
  exitOnUncaught(log);
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
  const { store, clock } = running.app;
  if (await store.read(hasUsers())) return;
  let token: string | null;
  try {
    token = await store.write(() => issueSetupToken(clock));
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
    process.exit(err instanceof ConfigError || err instanceof StartupError || err instanceof McpStartError ? EX_CONFIG : 1);
  },
);
