// Scoped API keys over real HTTP: every route of the table with each kind of key (allowed or 403
// insufficient_scope naming the permission), the checks of POST /keys, and what sending and inbox keys see.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { login, request } from '../testkit/app.ts';
import { openEventStream } from '../testkit/event-stream.ts';
import { ROUTE_SCOPES, undecided } from './scopes.ts';

let s: InboundScene;
let cookie: string;
let other: { id: string; address: string };
const keys: Record<string, string> = {};
let sendDomain: { id: string; name: string };

const api = (path: string) => `${s.t.api}${path}`;
const makeKey = async (body: Record<string, unknown>) => request(api('/keys'), { body: { name: 'k', ...body }, cookie, headers: { origin: s.t.url } });

test.before(async () => {
  s = await startInboundScene();
  cookie = await login(s.t, s.email);
  other = await s.createInbox(s.domain.id, 'other');
  sendDomain = { id: (await s.verifiedDomain('send.example')).id, name: 'send.example' };
  s.routeTo('dest.example');
  keys.full = s.key;
  keys.sending = (await makeKey({ permission: 'sending_access' })).body.key;
  keys.sendingOne = (await makeKey({ permission: 'sending_access', domain_id: sendDomain.id })).body.key;
  keys.inbox = (await makeKey({ permission: 'inbox_access', inbox_ids: [s.inbox.id] })).body.key;
});
test.after(() => s.stop());

test('POST /keys judges permission, domain_id and inbox_ids, naming the field', async () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ permission: 'admin' }, 'permission'],
    [{ permission: 'inbox_access' }, 'inbox_ids'],
    [{ permission: 'inbox_access', inbox_ids: [] }, 'inbox_ids'],
    [{ permission: 'inbox_access', inbox_ids: ['inb_00000000000000000000000000'] }, 'inbox_ids.0'],
    [{ permission: 'full_access', inbox_ids: [s.inbox.id] }, 'inbox_ids'],
    [{ permission: 'full_access', domain_id: sendDomain.id }, 'domain_id'],
    [{ permission: 'inbox_access', inbox_ids: [s.inbox.id], domain_id: sendDomain.id }, 'domain_id'],
    [{ permission: 'sending_access', domain_id: 'dom_00000000000000000000000000' }, 'domain_id'],
  ];
  const before = (await request(api('/keys'), { cookie })).body.count;
  for (const [body, field] of cases) {
    const res = await makeKey(body);
    assert.is(res.status, 400, JSON.stringify(body));
    assert.is(res.body.error.code, 'validation_error');
    assert.ok(res.body.error.message.startsWith(`${field}:`), res.body.error.message);
  }
  assert.is((await request(api('/keys'), { cookie })).body.count, before, 'nothing was created');
});

test('GET /keys shows each key its scope; a scoped key sees only itself', async () => {
  const all = (await request(api('/keys'), { key: keys.full })).body.data as Array<Record<string, unknown>>;
  const byPermission = (p: string) => all.filter((k) => k.permission === p);
  assert.is(byPermission('inbox_access')[0].inboxIds instanceof Array, true);
  assert.equal(byPermission('inbox_access')[0].inboxIds, [s.inbox.id]);
  assert.ok(byPermission('sending_access').some((k) => k.domainId === sendDomain.id));
  assert.ok(all.every((k) => 'lastUsedAt' in k));
  const mine = (await request(api('/keys'), { key: keys.inbox })).body.data;
  assert.is(mine.length, 1);
  assert.is(mine[0].permission, 'inbox_access');
  assert.ok(mine[0].lastUsedAt, 'its use is recorded');
});

test('every API route has a decision for scoped keys', () => {
  // The app refuses to start otherwise (server.ts); here the check itself is checked.
  assert.equal(undecided([{ path: '/api/v1/new-thing', methods: ['HEAD', 'GET'] }], '/api/v1'), ['GET /new-thing']);
  assert.equal(undecided([{ path: '/api/v1/emails/:id', methods: ['GET'] }], '/api/v1'), []);
});

test('route x permission: allowed, or 403 insufficient_scope naming the permission needed', async () => {
  const fill = (path: string) => path.replace(/:[a-z_A-Z]+/g, (p) => (p === ':email' ? 'x%40y.test' : p === ':entry' ? 'x.test' : 'em_00000000000000000000000000'));
  for (const [route, decided] of Object.entries(ROUTE_SCOPES)) {
    const [method, path] = route.split(' ');
    if (path === '/events/stream') continue; // stays open: checked below
    for (const permission of ['full_access', 'sending_access', 'inbox_access'] as const) {
      const key = permission === 'full_access' ? keys.full : permission === 'sending_access' ? keys.sending : keys.inbox;
      const res = await request(api(fill(path)), { method, key, body: method === 'GET' || method === 'DELETE' ? undefined : {} });
      const label = `${route} with ${permission}: ${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`;
      if (decided.own) {
        assert.is.not(res.body?.error?.code, 'insufficient_scope', label);
      } else if (permission === 'full_access' || decided[permission]) {
        assert.is.not(res.status, 403, label);
      } else {
        assert.is(res.status, 403, label);
        assert.is(res.body.error.code, 'insufficient_scope', label);
        assert.is(res.body.error.status, 403, label);
        assert.match(res.body.error.message, /it needs full_access/, label);
      }
    }
  }
});

test('a sending key for one domain sends from it alone and reads back only its own sends', async () => {
  const ok = await request(api('/emails'), { key: keys.sendingOne, body: { from: `app@${sendDomain.name}`, to: ['a@dest.example'], subject: 'mine', text: 'x' } });
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  const refused = await request(api('/emails'), { key: keys.sendingOne, body: { from: `app@${s.domain.name}`, to: ['a@dest.example'], subject: 'no', text: 'x' } });
  assert.is(refused.status, 403);
  assert.is(refused.body.error.code, 'insufficient_scope');
  assert.match(refused.body.error.message, /send\.example/);
  const batch = await request(api('/emails/batch'), { key: keys.sendingOne, body: [{ from: `app@${sendDomain.name}`, to: ['a@dest.example'], subject: 'b', text: 'x' }, { from: `app@${s.domain.name}`, to: ['a@dest.example'], subject: 'b', text: 'x' }] });
  assert.is(batch.status, 403, 'a batch with one From out of scope is refused whole');
  assert.is((await request(api(`/emails/${ok.body.id}`), { key: keys.sendingOne })).status, 200);
  assert.is((await request(api(`/emails/${ok.body.id}/events`), { key: keys.sendingOne })).status, 200);
  // Another key's send, and received mail, do not exist for it.
  const byFull = await s.send({ from: `app@${sendDomain.name}`, to: ['a@dest.example'], subject: 'theirs', text: 'x' });
  assert.is((await request(api(`/emails/${byFull.body.id}`), { key: keys.sendingOne })).status, 404);
  assert.is((await request(api(`/emails/${byFull.body.id}/events`), { key: keys.sending })).status, 404);
  const list = await request(api('/emails'), { key: keys.sendingOne });
  assert.is(list.status, 403);
});

test('an inbox key sees its inboxes mail alone: lists, search, one email, raw, thread, patch, inboxes', async () => {
  const mine = await s.receive('Quarterly figures mine');
  const theirs = await s.deliver(`From: Bob <bob@sender.example>\nTo: ${other.address}\nSubject: Quarterly figures theirs\nMessage-ID: <t1@sender.example>\n\nWords.\n`, { to: [other.address] });
  const theirsId = /queued as (em_\w+)/.exec(theirs.text)![1];
  const k = keys.inbox;
  const list = await request(api('/emails'), { key: k });
  assert.equal(list.body.data.map((e: { id: string }) => e.id), [mine]);
  const search = await eventually(async () => {
    const r = await request(api('/emails?query=quarterly'), { key: keys.full });
    return r.body.data.length === 2 && r;
  }, 10_000, 'both indexed');
  assert.ok(search);
  const found = await request(api('/emails?query=quarterly'), { key: k });
  assert.equal(found.body.data.map((e: { id: string }) => e.id), [mine]);
  const asked = await request(api(`/emails?inbox_id=${other.id}`), { key: k });
  assert.equal(asked.body.data, [], 'asking for another inbox finds nothing');
  for (const path of [`/emails/${theirsId}`, `/emails/${theirsId}/raw`, `/threads/${theirsId}`]) {
    const r = await request(api(path), { key: k });
    assert.is(r.status, 404, path);
    assert.is(r.body.error.code, 'not_found', path);
  }
  assert.is((await request(api(`/emails/${theirsId}`), { method: 'PATCH', key: k, body: { read: true } })).status, 404);
  assert.is((await request(api(`/emails/${mine}`), { key: k })).status, 200);
  assert.is((await request(api(`/threads/${mine}`), { key: k })).body.count, 1);
  const patched = await request(api(`/emails/${mine}`), { method: 'PATCH', key: k, body: { archived: true } });
  assert.is(patched.status, 200);
  assert.ok(patched.body.archivedAt);
  const inboxes = await request(api('/inboxes'), { key: k });
  assert.equal(inboxes.body.data.map((i: { id: string }) => i.id), [s.inbox.id]);
  assert.is((await request(api(`/inboxes/${other.id}`), { key: k })).status, 404);
  // It sends from its inbox's address, not from another's.
  const sent = await request(api('/emails'), { key: k, body: { from: s.inbox.address, to: ['a@dest.example'], subject: 'reply', text: 'x' } });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  assert.is((await request(api(`/emails/${sent.body.id}`), { key: k })).status, 200, 'its sent mail is its own');
  const spoof = await request(api('/emails'), { key: k, body: { from: other.address, to: ['a@dest.example'], subject: 'no', text: 'x' } });
  assert.is(spoof.status, 403);
  assert.is(spoof.body.error.code, 'insufficient_scope');
});

test('an inbox key creates webhooks for its inboxes only and sees no others', async () => {
  const k = keys.inbox;
  const body = { url: 'https://hooks.example/in', events: ['email.received'] };
  const missing = await request(api('/webhooks'), { key: k, body });
  assert.is(missing.status, 400);
  assert.match(missing.body.error.message, /^inbox_id:/, JSON.stringify(missing.body));
  assert.is((await request(api('/webhooks'), { key: k, body: { ...body, inbox_id: other.id } })).status, 400);
  const theirs = await request(api('/webhooks'), { key: keys.full, body });
  assert.is(theirs.status, 201, JSON.stringify(theirs.body));
  const mine = await request(api('/webhooks'), { key: k, body: { ...body, inbox_id: s.inbox.id } });
  assert.is(mine.status, 201, JSON.stringify(mine.body));
  const listed = await request(api('/webhooks'), { key: k });
  assert.equal(listed.body.data.map((w: { id: string }) => w.id), [mine.body.id]);
  assert.is((await request(api(`/webhooks/${theirs.body.id}`), { key: k })).status, 404);
  assert.is((await request(api(`/webhooks/${theirs.body.id}`), { method: 'DELETE', key: k })).status, 404);
  assert.is((await request(api(`/webhooks/${mine.body.id}`), { key: k })).status, 200);
});

test('the live event stream: an inbox key gets its inboxes events alone, a sending key none', async () => {
  const refused = await request(api('/events/stream'), { key: keys.sending });
  assert.is(refused.status, 403);
  assert.is(refused.body.error.code, 'insufficient_scope');
  assert.is((await request(api(`/events/stream?inbox_id=${other.id}`), { key: keys.inbox })).status, 400, 'another inbox is no inbox of its');
  type Event = { data: { email: { id: string; inboxId: string | null } } };
  const all = await openEventStream<Event>(api('/events/stream?types=email.received'), keys.full);
  const mine = await openEventStream<Event>(api('/events/stream?types=email.received'), keys.inbox);
  try {
    await eventually(() => all.connected() && mine.connected(), 10_000, 'both connected');
    const theirs = await s.deliver(`From: Bob <bob@sender.example>\nTo: ${other.address}\nSubject: Stream theirs\nMessage-ID: <t2@sender.example>\n\nWords.\n`, { to: [other.address] });
    const theirsId = /queued as (em_\w+)/.exec(theirs.text)![1];
    const ownId = await s.receive('Stream mine');
    const ids = (m: typeof all) => m.messages().map((e) => e.data.data.email.id);
    await eventually(() => ids(all).includes(theirsId) && ids(all).includes(ownId), 10_000, 'both events on the full stream');
    await eventually(() => ids(mine).includes(ownId), 10_000, 'its own event on the inbox stream');
    assert.not.ok(ids(mine).includes(theirsId), 'the other inbox event never reaches the inbox key');
  } finally {
    all.close();
    mine.close();
  }
});

test('mail sent from an inbox is that inbox\'s: on an inbox key\'s stream, an inbox-filtered stream and an inbox webhook', async () => {
  type Event = { data: { email: { id: string } } };
  const byKey = await openEventStream<Event>(api('/events/stream?types=email.sent'), keys.inbox);
  const byFilter = await openEventStream<Event>(api(`/events/stream?types=email.sent&inbox_id=${s.inbox.id}`), keys.full);
  const hook = await request(api('/webhooks'), { key: keys.full, body: { url: 'https://hooks.example/sent', events: ['email.sent'], inbox_id: s.inbox.id } });
  assert.is(hook.status, 201, JSON.stringify(hook.body));
  try {
    await eventually(() => byKey.connected() && byFilter.connected(), 10_000, 'both connected');
    const send = (from: string) => request(api('/emails'), { key: keys.full, body: { from, to: 'carol@dest.example', subject: 'From an inbox', text: 'x' } });
    const theirs = (await send(other.address)).body.id as string;
    const mine = (await send(s.inbox.address.toUpperCase())).body.id as string;
    const ids = (m: typeof byKey) => m.messages().map((e) => e.data.data.email.id);
    for (const [name, m] of [['the inbox key', byKey], ['the inbox filter', byFilter]] as const) {
      await eventually(() => ids(m).includes(mine), 10_000, `the send from the inbox on ${name}'s stream`);
      assert.not.ok(ids(m).includes(theirs), `${name}: not the other inbox's send`);
    }
    const delivered = (await request(api(`/webhooks/${hook.body.id}/deliveries`), { key: keys.full })).body.data.map((d: { emailId: string }) => d.emailId);
    assert.equal(delivered, [mine]);
  } finally {
    byKey.close();
    byFilter.close();
  }
});

test.run();
