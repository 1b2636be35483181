// Inboxes over real HTTP: create on a domain of the workspace, the local-part rules, one address per box,
// rename and disable, delete, and workspace isolation on every route.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestApp, seedWorkspace, request, type TestApp } from '../testkit/app.ts';

let t: TestApp;
let a: Awaited<ReturnType<typeof seedWorkspace>>;
let b: Awaited<ReturnType<typeof seedWorkspace>>;
let domainA: string;
let domainB: string;

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  a = await seedWorkspace(t);
  b = await seedWorkspace(t, { workspace: 'other' });
  domainA = (await request(`${t.api}/domains`, { key: a.key, body: { name: 'inbox.test' } })).body.id;
  domainB = (await request(`${t.api}/domains`, { key: b.key, body: { name: 'inbox-b.test' } })).body.id;
});
test.after(() => t.stop());

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${t.api}${path}`, { key: a.key, ...opts });

test('POST /inboxes: 201 with the address built from the local part and the domain', async () => {
  const res = await api('/inboxes', { body: { domain_id: domainA, local_part: 'Support', name: 'Support desk' } });
  assert.is(res.status, 201, JSON.stringify(res.body));
  assert.match(res.body.id, /^inb_[0-9A-Z]{26}$/);
  assert.equal(
    { ...res.body, id: undefined, createdAt: undefined },
    { id: undefined, address: 'support@inbox.test', status: 'active', receiving: false, receivingStatus: 'inbound_not_set_up', name: 'Support desk', domainId: domainA, forwardTo: null, forwardStatus: 'off', createdAt: undefined },
  );
  assert.equal((await api(`/inboxes/${res.body.id}`)).body, res.body);
});

test('local parts are plain dot-atoms of at most 64 characters; errors name local_part', async () => {
  for (const local_part of ['a b', 'ünï', '.x', 'x..y', 'x.', 'x'.repeat(65), '', 'a@b', '"quoted"', 'a\r\nb']) {
    const res = await api('/inboxes', { body: { domain_id: domainA, local_part } });
    assert.is(res.status, 400, JSON.stringify(local_part));
    assert.ok(res.body.error.message.startsWith('local_part:'), res.body.error.message);
  }
  assert.is((await api('/inboxes', { body: { local_part: 'x' } })).status, 400, 'domain_id is required');
  assert.is((await api('/inboxes', { body: { domain_id: domainA, local_part: 'first.last+tag' } })).status, 201);
});

test('an address exists once on the box: 409 for the same (any case); another workspace cannot hold its domain', async () => {
  const dup = await api('/inboxes', { body: { domain_id: domainA, local_part: 'SUPPORT' } });
  assert.equal([dup.status, dup.body.error.code], [409, 'inbox_exists']);
  const elsewhere = await api('/domains', { key: b.key, body: { name: 'inbox.test' } });
  assert.equal([elsewhere.status, elsewhere.body.error.code], [409, 'domain_exists']);
});

test('a domain of another workspace or none at all is 404', async () => {
  assert.is((await api('/inboxes', { body: { domain_id: domainB, local_part: 'x' } })).status, 404);
  assert.is((await api('/inboxes', { body: { domain_id: 'dom_01ARZ3NDEKTSV4RRFFQ69G5FAV', local_part: 'x' } })).status, 404);
});

test('list (with domain_id), rename, disable, and bad patches', async () => {
  const id = (await api('/inboxes', { body: { domain_id: domainA, local_part: 'billing' } })).body.id;
  const all = (await api('/inboxes')).body;
  assert.ok(all.data.some((i: any) => i.id === id));
  assert.is(all.count, all.data.length);
  assert.ok((await api(`/inboxes?domain_id=${domainA}`)).body.data.every((i: any) => i.domainId === domainA));
  assert.equal((await api(`/inboxes?domain_id=${domainB}`)).body.data, [], 'another workspace domain lists nothing');
  const renamed = await api(`/inboxes/${id}`, { method: 'PATCH', body: { name: 'Accounts' } });
  assert.equal([renamed.status, renamed.body.name, renamed.body.status], [200, 'Accounts', 'active']);
  const disabled = await api(`/inboxes/${id}`, { method: 'PATCH', body: { status: 'disabled' } });
  assert.is(disabled.body.status, 'disabled');
  for (const body of [{ status: 'paused' }, {}, { address: 'x@y.test' }]) {
    const res = await api(`/inboxes/${id}`, { method: 'PATCH', body });
    assert.equal([res.status, res.body.error.code], [400, 'validation_error'], JSON.stringify(body));
  }
});

test('workspace isolation: another workspace gets 404 and sees none', async () => {
  const id = (await api('/inboxes', { body: { domain_id: domainA, local_part: 'private' } })).body.id;
  for (const [method, body] of [['GET', undefined], ['PATCH', { name: 'x' }], ['DELETE', undefined]] as const) {
    assert.is((await api(`/inboxes/${id}`, { method, body, key: b.key })).status, 404, method);
  }
  assert.not.ok((await api('/inboxes', { key: b.key })).body.data.some((i: any) => i.id === id));
  assert.is((await api(`/inboxes/${id}`)).body.name, '', 'unchanged for its owner');
});

test('inbox addresses are sending identities; DELETE removes the inbox; deleting the domain removes its inboxes', async () => {
  const ids = (await api('/sending-identities')).body;
  assert.ok(ids.addresses.includes('support@inbox.test'));
  assert.ok(ids.localParts.includes('support'));
  const id = (await api('/inboxes', { body: { domain_id: domainA, local_part: 'temp' } })).body.id;
  assert.equal((await api(`/inboxes/${id}`, { method: 'DELETE' })).body, { ok: true });
  assert.is((await api(`/inboxes/${id}`)).status, 404);
  assert.is((await api(`/inboxes/${id}`, { method: 'DELETE' })).status, 404);
  await api(`/domains/${domainA}`, { method: 'DELETE' });
  assert.equal((await api('/inboxes')).body.data, []);
});

test.run();
