// `mailwright backup` and `restore` across real processes: a backup taken while the box takes sends holds every
// send acknowledged before it began, restores on a fresh data directory and delivers the queued mail there;
// restore refuses while serve runs and refuses a damaged file without changing anything; and the scheduled job.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:net';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { DnsServer } from '../testkit/dns-server.ts';
import { startSmtpSink } from '../testkit/smtp-sink.ts';
import { request, runCli, sqliteOnly, startAppProcess, startTestApp, tempDir, testEnv, type Reply } from '../testkit/app.ts';
import { eventually, startDestinationDns } from '../testkit/outbound.ts';
import { ConfigError, loadConfig } from '../config/config.ts';
import { BackupError, createBackup, readBackup, scheduledBackup, verifyBackup } from './backup.ts';
import { restoreBackup } from './restore.ts';

let dns: DnsServer;
test.before(async () => {
  dns = await startDestinationDns();
});
test.after(() => dns.close());

const cleanup: string[] = [];
test.after(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});
const dirForTest = (label?: string) => {
  const dir = tempDir(label);
  cleanup.push(dir);
  return dir;
};

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.2', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

const envFor = (dir: string, mtaPort: number) =>
  testEnv(dir, {
    MAILWRIGHT_DNS_SERVERS: dns.address,
    MAILWRIGHT_MTA_PORT: String(mtaPort),
    MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true',
    MAILWRIGHT_RATE_LIMIT: '0',
    MAILWRIGHT_RETRY_SCHEDULE: '1s',
  });

const send = (url: string, key: string, i: number) =>
  request(`${url}/api/v1/emails`, { key, body: { from: 'app@backup.test', to: [`user${i}@dest.test`], subject: `message ${i}`, text: `body ${i}` } });

// uvu's assert has no rejects().
async function rejects(run: () => Promise<unknown>, expected: RegExp | (new (...args: any[]) => Error)): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (expected instanceof RegExp) assert.match((err as Error).message, expected);
    else assert.instance(err, expected);
    return;
  }
  assert.unreachable('should have been refused');
}

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const listing = (dir: string) => readdirSync(dir, { recursive: true }).map(String).sort();

// Shared by the tests below, in order: the backup taken under load, and the data directory it was restored to.
let backupFile = '';
let mtaPort = 0;
let restoredDir = '';
let acknowledged: Array<{ id: string; messageId: string }> = [];

sqliteOnly(test)('a backup taken while the box takes sends restores on a fresh data directory, whole, and its queue is delivered there', async () => {
  mtaPort = await freePort(); // nothing listens there yet: the mail waits in the queue, deferred
  const dir = dirForTest();
  const env = envFor(dir, mtaPort);
  backupFile = join(dirForTest('mailwright-backups-'), 'box.backup');
  const app = await startAppProcess(env);
  try {
    const key = (await runCli(['key', 'create', '--name', 'test'], env)).stdout.trim();
    const domain = (await request(`${app.url}/api/v1/domains`, { key, body: { name: 'backup.test' } })).body;
    dns.publish(domain.records);
    assert.is((await request(`${app.url}/api/v1/domains/${domain.id}/verify`, { method: 'POST', key })).body.status, 'verified');

    const before = await Promise.all(Array.from({ length: 30 }, (_, i) => send(app.url, key, i)));
    assert.ok(before.every((r) => r.status === 200));
    acknowledged = before.map((r) => ({ id: r.body.id, messageId: r.body.providerMessageId.slice(1, -1) }));

    // Sends keep arriving, four at a time, for as long as the backup runs.
    let writing = true;
    const during: Reply[] = [];
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; writing; i++) during.push(await send(app.url, key, 1000 + w * 10_000 + i));
    });
    const made = await runCli(['backup', backupFile], env);
    writing = false;
    await Promise.all(writers);
    assert.is(made.code, 0, made.stderr);
    assert.match(made.stdout, /wrote .*box\.backup/);
    assert.ok(during.length > 0 && during.every((r) => r.status === 200), `${during.length} sends during the backup, all accepted`);
    assert.is(statSync(backupFile).mode & 0o777, 0o600);
    assert.equal(readdirSync(join(backupFile, '..')), ['box.backup'], 'no temporary file is left beside it');

    const manifest = await verifyBackup(backupFile);
    assert.is(manifest.entries[0].path, 'mailwright.db');
    assert.ok(manifest.entries.some((e) => e.path === 'tls/self-signed.key'), 'the TLS key is in it');
    assert.not.ok(manifest.entries.some((e) => /^(run|mailwright\.db-wal|mailwright\.db-shm)$/.test(e.path.split('/')[0])), 'no live WAL, no serve marker');
  } finally {
    assert.is(await app.stop(), 0);
  }

  restoredDir = dirForTest();
  const env2 = envFor(restoredDir, mtaPort);
  const restored = await runCli(['restore', backupFile], env2);
  assert.is(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /restored .*mailwright\.db/);
  assert.is(statSync(join(restoredDir, 'tls')).mode & 0o777, 0o700);
  assert.is(statSync(join(restoredDir, 'tls', 'self-signed.key')).mode & 0o777, 0o600);
  assert.is(statSync(join(restoredDir, 'mailwright.db')).mode & 0o777, 0o600);
  assert.ok(existsSync(join(restoredDir, `test-config.toml.before-restore-${restored.stdout.match(/before-restore-(\w+)/)![1]}`)), 'what it replaced is kept');

  const db = new Database(join(restoredDir, 'mailwright.db'), { readonly: true });
  try {
    assert.equal(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
    for (const { id } of acknowledged) {
      const states = db.prepare('SELECT state FROM deliveries WHERE email_id = ?').pluck().all(id) as string[];
      assert.equal(states.length, 1, `${id} and its queue entry are in the backup`);
      assert.ok(['queued', 'deferred'].includes(states[0]), `${id} waits in the queue (${states[0]})`);
    }
  } finally {
    db.close();
  }

  const sink = await startSmtpSink({ host: '127.0.0.2', port: mtaPort });
  const app2 = await startAppProcess(env2);
  try {
    await eventually(() => acknowledged.every((a) => sink.messages.some((m) => m.raw.includes(`Message-ID: <${a.messageId}>`))), 60_000, 'every acknowledged send delivered from the restored box');
  } finally {
    assert.is(await app2.stop(), 0);
    await sink.close();
  }
});

sqliteOnly(test)('restore refuses while serve runs on the data directory, and changes nothing', async () => {
  const env = envFor(restoredDir, mtaPort);
  const app = await startAppProcess(env);
  try {
    const before = listing(restoredDir);
    const r = await runCli(['restore', backupFile], env);
    assert.is(r.code, 1);
    assert.match(r.stderr, /mailwright serve is running on .* \(pid \d+\): stop it first/);
    assert.equal(listing(restoredDir), before);
  } finally {
    assert.is(await app.stop(), 0);
  }
});

sqliteOnly(test)('a damaged backup file is refused with a clear message and changes nothing', async () => {
  const env = envFor(restoredDir, mtaPort);
  const before = { files: listing(restoredDir), db: sha(join(restoredDir, 'mailwright.db')) };
  const bad = join(dirForTest('mailwright-bad-'), 'bad.backup');
  const flip = (at: number) => {
    copyFileSync(backupFile, bad);
    const bytes = readFileSync(bad);
    bytes[at] ^= 0x01;
    writeFileSync(bad, bytes);
  };
  const size = statSync(backupFile).size;

  flip(Math.floor(size / 2)); // inside the database's bytes
  const r = await runCli(['restore', bad], env);
  assert.is(r.code, 1);
  assert.match(r.stderr, /bad\.backup is damaged or not a Mailwright backup \(mailwright\.db does not match its SHA-256\); nothing was restored/);

  for (const [at, why] of [
    [3, /no MAILWRIGHT-BACKUP header/],
    [40, /manifest/],
    [size - 10, /SHA-?256/],
  ] as const) {
    flip(at);
    await rejects(() => restoreBackup(bad, restoredDir), BackupError);
    await rejects(() => restoreBackup(bad, restoredDir), why);
  }
  writeFileSync(bad, readFileSync(backupFile).subarray(0, size - 1000));
  await rejects(() => restoreBackup(bad, restoredDir), /cut short/);
  assert.equal(listing(restoredDir), before.files, 'no file added, moved or left behind');
  assert.is(sha(join(restoredDir, 'mailwright.db')), before.db);

  // On a new machine the data directory is made by restore; a refused restore leaves none behind.
  const fresh = join(dirForTest(), 'data');
  await rejects(() => restoreBackup(bad, fresh), BackupError);
  assert.not.ok(existsSync(fresh));
});

test('a backup whose manifest names a path outside the data directory is refused', async () => {
  const dir = dirForTest();
  const file = join(dir, 'evil.backup');
  const payload = Buffer.from('planted');
  const empty = createHash('sha256').update('').digest('hex');
  const manifest = Buffer.from(JSON.stringify({ format: 'mailwright-backup', version: 1, created: new Date().toISOString(), hostname: 'x', entries: [{ path: 'mailwright.db', type: 'file', size: 0, sha256: empty }, { path: '../escaped', type: 'file', size: payload.length, sha256: createHash('sha256').update(payload).digest('hex') }] }));
  const body = Buffer.concat([Buffer.from(`MAILWRIGHT-BACKUP 1 ${manifest.length}\n`), manifest, payload]);
  writeFileSync(file, Buffer.concat([body, Buffer.from(`SHA256 ${createHash('sha256').update(body).digest('hex')}\n`)]));
  await rejects(() => restoreBackup(file, join(dir, 'data')), /unsafe path "\.\.\/escaped"/);
  assert.not.ok(existsSync(join(dir, 'escaped')));
});

sqliteOnly(test)('the scheduled backup writes a checked backup into backup_dir and keeps only backup_keep of them', async () => {
  const t = await startTestApp({ env: { MAILWRIGHT_BACKUP_KEEP: '2' } });
  try {
    const { config, log } = t.app;
    assert.is(config.backupDir, join(t.dataDir, 'backups'));
    writeFileSync(join(t.dataDir, 'domain-connect.key'), 'a key the database does not hold\n', { mode: 0o600 });
    const made: string[] = [];
    for (let i = 0; i < 4; i++) {
      made.push((await scheduledBackup(config, log, new Date(Date.UTC(2025, 0, 1, 3, 30, i)))).file);
      if (i === 1) writeFileSync(join(config.backupDir, 'operator-copy.backup'), 'not ours to delete');
    }
    assert.equal(readdirSync(config.backupDir).sort(), ['mailwright-20250101T033002000Z.backup', 'mailwright-20250101T033003000Z.backup', 'operator-copy.backup']);
    assert.is(statSync(config.backupDir).mode & 0o777, 0o700);
    const manifest = await readBackup(made[3]);
    assert.ok(manifest.entries.some((e) => e.path === 'domain-connect.key'));
    assert.not.ok(manifest.entries.some((e) => e.path.startsWith('backups')), 'a backup never holds the older backups');
    assert.ok(t.logs.some((line) => line.includes('"msg":"backup written"')));
  } finally {
    await t.stop();
  }
});

sqliteOnly(test)('a backup written into the data directory itself holds none of its own temporary files', async () => {
  const t = await startTestApp();
  try {
    const made = await createBackup({ dataDir: t.dataDir, file: join(t.dataDir, 'here.backup') });
    const paths = (await readBackup(made.file)).entries.map((e) => e.path);
    assert.is(paths[0], 'mailwright.db');
    assert.equal(paths.filter((p) => p.startsWith('.here.backup')), [], 'no snapshot or packing file of this backup');
    assert.equal(readdirSync(t.dataDir).filter((n) => n.startsWith('.here.backup')), [], 'and none left behind');
  } finally {
    await t.stop();
  }
});

test('backup_schedule is a cron expression or off; backup_dir and backup_keep have their defaults', () => {
  const dir = dirForTest();
  const base = testEnv(dir);
  const c = loadConfig(base);
  assert.is(c.backupSchedule, null);
  assert.is(c.backupDir, join(dir, 'backups'));
  assert.is(c.backupKeep, 7);
  assert.is(loadConfig({ ...base, MAILWRIGHT_BACKUP_SCHEDULE: '30 3 * * *', MAILWRIGHT_BACKUP_DIR: join(dir, 'elsewhere') }).backupSchedule, '30 3 * * *');
  assert.is(loadConfig({ ...base, MAILWRIGHT_BACKUP_DIR: join(dir, 'elsewhere') }).backupDir, join(dir, 'elsewhere'));
  assert.throws(() => loadConfig({ ...base, MAILWRIGHT_BACKUP_SCHEDULE: 'nightly' }), (err: Error) => err instanceof ConfigError && /backup_schedule \(MAILWRIGHT_BACKUP_SCHEDULE\) must be a cron expression/.test(err.message));
  assert.throws(() => loadConfig({ ...base, MAILWRIGHT_BACKUP_KEEP: '0' }), /backup_keep/);
});

test.run();
