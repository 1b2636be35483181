// Nothing acknowledged is lost (DESIGN.md 3, catalogue DUR-02): 500 messages over 10 concurrent SMTP
// sessions to the app running as its own process, which is killed with SIGKILL half-way. After a restart
// every message that got 250 is there, the database and its full-text index pass their integrity checks,
// and a client retrying what was not acknowledged gets everything stored. On PostgreSQL the same kill, and the
// rows read from the database (the integrity checks are of SQLite's file and its full-text index).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { TEST_STORE, request, runCli, startAppProcess, tempDir, testEnv, type AppProcess } from '../testkit/app.ts';
import { migratedDatabase } from '../testkit/postgres.ts';
import { openPool } from '../db/postgres.ts';
import { postgresStore, type Store } from '../db/store.ts';
import { column } from '../db/query.ts';
import { systemClock } from '../clock.ts';
import { createKey } from '../account/keys.ts';
import { DEFAULT_WORKSPACE, findWorkspace } from '../account/workspaces.ts';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { BOX } from '../testkit/outbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';

const TOTAL = 500;
const SESSIONS = 10;
const KILL_AFTER = 200;

let dns: DnsServer;
let env: Record<string, string>;
let database: Awaited<ReturnType<typeof migratedDatabase>> | null = null;
test.before(async () => {
  dns = await startDnsServer();
  dns.add(BOX, 'A', '127.0.0.1');
  database = TEST_STORE === 'postgres' ? await migratedDatabase() : null;
  const store: Record<string, string> = database ? { MAILWRIGHT_DATABASE_URL: database.url } : {};
  env = testEnv(tempDir(), { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_LOG_LEVEL: 'info', MAILWRIGHT_RATE_LIMIT: '0', ...store });
});
test.after(async () => {
  await dns.close();
  await database?.drop();
});

const RECEIVED = "SELECT message_id FROM emails WHERE direction = 'in'";

/** Work on the box's PostgreSQL database from outside the app (the CLI runs on SQLite only). */
async function onPostgres<T>(work: (store: Store) => Promise<T>): Promise<T> {
  const pool = openPool(database!.url);
  try {
    return await work(postgresStore(pool));
  } finally {
    await pool.end();
  }
}

async function createApiKey(): Promise<string> {
  if (!database) return (await runCli(['key', 'create', '--name', 'durability'], env)).stdout.trim();
  return onPostgres(async (store) => {
    const workspace = (await store.read(findWorkspace(DEFAULT_WORKSPACE)))!;
    return (await store.write(() => createKey(systemClock, workspace.id, 'durability'))).key;
  });
}

async function setUpInbox(app: AppProcess): Promise<string> {
  const key = await createApiKey();
  const api = `${app.url}/api/v1`;
  const domain = (await request(`${api}/domains`, { body: { name: 'durable.example' }, key })).body;
  dns.publish(domain.records);
  await request(`${api}/domains/${domain.id}/verify`, { method: 'POST', key });
  await request(`${api}/domains/${domain.id}/inbound/setup`, { method: 'POST', key });
  dns.set('durable.example', 'MX', [{ preference: 10, exchange: BOX }]);
  const ready = await request(`${api}/domains/${domain.id}/inbound/verify`, { method: 'POST', key });
  assert.is(ready.body.status, 'ready');
  const inbox = await request(`${api}/inboxes`, { body: { domain_id: domain.id, local_part: 'keep' }, key });
  return inbox.body.address;
}

const messageId = (i: number) => `durable-${i}@sender.example`;
const raw = (i: number) =>
  `From: sender@sender.example\r\nTo: keep@durable.example\r\nSubject: Message ${i}\r\nMessage-ID: <${messageId(i)}>\r\n\r\n${'Body text line.\r\n'.repeat(40)}.\r\n`;

/** One session sending its share of the messages in turn; stops quietly when the server goes away. */
async function sendAll(port: number, to: string, indexes: number[], acked: Set<number>, onAck: () => void): Promise<void> {
  let c: RawSmtp;
  try {
    c = await RawSmtp.open(port);
    await c.read();
    await c.command('EHLO durability.test');
  } catch {
    return;
  }
  try {
    for (const i of indexes) {
      if ((await c.command('MAIL FROM:<sender@sender.example>')).code !== 250) return;
      if ((await c.command(`RCPT TO:<${to}>`)).code !== 250) return;
      if ((await c.command('DATA')).code !== 354) return;
      c.write(raw(i));
      const reply = await c.read(30_000);
      if (reply.code !== 250) return;
      acked.add(i);
      onAck();
    }
  } catch {
    // The connection died with the server: what was not acknowledged is retried after the restart.
  } finally {
    c.close();
  }
}

const shares = (indexes: number[]) => Array.from({ length: SESSIONS }, (_, s) => indexes.filter((_, k) => k % SESSIONS === s));

test('kill -9 during 500 messages over 10 sessions loses nothing that got 250', async () => {
  let app = await startAppProcess(env);
  const to = await setUpInbox(app);

  const acked = new Set<number>();
  let killed: Promise<number | null> | null = null;
  const all = Array.from({ length: TOTAL }, (_, i) => i);
  await Promise.all(
    shares(all).map((share) =>
      sendAll(app.smtpPort, to, share, acked, () => {
        if (acked.size >= KILL_AFTER && !killed) killed = app.stop('SIGKILL');
      }),
    ),
  );
  await killed;
  const ackedBeforeKill = new Set(acked);
  assert.ok(ackedBeforeKill.size >= KILL_AFTER && ackedBeforeKill.size < TOTAL, `killed part-way (${ackedBeforeKill.size} acknowledged)`);

  app = await startAppProcess(env);
  // A client retries whatever it did not see acknowledged.
  const retry = all.filter((i) => !acked.has(i));
  await Promise.all(shares(retry).map((share) => sendAll(app.smtpPort, to, share, acked, () => undefined)));
  assert.is(acked.size, TOTAL, 'every message acknowledged in the end');
  assert.is(await app.stop('SIGTERM'), 0);

  const db = database ? null : new Database(join(env.MAILWRIGHT_DATA_DIR, 'mailwright.db'));
  try {
    const stored = new Map<string, number>();
    const ids = db ? (db.prepare(RECEIVED).pluck().all() as string[]) : await onPostgres((store) => store.read(column<string>(RECEIVED)));
    for (const id of ids) stored.set(id, (stored.get(id) ?? 0) + 1);
    const lost = [...ackedBeforeKill].filter((i) => !stored.has(messageId(i)));
    assert.equal(lost, [], 'no acknowledged message lost');
    assert.is(all.filter((i) => !stored.has(messageId(i))).length, 0, 'every message stored after the retries');
    const duplicates = [...stored.values()].filter((count) => count > 1).length;
    assert.ok(duplicates <= SESSIONS, `at most one duplicate per session cut at the kill (${duplicates})`);
    if (!db) return;
    assert.is(db.pragma('integrity_check', { simple: true }), 'ok');
    db.exec("INSERT INTO email_search(email_search) VALUES ('integrity-check')");
    const indexed = db.prepare("SELECT count(*) FROM email_search WHERE email_search MATCH 'body'").pluck().get();
    assert.is(indexed, [...stored.values()].reduce((a, b) => a + b, 0), 'one full-text row per stored message');
  } finally {
    db?.close();
  }
});

test.run();
