// Labels on mail, over the real API: a send's labels become labels with ids and colours; POST
// /emails/:id/labels adds and removes them by name or id (creating names unless `create` is false, at most
// 10 per email, nothing changed on refusal); GET /emails and GET /emails/:id show them and the `label` filter
// finds mail by either; workspaces never see each other's labels. Also the migration of the names older sends
// stored.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { request, seedWorkspace, tempDir } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { listMigrations, migrate } from '../db/migrate.ts';

let s: InboundScene;
let received: string;
let sent: string;

interface Label {
  id: string;
  name: string;
  color: string;
}

const api = (path: string, opts: { method?: string; body?: unknown; key?: string } = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const labelsOf = async (id: string, key = s.key) => (await api(`/emails/${id}`, { key })).body.labels as Label[];
const change = (id: string, body: unknown, key = s.key) => api(`/emails/${id}/labels`, { method: 'POST', body, key });
const listed = async (label: string, key = s.key) => ((await api(`/emails?label=${encodeURIComponent(label)}`, { key })).body.data as Array<{ id: string }>).map((e) => e.id);

test.before(async () => {
  s = await startInboundScene();
  const reply = await s.deliver('From: Alice <alice@sender.example>\r\nTo: hello@in.example\r\nSubject: Flight to Lisbon\r\n\r\nYour booking.\r\n', { from: 'alice@sender.example' });
  assert.is(reply.code, 250);
  received = (await s.stored("subject = 'Flight to Lisbon'"))[0].id;
  const res = await s.send({ from: 'hello@in.example', to: ['bob@dest.example'], subject: 'Invoice 7', text: 'Attached.', labels: ['Invoices', 'clients/acme'] });
  assert.is(res.status, 200, JSON.stringify(res.body));
  sent = res.body.id;
});

test.after(async () => {
  await s.stop();
});

test("a send's labels become labels with ids and colours, in the order given", async () => {
  const labels = await labelsOf(sent);
  assert.equal(labels.map((l) => l.name), ['Invoices', 'clients/acme']);
  for (const l of labels) {
    assert.match(l.id, /^lbl_[0-9A-Z]{26}$/);
    assert.match(l.color, /^#[0-9a-f]{6}$/);
  }
  // The same name in another case is the same label; an id names it too.
  const again = await s.send({ from: 'hello@in.example', to: ['bob@dest.example'], subject: 'Invoice 8', text: 'x', labels: ['INVOICES', labels[1].id] });
  assert.is(again.status, 200);
  assert.equal(await labelsOf(again.body.id), labels);
  const summary = (await api(`/emails?label=invoices`)).body.data.find((e: { id: string }) => e.id === sent);
  assert.equal(summary.labels, labels, 'the list shows them too');
});

test('a send naming an unknown label id, or a name with a comma, is a 400 naming labels', async () => {
  for (const bad of ['lbl_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'a,b']) {
    const res = await s.send({ from: 'hello@in.example', to: ['bob@dest.example'], subject: 'x', text: 'x', labels: [bad] });
    assert.is(res.status, 400, bad);
    assert.match(res.body.error.message, /^labels/);
  }
});

test('POST /emails/:id/labels adds by name (creating it) and removes by id; the filter finds mail by either', async () => {
  const added = await change(received, { add: ['Travel', 'Receipts'] });
  assert.is(added.status, 200, JSON.stringify(added.body));
  assert.is(added.body.id, received);
  assert.equal(added.body.labels.map((l: Label) => l.name), ['Travel', 'Receipts']);
  assert.equal(await labelsOf(received), added.body.labels);
  const travel = added.body.labels[0] as Label;
  assert.equal(await listed('travel'), [received]);
  assert.equal(await listed(travel.id), [received]);

  const removed = await change(received, { remove: [travel.id, 'no-such-label'] });
  assert.is(removed.status, 200);
  assert.equal(removed.body.labels.map((l: Label) => l.name), ['Receipts']);
  assert.equal(await listed(travel.id), []);
  // The label itself stays and is reused by name.
  const back = await change(received, { add: ['TRAVEL'] });
  assert.equal(back.body.labels.map((l: Label) => l.id), [(await labelsOf(received))[0].id, travel.id]);
});

test('create: false refuses an unknown name; an unknown id is refused; nothing changes', async () => {
  const before = await labelsOf(received);
  const noCreate = await change(received, { add: ['Brand new'], create: false });
  assert.is(noCreate.status, 400);
  assert.match(noCreate.body.error.message, /^add/);
  const unknownId = await change(received, { add: ['lbl_01ARZ3NDEKTSV4RRFFQ69G5FAV'] });
  assert.is(unknownId.status, 400);
  assert.equal(await labelsOf(received), before);
  assert.equal(await listed('Brand new'), []);
  for (const body of [{ add: 'Travel' }, { add: [''] }, { add: ['x\u0001'] }, { remove: [7] }, { add: [], extra: 1 }]) {
    assert.is((await change(received, body)).status, 400, JSON.stringify(body));
  }
});

test('an eleventh label is 400 limit_exceeded and creates nothing', async () => {
  const id = (await s.send({ from: 'hello@in.example', to: ['bob@dest.example'], subject: 'Many labels', text: 'x' })).body.id;
  const ten = Array.from({ length: 10 }, (_, i) => `bulk-${i}`);
  assert.is((await change(id, { add: ten })).status, 200);
  const res = await change(id, { add: ['eleventh'] });
  assert.is(res.status, 400);
  assert.is(res.body.error.code, 'limit_exceeded');
  assert.is((await labelsOf(id)).length, 10);
  const probe = await change(received, { add: ['eleventh'], create: false });
  assert.is(probe.status, 400, 'the refused change created no label');
  // Swapping one for another in one request stays within the limit.
  const swapped = await change(id, { add: ['eleventh'], remove: ['bulk-0'] });
  assert.is(swapped.status, 200);
  assert.is(swapped.body.labels.length, 10);
});

test("workspaces never see or use each other's labels", async () => {
  const other = await seedWorkspace(s.t, { workspace: 'other' });
  const mine = (await labelsOf(sent))[0];
  assert.is((await change(sent, { add: ['x'] }, other.key)).status, 404, "another workspace's email");
  assert.is((await api(`/emails/${sent}/labels`, { method: 'POST', body: { add: ['x'] }, key: 're_nope' })).status, 401);
  assert.equal(await listed(mine.id, other.key), []);
  assert.equal(await listed(mine.name, other.key), []);
});

test('the migration turns the label names older sends stored into labels', () => {
  const dir = tempDir();
  const db = new Database(`${dir}/m.db`);
  const all = listMigrations();
  migrate(db, 1, all.filter((m) => m.version < 11));
  db.prepare("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_1', 'One', 1)").run();
  const insert = db.prepare(
    `INSERT INTO emails (id, workspace_id, direction, status, domain, message_id, thread_id, from_address, to_json, subject, labels_json, created_at)
     VALUES (?, 'ws_1', 'out', 'sent', 'a.example', ?, ?, 'a@a.example', '[]', 's', ?, ?)`,
  );
  insert.run('em_1', 'm1', 'em_1', JSON.stringify(['Invoices', 'Travel']), 5);
  insert.run('em_2', 'm2', 'em_2', JSON.stringify(['invoices']), 3);
  insert.run('em_3', 'm3', 'em_3', '[]', 4);
  migrate(db, 2, all);
  const labels = db.prepare('SELECT id, name, created_at FROM labels ORDER BY name COLLATE NOCASE').all() as Array<{ id: string; name: string; created_at: number }>;
  assert.equal(labels.map((l) => [l.name, l.created_at]), [['Invoices', 3], ['Travel', 5]], 'one label per name regardless of case, from its first use');
  for (const l of labels) assert.match(l.id, /^lbl_[0-9A-Z]{26}$/);
  const byName = new Map(labels.map((l) => [l.name.toLowerCase(), l.id]));
  const ids = (id: string) => JSON.parse(db.prepare('SELECT labels_json FROM emails WHERE id = ?').pluck().get(id) as string);
  assert.equal(ids('em_1'), [byName.get('invoices'), byName.get('travel')]);
  assert.equal(ids('em_2'), [byName.get('invoices')]);
  assert.equal(ids('em_3'), []);
  db.close();
});

test.run();
