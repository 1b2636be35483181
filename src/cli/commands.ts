// The commands that act on a box's data directory: backup, restore, doctor, dkim, queue, setup, workspace, user
// and key. They work while `serve` runs (SQLite WAL with a busy timeout lets them share the file), but for
// `restore`, which replaces the database and so refuses while a serve uses it. main.ts dispatches to them.
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { text } from 'node:stream/consumers';
import { ConfigError, type Config } from '../config/config.ts';
import { systemClock } from '../clock.ts';
import { databasePath } from '../db/open.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { postgresStore, sqliteStore, type Store } from '../db/store.ts';
import { databaseProblems } from '../db/integrity.ts';
import { createBackup } from '../db/backup.ts';
import { postgresSnapshot } from '../db/backup-postgres.ts';
import { restoreBackup } from '../db/restore.ts';
import { issueSetupToken, setupLink } from '../account/setup.ts';
import { createWorkspace, findWorkspace, DEFAULT_WORKSPACE } from '../account/workspaces.ts';
import { createUser, findUserByEmail, setPasswordHash } from '../account/users.ts';
import { passphraseProblem } from '../account/passphrase.ts';
import { hashPassword } from '../account/passwords.ts';
import { revokeUserSessions } from '../account/sessions.ts';
import { unlockLogin } from '../account/login-throttle.ts';
import { parseKeyPermission } from '../account/key-scope.ts';
import { ApiError } from '../errors.ts';
import { createKeyRecorded } from '../account/key-changes.ts';
import { cliActor, recordAudit } from '../account/audit.ts';
import { generateDkimKey, RotationInProgress, startRotation } from '../domains/dkim-keys.ts';
import { holderOf } from '../domains/claims.ts';
import { dkimName, dkimValue } from '../dns/records.ts';
import { flushQueue, listQueue } from '../send/queue-admin.ts';
import { doctor } from '../doctor/doctor.ts';
import { describeDatabase, openPostgres, openStore, postgresHasBox } from '../start/store.ts';
import { UsageError } from './help.ts';
import { migrateCommand } from './migrate.ts';

/** Runs `command` (one of HELP's but serve and try) with its arguments; resolves with the exit code. */
export async function runCommand(config: Config, command: string, sub: string | undefined, rest: string[]): Promise<number> {
  if (config.databaseUrl && command === 'restore') {
    throw new ConfigError(
      `restore puts a backup into a data directory's SQLite database, and this box keeps its state in PostgreSQL (database_url, MAILWRIGHT_DATABASE_URL ${describeDatabase(config.databaseUrl)}). ` +
        `Restore into a data directory without database_url, then move that box into an empty PostgreSQL database with 'mailwright migrate --to URL'. Nothing was changed.`,
    );
  }
  if (command === 'migrate') {
    // The box to move must exist: an empty data directory is refused, never made.
    if (!config.databaseUrl) await requireDatabase(config);
    return migrateCommand(config, [sub, ...rest].filter((a) => a !== undefined));
  }
  if (command === 'backup' || command === 'restore') {
    const { positionals } = parseArgs({ args: [sub, ...rest].filter((a) => a !== undefined), allowPositionals: true, strict: true });
    if (positionals.length !== 1) throw new UsageError(`${command} takes exactly one FILE`);
    if (command === 'backup') {
      await requireDatabase(config);
      // On PostgreSQL the backup's database is a SQLite one made from PostgreSQL's rows: the same file either way.
      const snapshot = config.databaseUrl ? postgresSnapshot(config.databaseUrl) : undefined;
      const made = await createBackup({ dataDir: config.dataDir, file: positionals[0], skip: [config.backupDir], snapshot });
      // Recorded in the box once the backup is whole (so the backup itself does not hold its own row).
      await withStore(config, async ({ store }) => {
        await store.write(() => recordAudit(systemClock.now(), cliActor(), { workspaceId: null, action: 'box.backup_created', target: { type: 'backup', id: null, name: made.file }, data: { bytes: made.bytes } }));
      });
      for (const path of made.skipped) console.error(`mailwright: left out ${path}: not a regular file or folder`);
      console.log(`wrote ${made.file} (${made.bytes} bytes: the database and ${made.entries.filter((e) => e.type === 'file').length - 1} other files)`);
      return 0;
    }
    const done = await restoreBackup(positionals[0], config.dataDir);
    await withStore(config, async ({ store }) => {
      await store.write(() => recordAudit(systemClock.now(), cliActor(), { workspaceId: null, action: 'box.restored', target: { type: 'backup', id: null, name: positionals[0] }, data: { backupCreated: done.manifest.created, hostname: done.manifest.hostname } }));
    });
    console.log(`restored ${done.restored.join(', ')} into ${config.dataDir} from the backup of ${done.manifest.created} (${done.manifest.hostname})`);
    if (done.movedAside.length) console.log(`kept what they replaced as ${done.movedAside.join(', ')}`);
    return 0;
  }
  if (command === 'doctor') {
    if (sub !== undefined) throw new UsageError(`doctor takes no arguments, got "${sub}"`);
    await requireDatabase(config);
    if (config.databaseUrl) {
      let code = 1;
      await withStore(config, async ({ store }) => void (code = await doctor(config, store, null)));
      return code;
    }
    const damage = await databaseProblems(databasePath(config.dataDir));
    if (damage) {
      console.log(damage.join('\n'));
      return 1;
    }
    const db = openStore(config);
    try {
      return await doctor(config, sqliteStore(db, new GroupCommit(db)), db);
    } finally {
      db.close();
    }
  }
  if (command === 'dkim') {
    if (sub !== 'rotate' || rest.length !== 1) throw new UsageError('use "dkim rotate DOMAIN"');
    await requireDatabase(config);
    const key = await generateDkimKey();
    return withStore(config, async ({ store }) => {
      const name = rest[0].trim().toLowerCase();
      const domain = await store.read(holderOf(name));
      if (!domain || domain.name !== name) throw new Error(`no domain ${rest[0]} on this box`);
      const actor = cliActor(); // read once: a write may run its query again
      try {
        await store.write(function* () {
          yield* startRotation(systemClock, domain.workspace_id, domain.id, key);
          yield* recordAudit(systemClock.now(), actor, { workspaceId: domain.workspace_id, action: 'domain.dkim_rotated', target: { type: 'domain', id: domain.id, name: domain.name }, data: { selector: key.selector } });
        });
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
    await requireDatabase(config);
    return withStore(config, async ({ store }) => {
      if (sub === 'flush') {
        console.log(`${await store.write(() => flushQueue())} deliveries will be attempted now`);
        return;
      }
      const rows = await store.read(listQueue());
      if (values.json) console.log(JSON.stringify(rows, null, 2));
      else if (rows.length === 0) console.log('The queue is empty.');
      else for (const r of rows) console.log([r.emailId, r.recipient, r.state, `attempts ${r.attempts}`, r.nextAttemptAt ? `next ${r.nextAttemptAt}` : '', r.lastResponse ?? ''].filter(Boolean).join('  '));
    });
  }
  if (command === 'setup') {
    if (sub !== 'link' || rest.length) throw new UsageError('use "setup link"');
    return withStore(config, async ({ store }) => {
      const token = await store.write(() => issueSetupToken(systemClock));
      if (token === null) throw new Error(`this box has an owner already: sign in at ${config.publicUrl.replace(/\/+$/, '')}/login, or add a user with 'mailwright user add'`);
      console.log(setupLink(config.publicUrl, token));
      console.error('mailwright: open it in a browser to create the owner; it works once, for 24 hours, and replaces any earlier link');
    });
  }
  if (command === 'workspace') {
    if (sub !== 'create') throw new UsageError(`unknown command "workspace ${sub ?? ''}"; did you mean "workspace create NAME"?`);
    const { positionals } = parseArgs({ args: rest, allowPositionals: true, strict: true });
    if (positionals.length !== 1) throw new UsageError('workspace create takes exactly one NAME');
    return withStore(config, async ({ store }) => {
      const actor = cliActor(); // read once: a write may run its query again
      const workspace = await store.write(function* () {
        const made = yield* createWorkspace(systemClock, positionals[0]);
        yield* recordAudit(systemClock.now(), actor, { workspaceId: null, action: 'workspace.created', target: { type: 'workspace', id: made.id, name: made.name } });
        return made;
      });
      console.log(workspace.id);
    });
  }
  if (command === 'user' && sub === 'unlock') {
    const { positionals } = parseArgs({ args: rest, allowPositionals: true, strict: true });
    if (positionals.length !== 1) throw new UsageError('user unlock takes exactly one EMAIL');
    await requireDatabase(config);
    return withStore(config, async ({ store }) => {
      const user = await store.read(findUserByEmail(positionals[0].trim().toLowerCase()));
      if (!user) throw new Error(`no user ${positionals[0]}`);
      const actor = cliActor();
      const cleared = await store.write(function* () {
        const n = yield* unlockLogin();
        yield* recordAudit(systemClock.now(), actor, { workspaceId: user.workspaceId, action: 'user.login_unlocked', target: { type: 'user', id: user.id, name: user.email }, data: { cleared: n } });
        return n;
      });
      console.log(`cleared ${cleared} failed login attempts: those against ${positionals[0]} and every address's`);
    });
  }
  if (command === 'user' && sub === 'passwd') {
    const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, strict: true, options: { 'password-stdin': { type: 'boolean' } } });
    if (positionals.length !== 1) throw new UsageError('user passwd takes exactly one EMAIL');
    if (!values['password-stdin']) throw new UsageError('user passwd needs --password-stdin (the passphrase is never taken from the command line)');
    return withStore(config, async ({ store }) => {
      const user = await store.read(findUserByEmail(positionals[0]));
      if (!user) throw new Error(`no user ${positionals[0]}`);
      const password = (await text(process.stdin)).replace(/\r?\n$/, '');
      const weak = passphraseProblem(password, user.email);
      if (weak) throw new Error(`the passphrase ${weak}`);
      const passwordHash = await hashPassword(password);
      // One transaction: no session outlives the passphrase it was opened with.
      const actor = cliActor();
      const revoked = await store.write(function* () {
        if (!(yield* setPasswordHash(user.id, passwordHash))) throw new Error(`no user ${positionals[0]}`);
        const sessionsRevoked = yield* revokeUserSessions(systemClock, user.id);
        yield* recordAudit(systemClock.now(), actor, { workspaceId: user.workspaceId, action: 'user.password_changed', target: { type: 'user', id: user.id, name: user.email }, data: { sessionsRevoked } });
        return sessionsRevoked;
      });
      console.log(`set a new passphrase for ${user.email} and signed out its ${revoked} ${revoked === 1 ? 'session' : 'sessions'}`);
    });
  }
  if (command === 'user') {
    if (sub !== 'add') throw new UsageError(`unknown command "user ${sub ?? ''}"; did you mean "user add", "user passwd" or "user unlock"?`);
    const { values } = parseArgs({ args: rest, strict: true, options: { email: { type: 'string' }, workspace: { type: 'string' }, 'password-stdin': { type: 'boolean' } } });
    if (!values.email) throw new UsageError('user add needs --email ADDRESS');
    if (!values['password-stdin']) throw new UsageError('user add needs --password-stdin (the password is never taken from the command line)');
    const password = (await text(process.stdin)).replace(/\r?\n$/, '');
    return withStore(config, async ({ store }) => {
      const workspace = await pickWorkspace(store, values.workspace);
      console.log((await createUser(store, systemClock, { workspaceId: workspace.id, email: values.email!, password }, cliActor())).id);
    });
  }
  if (sub !== 'create') throw new UsageError(`unknown command "key ${sub ?? ''}"; did you mean "key create --name NAME"?`);
  const { values } = parseArgs({
    args: rest,
    strict: true,
    options: { name: { type: 'string' }, workspace: { type: 'string' }, permission: { type: 'string' }, domain: { type: 'string' }, inbox: { type: 'string', multiple: true } },
  });
  const name = values.name?.trim();
  if (!name || name.length > 100) throw new UsageError('key create needs --name NAME (1 to 100 characters)');
  return withStore(config, async ({ store }) => {
    const workspaceId = (await pickWorkspace(store, values.workspace)).id;
    let scope;
    try {
      // The same checks as POST /keys; --domain and --inbox are its domain_id and inbox_ids.
      scope = await store.read(parseKeyPermission(workspaceId, { permission: values.permission, domain_id: values.domain, inbox_ids: values.inbox }));
    } catch (err) {
      if (err instanceof ApiError) throw new UsageError(`key create: ${err.message.replace(/^domain_id/, '--domain').replace(/^inbox_ids(\.\d+)?/, '--inbox').replace(/^permission/, '--permission')}`);
      throw err;
    }
    console.log((await store.write(() => createKeyRecorded(systemClock, cliActor(), workspaceId, name, scope))).key);
  });
}

/**
 * The commands that read the box, or act on what it must already hold (queued mail, a domain, a user), refuse a
 * data directory without a database: making an empty one there would answer "the queue is empty" about a box
 * that is not this one. Exit 78, naming the file and the setting that points elsewhere.
 */
async function requireDatabase(config: Config): Promise<void> {
  if (config.databaseUrl) {
    if (await postgresHasBox(config.databaseUrl)) return;
    throw new ConfigError(`no box has run on the database ${describeDatabase(config.databaseUrl)} (database_url, MAILWRIGHT_DATABASE_URL): run 'mailwright serve' with it first. Nothing was created.`);
  }
  const file = databasePath(config.dataDir);
  if (existsSync(file)) return;
  throw new ConfigError(
    `no database at ${file}: no box has run with this data directory. Point data_dir (MAILWRIGHT_DATA_DIR) at the box's data directory ` +
      `(the systemd unit's is /var/lib/mailwright), or run 'mailwright serve' here first. Nothing was created.`,
  );
}

/**
 * The box's store: the data directory's database (writes in BEGIN IMMEDIATE transactions, while serve may write
 * too), or PostgreSQL's with database_url, migrated as serve would.
 */
async function withStore(config: Config, work: (box: { store: Store }) => void | Promise<void>): Promise<number> {
  if (config.databaseUrl) {
    const pool = await openPostgres(config.databaseUrl);
    try {
      await work({ store: postgresStore(pool) });
      return 0;
    } finally {
      await pool.end();
    }
  }
  const db = openStore(config);
  try {
    await work({ store: sqliteStore(db, new GroupCommit(db)) });
    return 0;
  } finally {
    db.close();
  }
}

async function pickWorkspace(store: Store, idOrName = DEFAULT_WORKSPACE) {
  const workspace = await store.read(findWorkspace(idOrName));
  if (!workspace) throw new Error(`no workspace "${idOrName}"`);
  return workspace;
}
