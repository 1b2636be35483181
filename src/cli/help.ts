// What the command line says about itself: `mailwright --help`, each command's help, and the UsageError a wrong
// invocation raises (main.ts answers it with exit 2 and a pointer to --help).
import { DEFAULT_WORKSPACE } from '../account/workspaces.ts';
import { TRY_HELP } from '../try/try.ts';

export class UsageError extends Error {}

export const HELP: Record<string, string> = {
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
  mcp                    serve MCP on stdin/stdout for an AI client, with the key in MAILWRIGHT_API_KEY
  backup FILE            copy all state into one file while the box runs
  restore FILE           put a backup back (serve stopped)
  migrate --to URL       move the box into an empty PostgreSQL database (serve stopped)

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
           [--permission full_access|sending_access|inbox_access] [--domain DOMAIN_ID] [--inbox INBOX_ID]...

Creates an API key in a workspace (default: "${DEFAULT_WORKSPACE}") and prints only the key (re_...) on
standard output. It is shown this once: the box keeps only its hash. --permission limits what it may do
(default full_access): sending_access sends and reads back its own sends, from one domain with --domain;
inbox_access reaches the mail of the inboxes named by --inbox (one or more).`,
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
On PostgreSQL (database_url) it also checks the server's version, its replicas' lag and each node's clock.
A data directory without a database is refused (exit 78): point MAILWRIGHT_DATA_DIR at the box's.`,
  dkim: `Usage: mailwright dkim rotate DOMAIN

Makes a new DKIM key for DOMAIN and prints the TXT record to publish. The current key keeps signing until
DNS serves the new record (checked on verify and by the periodic DNS re-check), then the new key signs and
the old record must stay published for queue_lifetime, so mail signed before still verifies. One rotation
at a time. The same as POST /api/v1/domains/:id/dkim/rotate.`,
  mcp: `Usage: MAILWRIGHT_API_KEY=re_... mailwright mcp

Serves the box's MCP tools (search, read, reply, file and send mail) on standard input and output, for an
AI client that starts it as a program. It calls the API of a running serve with the key, and offers only the
tools the key's permission allows. On the box it finds the API from the configuration (http_host, http_port);
from another machine set MAILWRIGHT_API_URL (https://mail.example.com/api/v1). Clients that speak HTTP use
POST /api/v1/mcp with the key as a bearer token instead. See docs/mcp.md.`,
  backup: `Usage: mailwright backup FILE

Writes a consistent copy of the data directory to FILE (mode 0600) while serve runs: a snapshot of the
database and every other file there (the TLS certificate and key, the Domain Connect key). The file is
checksummed; restore checks it. Scheduled backups: backup_schedule in the configuration.`,
  restore: `Usage: mailwright restore FILE

Puts the backup FILE back into the data directory (made if missing, as on a new machine). Refuses while
serve runs on it. Checks the file's checksums and the database's integrity before it changes anything;
what it replaces is kept beside it as NAME.before-restore-TIME. Queued mail is delivered once serve starts.`,
  migrate: `Usage: mailwright migrate --to postgres://USER:PASSWORD@HOST:PORT/DATABASE

Copies the box from its data directory's SQLite database into an empty PostgreSQL database (15 or later):
every workspace, mail, the queue, keys, DKIM keys and settings. serve must be stopped. Each table's row count
and checksum are compared on both sides; the mail is indexed for search. Then it prints what to change: set
database_url and start serve. The SQLite database is left as it was. See docs/scaling.md.`,
};
