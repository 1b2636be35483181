// Managed unsubscribe on marketing mail, end to end over real HTTP and SMTP: the headers each recipient's own
// copy carries inside its DKIM signature, the page behind the link (GET shows, POST unsubscribes, RFC 8058
// one-click POSTs without cookies), what an unsubscribe changes for later sends, refused tokens, the mailto
// form through the MX listener, a sender's own pair without one-click replaced, and a copy signed once across retries.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { eventually } from '../testkit/outbound.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { request, runCli, seedWorkspace } from '../testkit/app.ts';
import { readBoxSecret } from '../db/box-secret.ts';
import { column, get } from '../db/query.ts';
import { linkToken } from './link-token.ts';
import { personalCopy, signedCopy } from '../emails/outgoing.ts';

let s: InboundScene;
let otherKey: string;
let base: string;

test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  s.routeTo('dest.test');
  base = s.t.app.config.publicUrl.replace(/\/+$/, '');
  await marketingDomain('news.test', s.key);
  otherKey = (await seedWorkspace(s.t, { workspace: 'other' })).key;
  await marketingDomain('other.test', otherKey);
});
test.after(() => s.stop());

async function marketingDomain(name: string, key: string) {
  const d = await s.verifiedDomain(name, key);
  const res = await request(`${s.t.api}/domains/${d.id}`, { method: 'PATCH', body: { marketing: true }, key });
  assert.is(res.status, 200, JSON.stringify(res.body));
}

const send = (body: Record<string, unknown>, key = s.key) => request(`${s.t.api}/emails`, { body: { subject: 'News', html: '<p>Our news</p>', ...body }, key });
const events = async (id: string, key = s.key) => (await request(`${s.t.api}/emails/${id}/events`, { key })).body.data as Array<{ type: string; recipient: string; data: Record<string, unknown> }>;
const messagesOf = (subject: string) => s.sink.messages.filter((m) => m.raw.toString('latin1').includes(`\r\nSubject: ${subject}\r\n`));
const page = (token: string, method = 'GET', init: { body?: string; headers?: Record<string, string> } = {}) =>
  request(`${s.t.url}/unsubscribe/${token}`, { method, ...init });
const oneClick = (token: string) =>
  page(token, 'POST', { body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
const suppression = (workspace: string, email: string) =>
  s.t.app.store.read(
    get<{ scope: string; reason: string; origin: string; emailId: string }>(
      'SELECT scope, reason, origin, email_id AS emailId FROM suppressions s JOIN workspaces w ON w.id = s.workspace_id WHERE w.name = ? AND s.email = ?',
      workspace,
      email,
    ),
  );
const settle = () => new Promise((r) => setTimeout(r, 400));

/** A header's value as it arrived, unfolded (mailparser turns List-* headers into objects). */
function headerOf(raw: Buffer, name: string): string | undefined {
  const head = raw.toString('latin1').split('\r\n\r\n')[0].replace(/\r\n[ \t]+/g, ' ');
  return new RegExp(`^${name}: *(.*)$`, 'im').exec(head)?.[1];
}

/** Sends a marketing message and waits for the copy of each recipient; returns them with their unsubscribe tokens. */
async function marketing(subject: string, to: string[], opts: { from?: string; key?: string; headers?: Record<string, string> } = {}) {
  const res = await send({ from: opts.from ?? 'News <news@news.test>', to, subject, message_class: 'marketing', headers: opts.headers }, opts.key);
  assert.is(res.status, 200, JSON.stringify(res.body));
  await eventually(() => messagesOf(subject).flatMap((m) => m.rcptTo).length >= to.length, 10_000, `${subject} delivered to all`);
  const copies = await Promise.all(
    messagesOf(subject).map(async (m) => {
      const parsed = await simpleParser(m.raw);
      const list = headerOf(m.raw, 'List-Unsubscribe') ?? '';
      const token = /\/unsubscribe\/([0-9a-z-]+)>/.exec(list)?.[1] ?? '';
      return { m, parsed, list, token, post: headerOf(m.raw, 'List-Unsubscribe-Post') };
    }),
  );
  const of = (recipient: string) => copies.find((c) => c.m.rcptTo.includes(recipient))!;
  return { id: res.body.id as string, copies, of };
}

let first: Awaited<ReturnType<typeof marketing>>;

test('each recipient of a marketing message gets its own copy with both List-Unsubscribe headers inside its DKIM signature', async () => {
  first = await marketing('Spring sale', ['ann@dest.test', 'bob@dest.test']);
  assert.is(first.copies.length, 2, 'one transaction per recipient');
  for (const c of first.copies) {
    assert.is(c.m.rcptTo.length, 1);
    const token = c.token;
    assert.match(token, /^[0-9a-z]{26}-\d+-[0-9a-f]{20}$/);
    assert.is(c.list, `<${base}/unsubscribe/${token}>, <mailto:u-${token}@bounces.news.test?subject=unsubscribe>`);
    assert.is(c.post, 'List-Unsubscribe=One-Click');
    const dkim = await s.dkim(c.m.raw);
    assert.equal([dkim.status, dkim.signingDomain], ['pass', 'news.test']);
    assert.ok(dkim.signedHeaders.includes('list-unsubscribe'), `h= covers List-Unsubscribe: ${dkim.signedHeaders}`);
    assert.ok(dkim.signedHeaders.includes('list-unsubscribe-post'), `h= covers List-Unsubscribe-Post: ${dkim.signedHeaders}`);
    assert.match(c.parsed.text ?? '', /Our news/);
    // What went out is exactly what was signed and stored for that recipient, and the API serves it.
    const stored = await fetch(`${s.t.api}/emails/${first.id}/raw?recipient=${encodeURIComponent(c.m.rcptTo[0])}`, { headers: { Authorization: `Bearer ${s.key}` } });
    assert.is(stored.status, 200);
    assert.ok(Buffer.from(await stored.arrayBuffer()).equals(c.m.raw), 'the stored copy is the delivered one');
  }
  assert.is.not(first.of('ann@dest.test').token, first.of('bob@dest.test').token, 'each copy names its own recipient');
  const whole = await fetch(`${s.t.api}/emails/${first.id}/raw`, { headers: { Authorization: `Bearer ${s.key}` } });
  assert.is(whole.status, 409, 'no single message: the API asks which recipient');
  assert.is(((await whole.json()) as { error: { code: string } }).error.code, 'per_recipient_copies');
  const e = await eventually(async () => {
    const list = await events(first.id);
    return list.filter((x) => x.type === 'delivered').length === 2 && list;
  });
  assert.equal(e.filter((x) => x.type === 'delivered').map((x) => x.recipient).sort(), ['ann@dest.test', 'bob@dest.test']);

  // Transactional mail keeps one shared copy, with no unsubscribe headers.
  const res = await send({ from: 'news@news.test', to: ['ann@dest.test', 'bob@dest.test'], subject: 'Your receipt' });
  await eventually(() => messagesOf('Your receipt').length > 0);
  await settle();
  const [receipt] = messagesOf('Your receipt');
  assert.equal([messagesOf('Your receipt').length, receipt.rcptTo.sort()], [1, ['ann@dest.test', 'bob@dest.test']]);
  assert.not.match(receipt.raw.toString('latin1'), /List-Unsubscribe/i);
  assert.ok((await signedCopy(s.t.app.store, res.body.id))!.equals(receipt.raw));
});

test('GET and HEAD on the link show a page whose button POSTs; nobody is unsubscribed', async () => {
  const { token } = first.of('ann@dest.test');
  const res = await page(token);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
  assert.match(res.body, /ann@dest\.test/);
  assert.match(res.body, /news\.test/);
  assert.match(res.body, /<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe<\/button><\/form>/);
  assert.not.match(res.body, /<script/i);
  assert.match(res.headers.get('content-security-policy') ?? '', /form-action 'self'/);
  assert.is(res.headers.get('cache-control'), 'no-store');
  assert.is((await page(token, 'HEAD')).status, 200);
  assert.is(await suppression('default', 'ann@dest.test'), undefined, 'still subscribed after GET and HEAD');
  assert.not.ok((await events(first.id)).some((e) => e.type === 'unsubscribed'));
});

test('a one-click POST without cookies unsubscribes (200); marketing to the address is then blocked, transactional mail still delivered', async () => {
  const { token } = first.of('ann@dest.test');
  const res = await oneClick(token);
  assert.is(res.status, 200);
  assert.match(res.body, /You are unsubscribed/);
  assert.match(res.body, /ann@dest\.test/);
  assert.equal(await suppression('default', 'ann@dest.test'), { scope: 'marketing', reason: 'unsubscribe', origin: 'recipient', emailId: first.id });
  const unsubscribed = (await events(first.id)).filter((e) => e.type === 'unsubscribed');
  assert.equal(unsubscribed.map((e) => [e.recipient, e.data.via]), [['ann@dest.test', 'https']]);

  // Repeating it (the page's button, a multipart body, a cross-site origin) changes nothing more.
  const again = await page(token, 'POST', { body: '--x\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--x--\r\n', headers: { 'content-type': 'multipart/form-data; boundary=x', origin: 'https://elsewhere.invalid' } });
  assert.equal([again.status, /already unsubscribed/.test(again.body)], [200, true]);
  assert.is((await events(first.id)).filter((e) => e.type === 'unsubscribed').length, 1);
  assert.match((await page(token)).body, /already unsubscribed/);
  assert.not.match((await page(token)).body, /<form/);

  const blocked = await send({ from: 'news@news.test', to: ['ann@dest.test'], subject: 'Summer sale', message_class: 'marketing' });
  const blockedEvents = await eventually(async () => (await events(blocked.body.id)).find((e) => e.type === 'blocked'));
  assert.equal([blockedEvents.recipient, blockedEvents.data.reason], ['ann@dest.test', 'unsubscribe']);
  const receipt = await send({ from: 'news@news.test', to: ['ann@dest.test'], subject: 'Receipt 2' });
  await eventually(async () => (await events(receipt.body.id)).some((e) => e.type === 'delivered'));
  await settle();
  assert.is(messagesOf('Summer sale').length, 0, 'the marketing message went nowhere');
  assert.is((await request(`${s.t.api}/emails/${blocked.body.id}`, { key: s.key })).body.status, 'blocked');
  // Bob did nothing: still subscribed.
  assert.match((await page(first.of('bob@dest.test').token)).body, /<form method="post">/);
});

test('forged, altered and cross-workspace tokens get a 404 page and change nothing; a token acts only in its own workspace', async () => {
  const ours = await marketing('Autumn sale', ['carol@dest.test']);
  const theirs = await marketing('Their sale', ['carol@dest.test'], { from: 'shop@other.test', key: otherKey });
  const a = ours.of('carol@dest.test').token;
  const b = theirs.of('carol@dest.test').token;
  const [aEmail, aIndex, aMac] = a.split('-');
  const [bEmail] = b.split('-');
  const flip = (t: string) => t.slice(0, -1) + (t.endsWith('0') ? '1' : '0');
  const refused = [
    flip(a),
    `${bEmail}-${aIndex}-${aMac}`, // our MAC on their email
    `${aEmail}-1-${aMac}`, // another recipient position
    `${aEmail}-${aIndex}-0-${aMac}`, // shaped like a click token
    linkToken(await s.t.app.store.read(readBoxSecret()), 'open', { emailId: ours.id, recipient: 'carol@dest.test', index: 0 }), // signed, but for the open pixel
    linkToken(Buffer.alloc(32, 7), 'unsubscribe', { emailId: ours.id, recipient: 'carol@dest.test', index: 0 }), // another box's secret
    `${aEmail}-0${aIndex}-${aMac}`,
    'nonsense',
    `${a}x`,
    encodeURIComponent('<script>alert(1)</script>'),
    'x'.repeat(3000),
  ];
  for (const token of refused) {
    for (const method of ['GET', 'POST']) {
      const res = method === 'POST' ? await oneClick(token) : await page(token);
      assert.is(res.status, 404, `${method} ${token.slice(0, 60)}`);
      assert.match(res.headers.get('content-type') ?? '', /text\/html/);
      assert.match(res.body, /not valid/);
      assert.not.match(res.body, /<script|<form/i);
    }
  }
  assert.equal([await suppression('default', 'carol@dest.test'), await suppression('other', 'carol@dest.test')], [undefined, undefined], 'nothing changed');

  // Their valid token unsubscribes carol from their workspace's marketing only.
  assert.is((await oneClick(b)).status, 200);
  assert.is((await suppression('other', 'carol@dest.test'))?.reason, 'unsubscribe');
  assert.is(await suppression('default', 'carol@dest.test'), undefined);
  assert.not.ok((await events(ours.id)).some((e) => e.type === 'unsubscribed'));
  await marketing('Winter sale', ['carol@dest.test']);
  const blocked = await send({ from: 'shop@other.test', to: ['carol@dest.test'], subject: 'Their winter sale', message_class: 'marketing' }, otherKey);
  assert.ok(await eventually(async () => (await events(blocked.body.id, otherKey)).some((e) => e.type === 'blocked')));
});

test('deleting the sent email leaves its delivered unsubscribe links working', async () => {
  const sent = await marketing('Deleted later', ['dora@dest.test']);
  const token = sent.of('dora@dest.test').token;
  await eventually(async () => (await events(sent.id)).some((e) => e.type === 'delivered'));
  assert.is((await request(`${s.t.api}/emails/${sent.id}`, { method: 'DELETE', key: s.key })).status, 200);
  assert.is((await page(token)).status, 200, 'the page still shows');
  assert.is(await suppression('default', 'dora@dest.test'), undefined, 'a GET changed nothing');
  assert.is((await oneClick(token)).status, 200);
  assert.equal(await suppression('default', 'dora@dest.test'), { scope: 'marketing', reason: 'unsubscribe', origin: 'recipient', emailId: sent.id });
  assert.is((await oneClick(token.replace(/.$/, (c) => (c === '0' ? '1' : '0')))).status, 404, 'an altered token is still refused');
});

test('mail to the mailto address unsubscribes that recipient; a forged address is refused at RCPT', async () => {
  const sale = await marketing('Mailto sale', ['dave@dest.test']);
  const address = /<mailto:([^?>]+)\?subject=unsubscribe>/.exec(sale.of('dave@dest.test').list)![1];
  const note = 'From: dave@dest.test\r\nTo: unsubscribe\r\nSubject: unsubscribe\r\nMessage-ID: <u1@dest.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\nunsubscribe\r\n';
  const forged = address.replace(/[0-9a-f]@/, (c) => `${c[0] === '0' ? '1' : '0'}@`);
  const refused = await s.deliver(note, { from: 'dave@dest.test', to: [forged] });
  assert.is(refused.code, 550);
  assert.match(refused.text, /^5\.1\.1 /);
  assert.is(await suppression('default', 'dave@dest.test'), undefined);

  const reply = await s.deliver(note, { from: 'dave@dest.test', to: [address.toUpperCase()] });
  assert.is(reply.code, 250, reply.text);
  assert.equal(await suppression('default', 'dave@dest.test'), { scope: 'marketing', reason: 'unsubscribe', origin: 'recipient', emailId: sale.id });
  assert.equal((await events(sale.id)).filter((e) => e.type === 'unsubscribed').map((e) => e.data.via), ['mailto']);
  assert.is((await s.stored('e.message_id = ?', 'u1@dest.test')).length, 0, 'the request is not kept as mail');
});

test("a sender's own List-Unsubscribe without a one-click HTTPS URL is replaced by the box's (own-unsubscribe.test.ts: when one stands)", async () => {
  const replaced = await marketing('Mailto only', ['erin@dest.test'], { headers: { 'List-Unsubscribe': '<mailto:leave@lists.example>' } });
  const copy = replaced.of('erin@dest.test');
  assert.match(copy.list, new RegExp(`^<${base.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/unsubscribe/[0-9a-z-]+>, <mailto:u-`));
  assert.is(copy.post, 'List-Unsubscribe=One-Click');
  assert.is(copy.m.raw.toString('latin1').match(/^List-Unsubscribe:/gim)?.length, 1, 'one List-Unsubscribe header');
});

test('a copy is signed once: a deferred recipient gets the very same bytes when it is retried', async () => {
  s.sink.replyTo('later@dest.test', { code: 451, message: '4.2.0 try again later' });
  const res = await send({ from: 'news@news.test', to: ['later@dest.test'], subject: 'Later sale', message_class: 'marketing' });
  await eventually(async () => (await events(res.body.id)).some((e) => e.type === 'delivery_delayed'));
  const copies = () => s.t.app.store.read(column<number>('SELECT c.delivery_id FROM delivery_contents c JOIN deliveries d ON d.id = c.delivery_id WHERE d.email_id = ?', res.body.id));
  const stored = await copies();
  const signed = stored.length ? await personalCopy(s.t.app.store, stored[0]) : null;
  assert.ok(signed, 'signed and stored before the first attempt');
  s.sink.replyTo('later@dest.test', { code: 250 });
  await runCli(['queue', 'flush'], s.t.env);
  await eventually(() => messagesOf('Later sale').length > 0);
  assert.ok(messagesOf('Later sale')[0].raw.equals(signed), 'the retry transmitted the stored bytes');
  assert.is((await copies()).length, 1);
});

test.run();
