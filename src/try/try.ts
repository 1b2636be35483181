// `mailwright try`: the whole box on this machine with no DNS, for a first look (mox's `localserve`). Its own
// data directory (never a box's: db/try-marker.ts), loopback ports, the local domain mail.localhost with an
// inbox and an owner (setup.ts), and the local outbox for mail to other domains (send/local-outbox.ts). It
// reads no configuration file and only the MAILWRIGHT_* variables below: a box's settings must not leak in.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig, type Config } from '../config/config.ts';
import { startApp } from '../app.ts';
import { openStore } from '../start/store.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { sqliteStore } from '../db/store.ts';
import { StartupError } from '../errors.ts';
import { createLog, exitOnUncaught } from '../log.ts';
import { systemClock } from '../clock.ts';
import { markTryDir, tryMayUse } from '../db/try-marker.ts';
import { servingProcesses } from '../db/serving.ts';
import { buildDashboard, isBuilt } from '../dashboard/build.ts';
import { prepareTryBox, TRY_DOMAIN, TRY_HOSTNAME, type TryAccess } from './setup.ts';

export const TRY_DEFAULTS = { dir: 'data-try', httpPort: 8025, smtpPort: 1025, submissionPort: 1587 };

export interface TryOptions {
  dir: string;
  httpPort: number;
  smtpPort: number;
  /** 0: no submission listener. */
  submissionPort: number;
}

const FLAGS: Record<string, string> = { MAILWRIGHT_HTTP_PORT: '--http-port', MAILWRIGHT_SMTP_PORT: '--smtp-port', MAILWRIGHT_SUBMISSION_PORT: '--submission-port' };

/** The MAILWRIGHT_* variables try takes from its environment; every other setting is its own. */
const PASSED_THROUGH = ['MAILWRIGHT_DNS_SERVERS', 'MAILWRIGHT_LOG_LEVEL'];

export const TRY_HELP = `Usage: mailwright try [--dir DIR] [--http-port N] [--smtp-port N] [--submission-port N]

Runs a box on this machine to try Mailwright without DNS, in the foreground until Ctrl-C. It listens on
127.0.0.1 only: the dashboard and API on port ${TRY_DEFAULTS.httpPort}, SMTP on ${TRY_DEFAULTS.smtpPort}, submission on ${TRY_DEFAULTS.submissionPort} (0 turns it off).
It has the domain ${TRY_DOMAIN} (verified and receiving, no DNS needed), the inbox hello@${TRY_DOMAIN} and an
owner, and prints the dashboard link, a passphrase and an API key (new at each start: the ones before stop
working), with a swaks and a curl line to try.

Mail to ${TRY_DOMAIN} is delivered to the box itself. Mail to any other domain is kept in the local outbox and
never sent: it shows in Sent, each recipient with a delivered event from "local outbox", its bytes at
GET /api/v1/emails/:id/raw.

Its data lives in DIR (default ./${TRY_DEFAULTS.dir}), marked as try's: try refuses a directory holding anything
else (a box's data directory), and serve refuses try's. Run it again for the same box; delete DIR to start over.
It reads no configuration file; of the MAILWRIGHT_* variables only ${PASSED_THROUGH.join(' and ')}.`;

/** The box's settings for try: loopback, its own ports and names, nothing from a configuration file. */
export function tryConfig(opts: TryOptions, env: NodeJS.ProcessEnv): Config {
  const passed = Object.fromEntries(PASSED_THROUGH.flatMap((name) => (env[name] === undefined ? [] : [[name, env[name]]])));
  return loadConfig(
    {
      MAILWRIGHT_LOG_LEVEL: 'warn',
      ...passed,
      MAILWRIGHT_DATA_DIR: opts.dir,
      MAILWRIGHT_HTTP_HOST: '127.0.0.1',
      MAILWRIGHT_HTTP_PORT: String(opts.httpPort),
      MAILWRIGHT_SMTP_HOST: '127.0.0.1',
      MAILWRIGHT_SMTP_PORT: String(opts.smtpPort),
      MAILWRIGHT_SUBMISSION_PORT: String(opts.submissionPort),
      MAILWRIGHT_HOSTNAME: TRY_HOSTNAME,
      MAILWRIGHT_PUBLIC_URL: `http://127.0.0.1:${opts.httpPort}`,
      // Webhooks to an app on this machine (http://localhost:3000/...) are the point of trying them.
      MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true',
      // A laptop's first message meets cold analysis threads, and only this machine can reach the listener:
      // a 451 for a slow first analysis would be all a newcomer sees.
      MAILWRIGHT_ANALYZE_TIMEOUT: '2m',
    },
    { readFile: false },
  );
}

/** Runs the try box until SIGINT or SIGTERM; resolves with the exit code. */
export async function runTry(opts: TryOptions, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const dir = resolve(opts.dir);
  if (!tryMayUse(dir)) {
    throw new StartupError(`${dir} holds files that 'mailwright try' did not make (a box's data directory?); try keeps its data in a directory of its own: name an empty or new one with --dir`);
  }
  const running = servingProcesses(dir);
  if (running.length) throw new StartupError(`a box already runs on ${dir} (process ${running.join(', ')}): stop it first, or give try another --dir`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  markTryDir(dir);
  const config = tryConfig({ ...opts, dir }, env);
  // Logs go to stderr: stdout carries what a newcomer reads and copies.
  const log = createLog({ level: config.logLevel, write: (line) => process.stderr.write(`${line}\n`) });
  exitOnUncaught(log);

  const db = openStore(config, systemClock, log);
  let access: TryAccess;
  try {
    access = await prepareTryBox(sqliteStore(db, new GroupCommit(db)), systemClock);
  } finally {
    db.close();
  }
  if (!isBuilt()) await buildDashboard().catch((err) => log.error('the dashboard could not be built; the API works without it', { err }));
  const app = await startApp(config, { log, tryMode: { localDomains: [TRY_DOMAIN] } }).catch((err: unknown) => {
    // A port in use: try takes its ports as flags, not as the variables serve's message names.
    if (err instanceof StartupError) err.message = err.message.replace(/set (MAILWRIGHT_\w+_PORT)/, (_, name: string) => `give try another ${FLAGS[name] ?? name}`);
    throw err;
  });
  process.stdout.write(welcome(config, access, app.submission?.port ?? null));
  return new Promise((done) => {
    const shutdown = () => void app.stop().then(() => done(0));
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
}

/** What try prints once it listens: where everything is, and two lines to paste. */
export function welcome(config: Config, access: TryAccess, submissionPort: number | null): string {
  const url = config.publicUrl;
  const send = JSON.stringify({ from: access.inbox, to: 'someone@example.com', subject: 'Hello from Mailwright', text: 'Kept in the local outbox: try mode never sends.' });
  return `
Mailwright is running in try mode: mail to ${TRY_DOMAIN} arrives here; mail to other domains is kept in the
local outbox, never sent.

  Dashboard   ${url}/
  Sign in     ${access.owner}
  Passphrase  ${access.passphrase}
  Inbox       ${access.inbox}
  API key     ${access.key}
  MCP         ${url}/api/v1/mcp (for AI clients, with the API key as bearer token)
  SMTP        127.0.0.1:${config.smtpPort} (mail for ${TRY_DOMAIN})
${submissionPort ? `  Submission  127.0.0.1:${submissionPort} (STARTTLS; any user name, the API key as password)\n` : ''}  Data        ${config.dataDir}

Send the inbox a message:
  swaks --server 127.0.0.1:${config.smtpPort} --to ${access.inbox} --from you@example.test --header 'Subject: Hello'

Send one through the API (kept in the outbox: Sent in the dashboard):
  curl ${url}/api/v1/emails -H 'Authorization: Bearer ${access.key}' -H 'Content-Type: application/json' -d '${send}'

The passphrase and the API key are new at each start. Ctrl-C stops; 'mailwright try' again comes back to the same box.
`;
}
