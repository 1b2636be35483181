// The allow and block lists through the API and at the door: entries checked at the edge (400 with the
// reason, 409 for an entry already listed, 404 for one that is not), pages as every list, one workspace never
// seeing another's; a sender blocked by its envelope refused at RCPT with 550 5.7.1 (only for the workspaces
// that block it), one blocked by its From filed as spam, an allowed one never put in Spam by its content but
// still by GTUBE.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from '../testkit/app.ts';
import { startSpamScene, type SpamScene } from '../testkit/spam.ts';
import { GTUBE } from './tokens.ts';

let s: SpamScene;
let other: { key: string; inbox: string };

test.before(async () => {
  s = await startSpamScene();
  other = await s.otherWorkspace('lists-other', 'other.example');
});
test.after(async () => {
  await s?.stop();
});

const api = (path: string, opts: { method?: string; body?: unknown; key?: string } = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const letter = (from: string, subject = 'Hello', body = 'A few words.') =>
  `From: ${from}\r\nTo: hello@in.example\r\nSubject: ${subject}\r\nDate: Mon, 1 Jun 2026 10:00:00 +0000\r\nMessage-ID: <${Math.random().toString(36).slice(2)}@x.example>\r\n\r\n${body}\r\n`;

test('entries are checked at the edge: 201 with the stored form, 400 with the reason, 409 when listed, 404 when not', async () => {
  const added = await api('/spam/block', { body: { entry: 'Spammer.Example' } });
  assert.is(added.status, 201);
  assert.equal({ entry: added.body.entry, type: added.body.type }, { entry: 'spammer.example', type: 'domain' });
  assert.match(added.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  const bad: Array<[unknown, string]> = [
    [{}, 'entry: is required'],
    [{ entry: 42 }, 'entry: must be a string'],
    [{ entry: 'co.uk' }, 'entry: "co.uk" is a public suffix, shared by unrelated senders: give a domain under it, such as example.co.uk'],
    [{ entry: 'not an address@' }, 'entry: "not an address@" has a space: give one address (a@example.com) or one domain (example.com)'],
    [{ entry: '"quoted"@x.example' }, 'entry: "\"quoted\"@x.example" has a local part that is not a plain ASCII dot-atom: list its domain instead'],
    [{ entry: 'a.example', list: 'x' }, 'body: Unrecognized key: "list"'],
  ];
  for (const [body, message] of bad) {
    const r = await api('/spam/allow', { body });
    assert.equal([r.status, r.body.error.code, r.body.error.message], [400, 'validation_error', message], JSON.stringify(body));
  }
  const twice = await api('/spam/block', { body: { entry: '@spammer.example' } });
  assert.equal([twice.status, twice.body.error.code, twice.body.error.message], [409, 'entry_exists', 'spammer.example is already on your block list']);
  const elsewhere = await api('/spam/allow', { body: { entry: 'spammer.example' } });
  assert.equal([elsewhere.status, elsewhere.body.error.code], [409, 'entry_on_other_list']);
  assert.is(elsewhere.body.error.message, 'spammer.example is on your block list: remove it there first (DELETE /spam/block/spammer.example)');
  const missing = await api('/spam/allow/nobody.example', { method: 'DELETE' });
  assert.equal([missing.status, missing.body.error.code], [404, 'not_found']);
  assert.is((await api('/spam/allow/spammer.example')).status, 404);
  assert.equal((await api('/spam/block/SPAMMER.example')).body, added.body);
  // Nothing of that changed the lists.
  assert.equal((await api('/spam/allow')).body, { data: [], count: 0, hasMore: false });
});

test('lists page newest first, and one workspace never sees or changes another\'s', async () => {
  for (const entry of ['one.example', 'two@one.example']) assert.is((await api('/spam/allow', { body: { entry } })).status, 201);
  const page = await api('/spam/allow?limit=1');
  assert.equal({ entries: page.body.data.map((e: { entry: string }) => e.entry), count: page.body.count, hasMore: page.body.hasMore }, { entries: ['two@one.example'], count: 1, hasMore: true });
  assert.equal((await api('/spam/allow?limit=1&offset=1')).body.data.map((e: { entry: string }) => e.entry), ['one.example']);
  assert.is((await api('/spam/allow?limit=0')).status, 400);
  assert.equal((await api('/spam/allow', { key: other.key })).body, { data: [], count: 0, hasMore: false });
  assert.is((await api('/spam/allow/one.example', { key: other.key })).status, 404);
  assert.is((await api('/spam/allow/one.example', { method: 'DELETE', key: other.key })).status, 404);
  // The other workspace may list the same entry on its own list.
  assert.is((await api('/spam/block', { body: { entry: 'one.example' }, key: other.key })).status, 201);
  assert.equal((await api('/spam/allow/one.example', { method: 'DELETE' })).body, { ok: true });
  assert.is((await api('/spam/allow/one.example', { method: 'DELETE' })).status, 404);
  assert.is((await api('/spam/block/one.example', { method: 'DELETE', key: other.key })).status, 200);
  assert.is((await request(`${s.t.api}/spam/allow`)).status, 401);
});

test('a sender blocked by its envelope is refused at RCPT; another workspace that does not block it still gets the mail', async () => {
  const refused = await s.deliver(letter('Sales <sales@spammer.example>'), { from: 'bounce@mail.spammer.example' });
  assert.is(refused.code, 550);
  assert.is(refused.text, '5.7.1 <hello@in.example>: The recipient does not accept mail from senders at spammer.example');
  assert.equal(await s.stored('subject = ? AND from_address = ?', 'Hello', 'sales@spammer.example'), []);

  const both = await s.deliver(letter('Sales <sales@spammer.example>', 'Both'), { from: 'bounce@mail.spammer.example', to: ['hello@in.example', other.inbox] });
  assert.is(both.code, 250);
  assert.equal((await s.stored("subject = 'Both'")).map((r) => r.inbox_id === s.inbox.id), [false]);
  // The null sender (bounces) is never refused at RCPT.
  assert.is((await s.deliver(letter('MAILER-DAEMON <mailer-daemon@relay.example>', 'Undelivered'), { from: '' })).code, 250);
});

test('a sender blocked by its From is filed as spam, naming the entry', async () => {
  assert.is((await api('/spam/block', { body: { entry: 'pest@annoying.example' } })).status, 201);
  const { reply, email } = await s.receiveRaw(letter('Pest <pest@annoying.example>', 'Buy now'), { from: 'envelope@relay.example' });
  assert.ok(reply.startsWith('250'), reply);
  assert.equal([email.category, email.classification], ['spam', 'Blocked: pest@annoying.example is on your block list']);
  assert.equal(email.spam.signals[0], { kind: 'block', detail: 'pest@annoying.example is on your block list', weight: 1 });
});

test('an allowed sender is never put in Spam by the filter, but GTUBE still is, and so is an SPF failure', async () => {
  assert.is((await api('/spam/allow', { body: { entry: 'friend.example' } })).status, 201);
  const plain = (await s.receiveRaw(letter('Friend <pal@mail.friend.example>'))).email;
  assert.is(plain.category, 'primary');
  assert.ok(plain.spam.signals.some((x: { kind: string; detail: string }) => x.kind === 'allow' && x.detail === 'friend.example is on your allow list'));
  const gtube = (await s.receiveRaw(letter('Friend <pal@friend.example>', 'Test', GTUBE))).email;
  assert.equal([gtube.category, gtube.classification], ['spam', 'GTUBE: the message carries the anti-spam test string, which is always spam']);
  // The allow list does not vouch for a forged From: an SPF failure without DKIM is still spam.
  s.dns.set('friend.example', 'TXT', ['v=spf1 ip4:192.0.2.1 -all']);
  const forged = (await s.receiveRaw(letter('Friend <pal@friend.example>'), { from: 'pal@friend.example' })).email;
  assert.equal([forged.category, forged.spam.signals[0].kind], ['spam', 'auth']);
});

test.run();
