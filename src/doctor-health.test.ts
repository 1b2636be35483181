// Doctor's checks of the box itself, each against a real app's store and files: the TLS certificate (valid,
// near its end, expired, for another name), a recipient stuck in the queue, free space against the margin,
// and a webhook the box disabled, each a problem with its fix.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { startTestApp, tempDir, type TestApp } from './testkit/app.ts';
import { certificateCheck, queueCheck, storageCheck, webhookChecks } from './doctor-health.ts';

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

test('a recipient deferred for more than a day is a problem with its last answer', () => {
  const db = t.app.db;
  assert.ok(queueCheck(db, Date.now()).ok);
  db.prepare('INSERT INTO workspaces (id, name, created_at) SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM workspaces)').run('ws_x', 'x', Date.now());
  const ws = db.prepare('SELECT id FROM workspaces LIMIT 1').pluck().get() as string;
  db.prepare("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, created_at) VALUES ('em_01ARZ3NDEKTSV4RRFFQ69G5FAV', ?, 'out', 'sent', 'm@x', 'em_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'a@x.test', ?)").run(ws, Date.now() - 3 * DAY);
  db.prepare("INSERT INTO deliveries (email_id, workspace_id, recipient, domain, state, next_attempt_at, last_response, created_at, updated_at) VALUES ('em_01ARZ3NDEKTSV4RRFFQ69G5FAV', ?, 'r@far.test', 'far.test', 'deferred', ?, '421 4.7.0 Try again later', ?, ?)").run(ws, Date.now(), Date.now() - 2 * DAY, Date.now());
  const stuck = queueCheck(db, Date.now());
  assert.equal([stuck.ok, stuck.text.includes('r@far.test'), stuck.text.includes('421 4.7.0')], [false, true, true], stuck.text);
});

test('free space near or below the margin is a problem; the database size is reported', () => {
  const fine = storageCheck(t.app.config);
  assert.ok(fine.ok && /the database is \d+ MiB, [\d,]+ MiB free/.test(fine.text), fine.text);
  const tight = storageCheck({ ...t.app.config, minFreeSpaceMb: 100_000_000 });
  assert.equal([tight.ok, /below min_free_space_mb/.test(tight.text)], [false, true], tight.text);
});

test('a webhook the box disabled is a problem; one its owner disabled is not', () => {
  const db = t.app.db;
  const ws = db.prepare('SELECT id FROM workspaces LIMIT 1').pluck().get() as string;
  const insert = db.prepare("INSERT INTO webhooks (id, workspace_id, url, events_json, enabled, disabled_reason, secret, created_at, updated_at) VALUES (?, ?, ?, '[\"*\"]', 0, ?, x'00', 0, 0)");
  insert.run('wh_01ARZ3NDEKTSV4RRFFQ69G5FAA', ws, 'https://gone.example/hook', 'the endpoint answered 410 Gone at 2026-11-25T00:00:00.000Z');
  insert.run('wh_01ARZ3NDEKTSV4RRFFQ69G5FAB', ws, 'https://paused.example/hook', 'disabled by the owner');
  const checks = webhookChecks(db);
  assert.equal(checks.map((c) => c.text.includes('gone.example')), [true]);
  assert.match(checks[0].fix!, /PATCH \/api\/v1\/webhooks\/wh_01ARZ3NDEKTSV4RRFFQ69G5FAA/);
});

test.run();
