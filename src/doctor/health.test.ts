// Doctor's checks of the box itself, each against a real app's store and files: the TLS certificate (valid,
// near its end, expired, for another name), a recipient stuck in the queue, free space against the margin,
// a webhook the box disabled, each a problem with its fix; and the database's growth from the daily size
// samples the nightly retention job records, with the days left before free space reaches the margin.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { sqliteOnly, startTestApp, tempDir, TEST_STORE, type TestApp } from '../testkit/app.ts';
import { certificateCheck, growthCheck, queueCheck, storageCheck, webhookChecks } from './health.ts';
import { databaseBytes, SIZE_SAMPLES_KEPT } from '../db/size.ts';
import { databasePath } from '../db/open.ts';
import { all, run, value } from '../db/query.ts';
import { runRetention } from '../emails/retention.ts';

let t: TestApp;
const DAY = 24 * 3600_000;
test.before(async () => {
  t = await startTestApp({});
});
test.after(() => t.stop());

async function certificate(name: string, from: Date, to: Date): Promise<string> {
  const made = await generate([{ name: 'commonName', value: name }], { keySize: 2048, notBeforeDate: from, notAfterDate: to, extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }] } as Parameters<typeof generate>[1]);
  const file = join(tempDir('cert-'), 'cert.pem');
  writeFileSync(file, made.cert);
  return file;
}

test('the certificate: the self-signed one is fine; one near its end, expired or for another name is a problem', async () => {
  const config = t.app.config;
  assert.ok(certificateCheck(config, Date.now()).ok, 'the self-signed certificate serve made');
  const now = Date.now();
  const soon = await certificate(config.hostname, new Date(now - 80 * DAY), new Date(now + 5 * DAY));
  const near = certificateCheck({ ...config, tlsCert: soon }, now);
  assert.equal([near.ok, /expires in [45] days/.test(near.text)], [false, true], near.text);
  const old = await certificate(config.hostname, new Date(now - 90 * DAY), new Date(now - DAY));
  assert.match(certificateCheck({ ...config, tlsCert: old }, now).text, /expired/);
  const other = await certificate('other.example', new Date(now - DAY), new Date(now + 80 * DAY));
  const wrong = certificateCheck({ ...config, tlsCert: other }, now);
  assert.equal([wrong.ok, /not mx\.mailwright\.test/.test(wrong.text)], [false, true], wrong.text);
});

test('a recipient deferred for more than a day is a problem with its last answer', async () => {
  const { store } = t.app;
  assert.ok((await store.read(queueCheck(Date.now()))).ok);
  await store.write(function* () {
    yield* run('INSERT INTO workspaces (id, name, created_at) SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM workspaces)', 'ws_x', 'x', Date.now());
    const ws = yield* value<string>('SELECT id FROM workspaces LIMIT 1');
    yield* run("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, created_at) VALUES ('em_01ARZ3NDEKTSV4RRFFQ69G5FAV', ?, 'out', 'sent', 'm@x', 'em_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'a@x.test', ?)", ws, Date.now() - 3 * DAY);
    yield* run("INSERT INTO deliveries (email_id, workspace_id, recipient, domain, state, next_attempt_at, last_response, created_at, updated_at) VALUES ('em_01ARZ3NDEKTSV4RRFFQ69G5FAV', ?, 'r@far.test', 'far.test', 'deferred', ?, '421 4.7.0 Try again later', ?, ?)", ws, Date.now(), Date.now() - 2 * DAY, Date.now());
  });
  const stuck = await store.read(queueCheck(Date.now()));
  assert.equal([stuck.ok, stuck.text.includes('r@far.test'), stuck.text.includes('421 4.7.0')], [false, true, true], stuck.text);
});

// The storage check measures SQLite's file in the data directory (doctor opens that database).
sqliteOnly(test)('free space near or below the margin is a problem; the database size is reported', () => {
  const fine = storageCheck(t.app.config, t.app.db);
  assert.ok(fine.ok && /the database is \d+ MiB, [\d,]+ MiB free/.test(fine.text), fine.text);
  assert.not.match(fine.text, /free pages/);
  const tight = storageCheck({ ...t.app.config, minFreeSpaceMb: 100_000_000 }, t.app.db);
  assert.equal([tight.ok, /below min_free_space_mb/.test(tight.text)], [false, true], tight.text);
});

test('a database made before the box gave free pages back says how many it keeps, and how to convert it', () => {
  const dir = tempDir('old-db-');
  const db = new Database(databasePath(dir));
  try {
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (b BLOB)');
    const insert = db.prepare('INSERT INTO t (b) VALUES (?)');
    db.transaction(() => {
      for (let i = 0; i < 2_400; i++) insert.run(randomBytes(8_000));
    })();
    db.exec('DELETE FROM t');
    const check = storageCheck({ ...t.app.config, dataDir: dir }, db);
    assert.ok(check.ok, check.text);
    assert.match(check.text, /; (18|19) MiB of the database is free pages it keeps for new mail/);
    assert.match(check.text, /'mailwright backup', then 'mailwright restore' of that file with serve stopped, converts it/);
  } finally {
    db.close();
  }
});

test('a webhook the box disabled is a problem; one its owner disabled is not', async () => {
  const { store } = t.app;
  await store.write(function* () {
    const ws = yield* value<string>('SELECT id FROM workspaces LIMIT 1');
    const insert = (id: string, url: string, reason: string) =>
      run("INSERT INTO webhooks (id, workspace_id, url, events_json, enabled, disabled_reason, secret, created_at, updated_at) VALUES (?, ?, ?, '[\"*\"]', 0, ?, ?, 0, 0)", id, ws, url, reason, Buffer.from([0]));
    yield* insert('wh_01ARZ3NDEKTSV4RRFFQ69G5FAA', 'https://gone.example/hook', 'the endpoint answered 410 Gone at 2026-11-25T00:00:00.000Z');
    yield* insert('wh_01ARZ3NDEKTSV4RRFFQ69G5FAB', 'https://paused.example/hook', 'disabled by the owner');
  });
  const checks = await store.read(webhookChecks());
  assert.equal(checks.map((c) => c.text.includes('gone.example')), [true]);
  assert.match(checks[0].fix!, /PATCH \/api\/v1\/webhooks\/wh_01ARZ3NDEKTSV4RRFFQ69G5FAA/);
});

const MiB = 1024 * 1024;

/** Replaces the samples with one a day from `first` (YYYY-MM-DD), of these sizes in MiB. */
function samples(first: string, mib: Array<number | null>): Promise<void> {
  return t.app.store.write(function* () {
    yield* run('DELETE FROM db_size_samples');
    for (const [i, size] of mib.entries()) {
      const at = Date.parse(`${first}T04:20:00Z`) + i * DAY;
      if (size !== null) yield* run('INSERT INTO db_size_samples (day, bytes, taken_at) VALUES (?, ?, ?)', new Date(at).toISOString().slice(0, 10), Math.round(size * MiB), at);
    }
  });
}

const growth = (config: Parameters<typeof growthCheck>[0], free: number) => t.app.store.read(growthCheck(config, free));

test('growth: the bytes a day over the last 7 days and, at that rate, the days until free space reaches the margin', async () => {
  const config = { ...t.app.config, minFreeSpaceMb: 256 };
  // Ten days of 10 MiB a day (a slower start before the last 7): 7 days from 150 to 220 MiB.
  await samples('2026-03-01', [100, 120, 140, 150, 160, 170, 180, 190, 200, 210, 220]);
  const fine = await growth(config, (256 + 1000) * MiB);
  assert.equal([fine.ok, fine.text], [true, 'storage growth: 10.0 MiB a day over the last 7 days: at that rate free space under ' + config.dataDir + ' reaches min_free_space_mb (256), where new mail is refused, in about 100 days'], fine.text);
  // A day without a sample (the box was off) leaves the rate per day as it was: 4 samples span 7 days.
  await samples('2026-03-01', [100, null, null, 130, null, 150, null, 170]);
  assert.match((await growth(config, (256 + 1000) * MiB)).text, /^storage growth: 10\.0 MiB a day over the last 7 days: .* in about 100 days$/);
  // No margin: the estimate is until the disk is full.
  assert.match((await growth({ ...config, minFreeSpaceMb: 0 }, 500 * MiB)).text, /the disk under .* is full in about 50 days$/);
});

test('growth: under 30 days before the margin is a problem whose fix is retention or a bigger disk', async () => {
  const config = { ...t.app.config, minFreeSpaceMb: 256 };
  await samples('2026-03-01', [1000, 1500, 2000, 2500]);
  const tight = await growth(config, (256 + 10_000) * MiB);
  assert.equal([tight.ok, /500\.0 MiB a day over the last 3 days: .* in about 20 days$/.test(tight.text)], [false, true], tight.text);
  assert.ok(tight.fix!.includes('retention_raw_days') && tight.fix!.includes('retention_mail_days') && tight.fix!.includes('grow the disk'), tight.fix);
  // Shrinking (retention at work) or below the margin already (the storage line reports that) is no growth problem.
  await samples('2026-03-01', [300, 250, 200]);
  const shrinking = await growth(config, (256 + 10) * MiB);
  assert.equal([shrinking.ok, shrinking.text], [true, 'storage growth: the database did not grow over the last 2 days (200.0 MiB on 2026-03-03)']);
  await samples('2026-03-01', [100, 200]);
  assert.equal(await growth(config, 100 * MiB), { ok: true, text: 'storage growth: 100.0 MiB a day over the last 1 day' });
});

test('growth: with fewer than two days of samples it is measured from tomorrow', async () => {
  for (const series of [[], [123]]) {
    await samples('2026-03-01', series);
    const check = await growth(t.app.config, 10 * MiB);
    assert.equal([check.ok, check.text], [true, 'storage growth: measured from tomorrow (the nightly job records the database size once a day)']);
  }
});

test('the nightly retention job records the database size once a day, retention on or off, and keeps 400 days', async () => {
  const { store } = t.app;
  await store.write(() => run('DELETE FROM db_size_samples'));
  let now = Date.parse('2026-05-04T04:20:00Z');
  // The real job with the app's writer and log, on a clock the test moves.
  const app = { ...t.app, clock: { now: () => now } };
  const rows = () => store.read(all<{ day: string; bytes: number; taken_at: number }>('SELECT day, bytes, taken_at FROM db_size_samples ORDER BY day'));
  await runRetention(app, { mailDays: 0, rawDays: 0, eventsDays: 0 });
  const [first] = await rows();
  assert.equal([(await rows()).length, first.day, first.taken_at], [1, '2026-05-04', now]);
  // SQLite's file and WAL in the data directory; PostgreSQL's database as it tells its size.
  const size = TEST_STORE === 'sqlite' ? databaseBytes(databasePath(t.app.config.dataDir)) : (await store.read(value<number>('SELECT pg_database_size(current_database())')))!;
  assert.ok(first.bytes > 0 && first.bytes <= size, String(first.bytes));
  now += 60_000; // run again the same day: the day's row is replaced, not added
  await runRetention(app, { mailDays: 0, rawDays: 0, eventsDays: 0 });
  assert.equal((await rows()).map((r) => [r.day, r.taken_at]), [['2026-05-04', now]]);
  now += DAY; // the next night, with retention on
  await runRetention(app, { mailDays: 3650, rawDays: 3650, eventsDays: 3650 });
  assert.equal((await rows()).map((r) => r.day), ['2026-05-04', '2026-05-05']);
  assert.match((await growth(t.app.config, 1e15)).text, /over the last 1 day/);
  // A year and more of samples: the job keeps the newest 400.
  await store.write(function* () {
    for (let i = 1; i <= 450; i++) yield* run('INSERT INTO db_size_samples (day, bytes, taken_at) VALUES (?, 1, 0)', new Date(Date.parse('2026-05-04T00:00:00Z') - i * DAY).toISOString().slice(0, 10));
  });
  now += DAY;
  await runRetention(app, { mailDays: 0, rawDays: 0, eventsDays: 0 });
  const kept = await rows();
  assert.equal([kept.length, kept.at(-1)!.day], [SIZE_SAMPLES_KEPT, '2026-05-06']);
});

test.run();
