// Domain, inbox and key events end to end: a domain added, verified, its DKIM record changed and its return
// path's MX removed in the test DNS server and found so by the periodic re-check, an inbox created and deleted,
// a key created and revoked, the domain deleted. Each reaches a webhook endpoint signed like every webhook
// and the live stream; a stream client that reconnects with the last id it read gets what it missed, email
// events included, in commit order and without repeats. Endpoints limited to a domain or an inbox get theirs.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { login, request } from '../testkit/app.ts';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { openEventStream } from '../testkit/event-stream.ts';
import { recheckDueDomains } from './verification.ts';
import { run } from '../db/query.ts';

type Payload = { type: string; created_at: string; data: Record<string, any> };
let s: OutboundScene;
let receiver: Server;
let cookie: string;
const hits: Array<{ path: string; headers: Record<string, unknown>; body: Payload }> = [];

test.before(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hits.push({ path: req.url!, headers: req.headers, body: JSON.parse(body) });
      res.end('thanks');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  s = await startOutboundScene({ env: { MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true' } });
  cookie = await login(s.t, s.email);
});
test.after(async () => {
  receiver.closeAllConnections();
  receiver.close();
  await s.stop();
});

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const hook = async (path: string, body: Record<string, unknown>) => {
  const res = await api('/webhooks', { body: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${path}`, ...body } });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string };
};
const at = (path: string) => hits.filter((h) => h.path === path).map((h) => h.body);
const typesAt = (path: string) => at(path).map((b) => b.type);

test('domain, inbox and key events reach a webhook and the stream; the re-check announces changed and missing records', async () => {
  await hook('/all', { events: ['*'] });
  await hook('/keys', { events: ['key.created', 'key.revoked'] });
  const stream = await openEventStream<Payload>(`${s.t.api}/events/stream?types=domain.created,domain.verified,domain.dns_changed,domain.deleted,inbox.created,inbox.deleted,key.created,key.revoked`, s.key);
  await eventually(() => stream.connected(), 5000, 'the stream to connect');

  const d = await s.verifiedDomain('events.test');
  await hook('/domain-only', { events: ['*'], domain_id: d.id });
  const inbox = await api('/inboxes', { body: { domain_id: d.id, local_part: 'support' } });
  assert.is(inbox.status, 201, JSON.stringify(inbox.body));
  await hook('/inbox-only', { events: ['*'], inbox_id: inbox.body.id });
  const key = await request(`${s.t.api}/keys`, { body: { name: 'ci deploy' }, cookie });
  assert.is(key.status, 201);
  assert.is((await request(`${s.t.api}/keys/${key.body.id}`, { method: 'DELETE', cookie })).status, 200);

  // The re-check finds the DKIM record changed and the return path's MX gone.
  const dkim = d.records.find((r) => r.record === 'DKIM')!;
  const returnMx = d.records.find((r) => r.record === 'MX')!;
  s.dns.set(dkim.name, 'TXT', ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsomethingelse']);
  s.dns.remove(returnMx.name, 'MX');
  await s.t.app.store.write(() => run('UPDATE domains SET checked_at = 0 WHERE id = ?', d.id));
  assert.ok((await recheckDueDomains(s.t.app)) >= 1);
  // Nothing changed since: the next re-check announces nothing more (it un-verifies the domain: a second failure).
  await s.t.app.store.write(() => run('UPDATE domains SET checked_at = 0 WHERE id = ?', d.id));
  await recheckDueDomains(s.t.app);

  assert.is((await api(`/inboxes/${inbox.body.id}`, { method: 'DELETE' })).status, 200);
  assert.is((await api(`/domains/${d.id}`, { method: 'DELETE' })).status, 200);

  const expected = ['domain.created', 'domain.verified', 'inbox.created', 'key.created', 'key.revoked', 'domain.dns_changed', 'inbox.deleted', 'domain.deleted'];
  await eventually(() => (at('/all').length >= expected.length ? true : undefined), 10_000, 'the deliveries');
  await new Promise((r) => setTimeout(r, 800));
  assert.equal(typesAt('/all').sort(), [...expected].sort(), 'one delivery each');

  const of = (type: string) => at('/all').find((b) => b.type === type)!;
  const domain = { id: d.id, name: 'events.test' };
  assert.match(of('domain.created').data.id, /^devt_/);
  assert.equal(of('domain.created').data.domain, { ...domain, status: 'pending' });
  assert.equal(of('domain.verified').data, { id: of('domain.verified').data.id, domain: { ...domain, status: 'verified' }, previousStatus: 'pending' });
  const changed = of('domain.dns_changed').data;
  assert.equal(changed.domain, { ...domain, status: 'verified' }, 'one failed re-check does not un-verify');
  const byRecord = Object.fromEntries(changed.records.map((r: any) => [r.record, r]));
  assert.equal(Object.keys(byRecord).sort(), ['DKIM', 'MX']);
  assert.is(byRecord.DKIM.change, 'changed');
  assert.is(byRecord.DKIM.name, dkim.name);
  assert.equal(byRecord.DKIM.found, ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsomethingelse']);
  assert.is(byRecord.DKIM.expected, dkim.value);
  assert.equal({ change: byRecord.MX.change, found: byRecord.MX.found, name: byRecord.MX.name }, { change: 'gone', found: [], name: returnMx.name });
  assert.equal(of('inbox.created').data.inbox, { id: inbox.body.id, address: 'support@events.test', name: '', domainId: d.id });
  assert.equal(of('inbox.deleted').data.inbox.id, inbox.body.id);
  // The second re-check's definite failure un-verified it (and announced no change again: one dns_changed).
  assert.equal(of('domain.deleted').data.domain, { ...domain, status: 'failed' });
  const created = of('key.created').data;
  assert.equal(created.key, { id: key.body.id, name: 'ci deploy', prefix: key.body.prefix, createdAt: key.body.createdAt });
  assert.is(created.actor.type, 'user');
  assert.not.ok(JSON.stringify(created).includes(key.body.key), 'the secret is never in an event');
  assert.is(of('key.revoked').data.key.id, key.body.id);
  assert.ok(hits.find((h) => h.path === '/all')!.headers['webhook-signature'], 'signed like every webhook');

  // Only an email's events are promised in order (docs/webhooks.md): two key events may be delivered at once.
  assert.equal(typesAt('/keys').sort(), ['key.created', 'key.revoked'], 'subscribed by name');
  assert.equal(typesAt('/domain-only').sort(), ['domain.deleted', 'domain.dns_changed', 'inbox.created', 'inbox.deleted'].sort(), 'a domain endpoint: its domain and inboxes, no key events');
  assert.equal(typesAt('/inbox-only'), ['inbox.deleted'], 'an inbox endpoint: its own inbox only');

  const onStream = await eventually(() => (stream.messages().length >= expected.length ? stream.messages() : undefined), 10_000, 'the stream');
  assert.equal(onStream.map((m) => m.event), expected, 'the stream carries them in commit order');
  assert.equal(onStream.find((m) => m.event === 'key.created')!.data, of('key.created'), 'the same payload as the webhook');
  stream.close();
});

test('a stream client reconnecting with the last id it read gets what it missed, email events among them, once and in order', async () => {
  const d = await s.verifiedDomain('replay.test');
  s.routeTo('example.net');
  const first = await openEventStream<Payload>(`${s.t.api}/events/stream`, s.key);
  await eventually(() => first.connected(), 5000, 'the stream to connect');
  assert.is((await api('/inboxes', { body: { domain_id: d.id, local_part: 'a' } })).status, 201);
  const [seen] = await eventually(() => (first.messages().length ? first.messages() : undefined), 10_000, 'the first event');
  assert.is(seen.event, 'inbox.created');
  assert.match(seen.lastId, /^\d+:\d+$/, 'a domain event id names both sequences');
  first.close();

  // Missed while away: an inbox, an email and its events, a key, another inbox.
  assert.is((await api('/inboxes', { body: { domain_id: d.id, local_part: 'b' } })).status, 201);
  const sent = await s.send({ from: 'a@replay.test', to: 'someone@example.net', subject: 'Hi', text: 'Hello' });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  await eventually(async () => ((await s.events(sent.body.id)).some((e) => e.type === 'delivered') ? true : undefined), 10_000, 'the delivery');
  assert.is((await request(`${s.t.api}/keys`, { body: { name: 'later' }, cookie })).status, 201);
  assert.is((await api('/inboxes', { body: { domain_id: d.id, local_part: 'c' } })).status, 201);

  const again = await openEventStream<Payload>(`${s.t.api}/events/stream`, s.key, seen.lastId);
  const want = ['inbox.created', 'email.sent', 'email.delivered', 'key.created', 'inbox.created'];
  const replayed = await eventually(() => (again.messages().length >= want.length ? again.messages() : undefined), 10_000, 'the replay');
  await new Promise((r) => setTimeout(r, 800));
  const types = again.messages().map((m) => m.data.type);
  assert.equal(types, want, 'in commit order, nothing twice');
  assert.equal(replayed.map((m) => m.data.data.inbox?.address).filter(Boolean), ['b@replay.test', 'c@replay.test']);

  // Reconnecting after the email event (a plain id) replays only what came after it.
  const afterEmail = again.messages().find((m) => m.data.type === 'email.delivered')!;
  const third = await openEventStream<Payload>(`${s.t.api}/events/stream`, s.key, afterEmail.lastId);
  const rest = await eventually(() => (third.messages().length >= 2 ? third.messages() : undefined), 10_000, 'the rest');
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(third.messages().map((m) => m.data.type), ['key.created', 'inbox.created']);
  assert.equal(rest.length, 2);
  again.close();
  third.close();

  const bad = await api('/events/stream', { headers: { 'last-event-id': '12:x' } });
  assert.is(bad.status, 400);
  assert.is(bad.body.error.code, 'validation_error');
});

test('webhook subscriptions and stream filters take the new type names; unknown ones are refused', async () => {
  const ok = await api('/webhooks', { body: { url: 'http://127.0.0.1:9/x', events: ['domain.dns_changed', 'inbox.deleted', 'key.revoked'] } });
  assert.is(ok.status, 201);
  const bad = await api('/webhooks', { body: { url: 'http://127.0.0.1:9/x', events: ['key.rotated'] } });
  assert.is(bad.status, 400);
  assert.match(JSON.stringify(bad.body), /key\.revoked/);
  const stream = await api('/events/stream?types=domain.nope');
  assert.is(stream.status, 400);
});

test.run();
