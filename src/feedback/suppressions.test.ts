// The suppression list API over real HTTP with the real send path: what the owner sees and changes, how the
// list pages and filters, validation that names the field, and that one workspace never sees or changes
// another's entries. (Entries made by bounces and complaints are in bounces.test.ts.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, seedWorkspace } from '../testkit/app.ts';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';

let s: OutboundScene;
let otherKey: string;
test.before(async () => {
  s = await startOutboundScene();
  await s.verifiedDomain('shop.example');
  s.routeTo('dest.example');
  otherKey = (await seedWorkspace(s.t, { workspace: 'other' })).key;
});
test.after(() => s.stop());

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const add = (body: unknown, key = s.key) => request(`${s.t.api}/suppressions`, { body, key });
const pause = () => new Promise((r) => setTimeout(r, 5));
const status = async (id: string) => (await api(`/emails/${id}`)).body.status as string;

test('the owner adds an address: 201 with the entry; a send to it is accepted, blocked and never delivered; removing it lets the next one out', async () => {
  const created = await add({ email: 'Zoe@Dest.Example' });
  assert.is(created.status, 201, JSON.stringify(created.body));
  assert.equal({ ...created.body, createdAt: 'x' }, { email: 'zoe@dest.example', scope: 'all', reason: 'manual', origin: 'api', emailId: null, detail: null, createdAt: 'x' });
  assert.match(created.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal((await api('/suppressions/ZOE@dest.example')).body, created.body, 'looked up without regard to case');

  const again = await add({ email: 'zoe@dest.example', scope: 'marketing' });
  assert.is(again.status, 200, 'already listed: the entry as it stands');
  assert.is(again.body.scope, 'all', 'a narrower entry never replaces a wider one');

  const blocked = await s.send({ from: 'news@shop.example', to: ['zoe@dest.example'], subject: 'To Zoe', text: 'x' });
  assert.is(blocked.status, 200);
  const events = await s.events(blocked.body.id);
  assert.equal(events.map((e) => [e.type, e.recipient, e.data.reason]), [['blocked', 'zoe@dest.example', 'manual']]);
  assert.is(await status(blocked.body.id), 'blocked');

  assert.equal((await api('/suppressions/zoe@dest.example', { method: 'DELETE' })).body, { ok: true });
  const gone = await api('/suppressions/zoe@dest.example', { method: 'DELETE' });
  assert.equal([gone.status, gone.body.error.code], [404, 'not_found']);
  assert.is((await api('/suppressions/zoe@dest.example')).status, 404);
  const sent = await s.send({ from: 'news@shop.example', to: ['zoe@dest.example'], subject: 'To Zoe again', text: 'x' });
  await eventually(() => s.sink.messages.find((m) => m.raw.includes(sent.body.providerMessageId)), 10_000, 'delivery after removal');
  assert.not.ok(s.sink.messages.some((m) => m.raw.includes(blocked.body.providerMessageId)), 'the blocked email never went out');
});

test('a marketing-only entry does not stop transactional mail, and an entry for all widens it', async () => {
  assert.is((await add({ email: 'yan@dest.example', scope: 'marketing' })).status, 201);
  const sent = await s.send({ from: 'news@shop.example', to: ['yan@dest.example'], subject: 'Your receipt', text: 'x' });
  assert.is(sent.status, 200);
  await eventually(() => s.sink.messages.find((m) => m.raw.includes(sent.body.providerMessageId)), 10_000, 'transactional delivery');
  const widened = await add({ email: 'yan@dest.example', scope: 'all' });
  assert.equal([widened.status, widened.body.scope], [200, 'all']);
});

test('a send to several recipients blocks only the suppressed ones, whatever case the address is written in', async () => {
  assert.is((await add({ email: 'xia@dest.example' })).status, 201);
  assert.is((await add({ email: 'wen@dest.example', scope: 'marketing' })).status, 201);
  const sent = await s.send({ from: 'news@shop.example', to: ['Xia@Dest.Example', 'wen@dest.example'], cc: ['lu@dest.example'], subject: 'Several', text: 'x' });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const delivered = await eventually(() => {
    const got = s.sink.messages.filter((m) => m.raw.includes(sent.body.providerMessageId)).flatMap((m) => m.rcptTo);
    return got.length === 2 && got.sort();
  }, 10_000, 'the two recipients not suppressed for transactional mail');
  assert.equal(delivered, ['lu@dest.example', 'wen@dest.example']);
  const events = await s.events(sent.body.id);
  assert.equal(events.filter((e) => e.type === 'blocked').map((e) => [e.recipient.toLowerCase(), e.data.reason]), [['xia@dest.example', 'manual']]);
  assert.equal(events.filter((e) => e.type === 'sent').map((e) => e.recipient).sort(), ['lu@dest.example', 'wen@dest.example']);
});

test('the list: newest first, limit/offset with hasMore, a reason filter, and 400s that name the parameter', async () => {
  for (const a of ['l1@dest.example', 'l2@dest.example', 'l3@dest.example']) {
    await add({ email: a });
    await pause();
  }
  const page = await api('/suppressions?limit=2');
  assert.is(page.status, 200);
  assert.equal(page.body.data.map((e: { email: string }) => e.email), ['l3@dest.example', 'l2@dest.example']);
  assert.equal([page.body.count, page.body.hasMore], [2, true]);
  const next = await api('/suppressions?limit=2&offset=2');
  assert.is(next.body.data[0].email, 'l1@dest.example');
  assert.equal((await api('/suppressions?reason=complaint')).body, { data: [], count: 0, hasMore: false });
  assert.ok((await api('/suppressions?reason=manual&limit=100')).body.data.every((e: { reason: string }) => e.reason === 'manual'));

  const bad = await api('/suppressions?reason=bogus');
  assert.equal([bad.status, bad.body.error.code], [400, 'validation_error']);
  assert.match(bad.body.error.message, /^reason: /);
  assert.match((await api('/suppressions?limit=1000')).body.error.message, /^limit: /);
});

test('validation: each error names its field and nothing is added', async () => {
  const cases: Array<[unknown, RegExp]> = [
    [{}, /^email: is required/],
    [{ email: 'not an address' }, /^email: /],
    [{ email: 'a@b.example\r\nBcc: x@y.example' }, /^email: /],
    [{ email: 'ok@dest.example', scope: 'some' }, /^scope: must be "all" or "marketing"/],
    [{ email: 'ok@dest.example', reason: 'hard_bounce' }, /^reason: must be "manual"/],
    [{ email: 'ok@dest.example', note: 'x' }, /note|Unrecognized/i],
  ];
  for (const [body, message] of cases) {
    const r = await add(body);
    assert.equal([r.status, r.body.error.code, r.body.error.status], [400, 'validation_error', 400], JSON.stringify(body));
    assert.match(r.body.error.message, message);
  }
  assert.is((await api('/suppressions/ok@dest.example')).status, 404);
  const json = await request(`${s.t.api}/suppressions`, { body: '{"email":', key: s.key });
  assert.equal([json.status, json.body.error.code], [400, 'invalid_json']);
});

test('workspaces are isolated: another workspace cannot see, read or delete an entry, and has its own', async () => {
  await add({ email: 'private@dest.example' });
  const otherApi = (path: string, method = 'GET') => request(`${s.t.api}${path}`, { key: otherKey, method });
  assert.not.ok((await otherApi('/suppressions?limit=100')).body.data.some((e: { email: string }) => e.email === 'private@dest.example'));
  assert.is((await otherApi('/suppressions/private@dest.example')).status, 404);
  assert.is((await otherApi('/suppressions/private@dest.example', 'DELETE')).status, 404);
  assert.is((await api('/suppressions/private@dest.example')).status, 200, 'still there for its owner');
  assert.is((await add({ email: 'private@dest.example' }, otherKey)).status, 201, 'the other workspace has a list of its own');

  const anonymous = await request(`${s.t.api}/suppressions`);
  assert.equal(anonymous.status, 401);
  assert.is(anonymous.body.error.message, 'Unauthorized — provide a valid API key or session');
});

test.run();
