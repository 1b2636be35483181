// Moving back down: a box on PostgreSQL (received mail, sent mail, a webhook, a label, keys, DKIM) is backed up
// by `mailwright backup` while it serves, and the backup restored into a data directory without database_url
// is a box on SQLite that serves the same answers: the same lists, bodies, events, search, domains and DKIM
// records, the same key, and it keeps sending, signed. Restore into a box on PostgreSQL is refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ownStores, request, runCli, startAppProcess, tempDir, testEnv, type AppProcess } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { freshDatabase, readBox } from '../testkit/postgres.ts';
import { eventually } from '../testkit/outbound.ts';
import { all } from './query.ts';
import { readManifest, scheduledBackup, verifyBackup } from './backup.ts';
import { postgresSnapshot } from './backup-postgres.ts';
import { createLog } from '../log.ts';

let s: InboundScene;
let database: { url: string; drop: () => Promise<void> };
const folder = tempDir('mailwright-pg-backup-');
test.before(async () => {
  // On PostgreSQL whatever store the suite runs on: the box to move back.
  database = await freshDatabase();
  s = await startInboundScene({ env: { MAILWRIGHT_DATABASE_URL: database.url } });
});
test.after(async () => {
  await s.stop();
  await database.drop();
  rmSync(folder, { recursive: true, force: true });
});

/** What a user of the API sees of the box, read through `api` with the scene's key; emails whose subject starts with `leaveOut` are not looked at. */
async function seen(api: string, leaveOut = 'Meanwhile') {
  const get = async (path: string) => {
    const r = await request(`${api}${path}`, { key: s.key });
    assert.is(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const emails = (await get('/emails?limit=100')).data.filter((e: { subject: string }) => !e.subject.startsWith(leaveOut));
  const details = [];
  for (const e of emails) {
    const one = await get(`/emails/${e.id}`);
    const events = (await get(`/emails/${e.id}/events`)).data.map((v: { type: string; created_at: string }) => [v.type, v.created_at]);
    details.push({ id: one.id, subject: one.subject, status: one.status, from: one.from, to: one.to, text: one.text, html: one.html, labels: one.labels, events });
  }
  const domains = [];
  for (const d of (await get('/domains')).data) {
    const one = await get(`/domains/${d.id}`);
    domains.push({ name: one.name, status: one.status, records: one.records });
  }
  const ids = (path: string) => get(path).then((b) => b.data.map((e: { id: string }) => e.id).filter((id: string) => emails.some((e: { id: string }) => e.id === id)));
  return {
    emails: details,
    search: await ids('/emails?query=lighthouse'),
    labelled: await ids('/emails?label=finance'),
    from: await ids('/emails?from=bob'),
    domains,
    inboxes: (await get('/inboxes')).data.map((i: { address: string }) => i.address),
    webhooks: (await get('/webhooks')).data.map((w: { url: string }) => w.url),
    labels: (await get('/labels')).data.map((l: { name: string }) => l.name),
  };
}

let before: Awaited<ReturnType<typeof seen>>;
const file = join(folder, 'box.backup');
ownStores(test)('mailwright backup on PostgreSQL while serve runs and mail keeps coming: one moment of the box', async () => {
  s.routeTo('dest.test');
  await s.receive('The lighthouse keeper', { body: 'The lighthouse keeper writes about the storm.' });
  const other = await s.receive('Quarterly numbers', { body: 'Figures for the quarter.' });
  for (const i of [1, 2]) assert.is((await s.send({ from: `app@${s.domain.name}`, to: [`reader${i}@dest.test`], subject: `Hello ${i}`, text: 'From the lighthouse', html: `<p>From the <b>lighthouse</b> ${i}</p>` })).status, 200);
  await eventually(() => s.sink.messages.length === 2, 10_000, 'both sends delivered');
  assert.is((await request(`${s.t.api}/webhooks`, { key: s.key, body: { url: 'https://hooks.example/in', events: ['email.received'] } })).status, 201);
  assert.is((await request(`${s.t.api}/emails/${other}/labels`, { key: s.key, body: { add: ['Finance'] } })).status, 200);
  before = await seen(s.t.api);
  assert.is(before.emails.length, 4);
  assert.is(before.search.length, 3, 'the received letter and both sends name the lighthouse');
  assert.is(before.from.length, 2, "the received letters are Bob's (the correspondents' index)");
  assert.is(before.labelled.length, 1);
  assert.ok(before.domains.some((d) => d.records.some((r: { type?: string; record?: string; name: string }) => /_domainkey/.test(r.name))), 'a DKIM record');

  // Sends go on while the backup reads: it holds what was committed when its snapshot began, whole.
  let sending = true;
  const meanwhile = (async () => {
    let n = 0;
    while (sending && n < 40) assert.is((await s.send({ from: `app@${s.domain.name}`, to: ['later@dest.test'], subject: `Meanwhile ${++n}`, text: 'Sent during the backup' })).status, 200);
    return n;
  })();
  const res = await runCli(['backup', file], s.t.env);
  sending = false;
  assert.ok((await meanwhile) > 0);
  assert.is(res.code, 0, res.stderr + res.stdout);
  assert.match(res.stdout, /wrote .*box\.backup \(\d+ bytes: the database and \d+ other files\)/);
  const { manifest } = await readManifest(file);
  assert.is(manifest.entries[0].path, 'mailwright.db');
  assert.ok(manifest.entries.every((e) => !e.path.includes('tmp-backup')), 'no temporary file in the backup');
  const audit = await readBox(s.t.env, all<{ action: string }>("SELECT action FROM audit_log WHERE action = 'box.backup_created'"));
  assert.is(audit.length, 1, 'recorded in the box');
});

ownStores(test)('mailwright restore into a box on PostgreSQL is refused and says how to move the box instead', async () => {
  const other = await freshDatabase();
  const dir = tempDir();
  try {
    const res = await runCli(['restore', file], testEnv(dir, { MAILWRIGHT_DATABASE_URL: other.url }));
    assert.is(res.code, 78, res.stderr);
    assert.match(res.stderr, /keeps its state in PostgreSQL/);
    assert.match(res.stderr, /Restore into a data directory without database_url, then .*'mailwright migrate --to URL'/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await other.drop();
  }
});

ownStores(test)('restored into a data directory on SQLite, the box answers as before, searches, and keeps sending signed mail', async () => {
  const dir = tempDir();
  let node: AppProcess | null = null;
  try {
    const env = testEnv(dir, { ...s.t.env, MAILWRIGHT_DATA_DIR: dir, MAILWRIGHT_DATABASE_URL: '' });
    const restored = await runCli(['restore', file], env);
    assert.is(restored.code, 0, restored.stderr + restored.stdout);
    // Bodies as a box on SQLite stores them: text as TEXT, packed bytes as a BLOB with their mark.
    const bodies = await readBox(env, all<{ kind: string; first: string }>("SELECT typeof(text_body) AS kind, hex(substr(text_body, 1, 1)) AS first FROM email_contents WHERE text_body IS NOT NULL"));
    assert.ok(bodies.length >= 4);
    for (const b of bodies) assert.ok(b.kind === 'text' ? b.first !== '00' : b.kind === 'blob' && b.first === '00', JSON.stringify(b));

    node = await startAppProcess(env);
    const api = `${node.url}/api/v1`;
    assert.equal(await seen(api), before);
    // What was sent during the backup: those committed before its snapshot, none half there.
    const later = (await request(`${api}/emails?limit=100`, { key: s.key })).body.data.filter((e: { subject: string }) => e.subject.startsWith('Meanwhile'));
    for (const e of later) assert.is((await request(`${api}/emails/${e.id}`, { key: s.key })).body.text, 'Sent during the backup');

    const delivered = s.sink.messages.length;
    const sent = await request(`${api}/emails`, { key: s.key, body: { from: `app@${s.domain.name}`, to: ['reader3@dest.test'], subject: 'After the move back', text: 'Still here' } });
    assert.is(sent.status, 200, JSON.stringify(sent.body));
    const message = await eventually(() => s.sink.messages.slice(delivered).find((m) => m.raw.toString('latin1').includes('After the move back')), 15_000, 'a send after the move delivered');
    assert.is((await s.dkim(message.raw)).status, 'pass', 'signed with the DKIM key the backup carried');
  } finally {
    await node?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

ownStores(test)("a scheduled backup on PostgreSQL is the same backup, written into backup_dir, the oldest beyond backup_keep deleted", async () => {
  const config = { dataDir: s.t.dataDir, backupDir: join(folder, 'scheduled'), backupKeep: 1 };
  const log = createLog({ level: 'error', write: () => {} });
  await scheduledBackup(config, log, new Date('2026-01-01T03:30:00Z'), postgresSnapshot(database.url));
  const second = await scheduledBackup(config, log, new Date('2026-01-02T03:30:00Z'), postgresSnapshot(database.url));
  assert.equal(readdirSync(config.backupDir), [basename(second.file)]);
  assert.is((await verifyBackup(second.file)).entries[0].path, 'mailwright.db');
});

test.run();
