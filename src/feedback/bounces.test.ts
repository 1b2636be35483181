// Bounces and complaints end to end: mail sent through the real API is delivered to the test kit's sink,
// then a DSN (RFC 3464) or an ARF complaint (RFC 5965) comes back over real SMTP to the VERP address the sink
// saw as MAIL FROM. Asserts what the owner sees: the email's events and status, the suppression list, and
// that a later send to a suppressed address is blocked without reaching the sink. Also the queue's own
// synchronous hard bounces, and hostile reports that must change nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, seedWorkspace } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { isHardBounce } from './bounces.ts';
import { arfReport as arf, dsnReport as dsn } from '../testkit/reports.ts';
import { get, value } from '../db/query.ts';

let s: InboundScene;
test.before(async () => {
  s = await startInboundScene();
  // A sending domain with no inbound setup: its bounce subdomain still receives reports.
  await s.verifiedDomain('shop.example');
  s.routeTo('dest.example');
});
test.after(() => s.stop());

interface Sent {
  id: string;
  messageId: string;
  /** The return path the recipients' MX saw: where a real DSN would go. */
  verp: string;
}

async function sendAndDeliver(to: string[], subject: string): Promise<Sent> {
  const res = await s.send({ from: 'News <news@shop.example>', to, subject, text: 'Hello from the shop.' });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const messageId = res.body.providerMessageId as string;
  const m = await eventually(() => s.sink.messages.find((x) => x.raw.includes(messageId)), 10_000, `delivery of ${subject}`);
  await eventually(async () => (await s.events(res.body.id)).filter((e) => e.type === 'delivered').length === to.length, 10_000, `delivered events of ${subject}`);
  return { id: res.body.id, messageId, verp: m.mailFrom };
}

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const suppression = async (email: string) => {
  const r = await api(`/suppressions/${encodeURIComponent(email)}`);
  return r.status === 200 ? r.body : null;
};
const status = async (id: string) => (await api(`/emails/${id}`)).body.status as string;
const eventsOf = async (id: string, type: string) => (await s.events(id)).filter((e) => e.type === type);

async function report(sent: Sent, raw: string): Promise<void> {
  const reply = await s.deliver(raw, { from: '', to: [sent.verp], helo: 'mx.dest.example' });
  assert.is(reply.code, 250, reply.text);
  assert.match(reply.text, /queued as rpt_/);
}

test('a DSN at the VERP address bounces the named recipient of that email, suppresses it, and a later send is blocked until the owner removes it', async () => {
  const first = await sendAndDeliver(['bob@dest.example', 'carol@dest.example'], 'Spring sale');
  const other = await sendAndDeliver(['bob@dest.example'], 'Another email to bob');

  await report(first, dsn(first, [{ recipient: 'bob@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 <bob@dest.example>: Recipient address rejected:\r\n    User unknown in local recipient table' }]));

  const [bounced, ...more] = await eventsOf(first.id, 'bounced');
  assert.is(more.length, 0, 'one bounce, for bob only');
  assert.is(bounced.recipient, 'bob@dest.example');
  assert.equal(bounced.data, {
    status: '5.1.1',
    diagnostic: '550 5.1.1 <bob@dest.example>: Recipient address rejected: User unknown in local recipient table',
    remoteMta: 'store.dest.example',
    reportingMta: 'mx.dest.example',
    async: true,
    hardBounce: true,
  });
  assert.is(await status(first.id), 'delivered', 'carol still got it');
  assert.is((await eventsOf(other.id, 'bounced')).length, 0, 'the other email to bob is not the one the report is about');
  assert.is(await status(other.id), 'delivered');

  const entry = await suppression('bob@dest.example');
  assert.equal({ ...entry, createdAt: typeof entry.createdAt }, {
    email: 'bob@dest.example',
    scope: 'all',
    reason: 'hard_bounce',
    origin: 'recipient',
    emailId: first.id,
    detail: entry.detail,
    createdAt: 'string',
  });
  assert.match(entry.detail, /^5\.1\.1 550 5\.1\.1 .*User unknown/);
  assert.is(await suppression('carol@dest.example'), null);

  // A later send: accepted, blocked, never at the sink.
  const blocked = await s.send({ from: 'news@shop.example', to: ['BOB@dest.example'], subject: 'Summer sale', text: 'x' });
  assert.is(blocked.status, 200);
  const [event] = await eventsOf(blocked.body.id, 'blocked');
  assert.is(event.recipient, 'BOB@dest.example');
  assert.is(event.data.reason, 'hard_bounce');
  assert.is(await status(blocked.body.id), 'blocked');
  // The owner removes the entry; the next send goes out. Its delivery also shows the blocked one never left.
  const listed = await api('/suppressions');
  assert.ok(listed.body.data.some((e: { email: string }) => e.email === 'bob@dest.example'));
  assert.equal((await api('/suppressions/bob@dest.example', { method: 'DELETE' })).body, { ok: true });
  assert.is(await suppression('bob@dest.example'), null);
  const again = await sendAndDeliver(['bob@dest.example'], 'Autumn sale');
  assert.is(await status(again.id), 'delivered');
  assert.not.ok(s.sink.messages.some((m) => m.raw.includes(blocked.body.providerMessageId)), 'the blocked email never reached the sink');
});

test('a soft DSN (mailbox full) bounces the email but suppresses nothing; a delay notice is one delivery_delayed, however often it comes', async () => {
  const sent = await sendAndDeliver(['dora@dest.example'], 'Full mailbox');
  const delayed = dsn(sent, [{ recipient: 'dora@dest.example', action: 'delayed', status: '4.2.2', diagnostic: '452 4.2.2 Mailbox full' }]);
  await report(sent, delayed);
  await report(sent, delayed);
  const delays = await eventsOf(sent.id, 'delivery_delayed');
  assert.is(delays.length, 1);
  assert.is(delays[0].data.async, true);
  assert.is(await status(sent.id), 'delivered', 'a delay notice does not undo the delivery');

  const failed = dsn(sent, [{ recipient: 'dora@dest.example', action: 'failed', status: '5.2.2', diagnostic: '552 5.2.2 Mailbox full' }]);
  await report(sent, failed);
  await report(sent, failed); // an MTA retrying after a timeout
  const bounces = await eventsOf(sent.id, 'bounced');
  assert.is(bounces.length, 1, 'the same DSN twice is one bounce');
  assert.is(bounces[0].data.hardBounce, false);
  assert.is(await status(sent.id), 'bounced', 'the only recipient bounced after delivery (asynchronous bounce)');
  assert.is(await suppression('dora@dest.example'), null, 'a full mailbox is not a bad address');
});

test('an ARF complaint marks the recipient complained and suppresses it (the only recipient, or the one Original-Rcpt-To names)', async () => {
  const single = await sendAndDeliver(['erin@dest.example'], 'Weekly news');
  await report(single, arf(single));
  const [complaint] = await eventsOf(single.id, 'complained');
  assert.is(complaint.recipient, 'erin@dest.example');
  assert.equal(complaint.data, { feedbackType: 'abuse', userAgent: 'DestFBL/1.0', sourceIp: '127.0.0.1', arrivalDate: 'Sat, 21 Nov 2026 10:00:00 +0000' });
  const entry = await suppression('erin@dest.example');
  assert.equal([entry.reason, entry.origin, entry.scope, entry.emailId], ['complaint', 'recipient', 'all', single.id]);
  assert.match(entry.detail, /abuse/);

  const pair = await sendAndDeliver(['fred@dest.example', 'gina@dest.example'], 'Weekly news 2');
  await report(pair, arf(pair, { originalRcptTo: 'gina@dest.example' }));
  assert.equal((await eventsOf(pair.id, 'complained')).map((e) => e.recipient), ['gina@dest.example']);
  assert.ok(await suppression('gina@dest.example'));
  assert.is(await suppression('fred@dest.example'), null);

  // A complained address is blocked like a bounced one.
  const blocked = await s.send({ from: 'news@shop.example', to: ['erin@dest.example'], subject: 'More news', text: 'x' });
  assert.is(blocked.status, 200);
  assert.is((await eventsOf(blocked.body.id, 'blocked'))[0]?.data.reason, 'complaint');
  assert.is(await status(blocked.body.id), 'blocked');
});

test('reports that cannot be pinned on a recipient of that email change nothing', async () => {
  const pair = await sendAndDeliver(['hank@dest.example', 'ivy@dest.example'], 'Two recipients');
  // A DSN and a complaint naming someone the email was never sent to.
  await report(pair, dsn(pair, [{ recipient: 'mallory@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 unknown' }]));
  await report(pair, arf(pair, { originalRcptTo: 'mallory@dest.example' }));
  // A complaint with the recipient redacted, about an email with two recipients: it cannot tell which.
  await report(pair, arf(pair, { to: 'hank@dest.example, ivy@dest.example' }));
  // Not a complaint at all.
  await report(pair, arf(pair, { feedbackType: 'not-spam', originalRcptTo: 'hank@dest.example' }));
  // A bounce in plain text, not RFC 3464 (qmail style): kept, ignored.
  await report(pair, `From: MAILER-DAEMON@dest.example\r\nTo: <${pair.verp}>\r\nSubject: failure notice\r\n\r\n<hank@dest.example>:\r\nSorry, no mailbox here by that name. (#5.1.1)\r\n`);

  const types = (await s.events(pair.id)).map((e) => e.type);
  assert.equal(types.filter((t) => t !== 'sent' && t !== 'delivered'), []);
  assert.is(await status(pair.id), 'delivered');
  for (const a of ['hank@dest.example', 'ivy@dest.example', 'mallory@dest.example']) assert.is(await suppression(a), null, a);
  const reports = await s.t.app.store.read(get('SELECT count(*) AS kept, count(processed_at) AS processed FROM inbound_reports WHERE email_id = ?', pair.id));
  assert.equal(reports, { kept: 5, processed: 5 }, 'every report is kept and marked processed');
});

test('hostile reports: malformed parts, a huge DSN, binary junk: 250, kept, nothing wrongly changed, and the box still works', async () => {
  const sent = await sendAndDeliver(['jack@dest.example'], 'Hostile');
  const broken = dsn(sent, [{ recipient: 'jack@dest.example', action: 'failed', status: '5.1.1' }])
    .replace('Action: failed\r\n', '') // a block without an Action is not a recipient block
    .replace(/--dsn-\d+--\r\n$/, ''); // and no closing boundary
  await report(sent, broken);
  await report(sent, `From: x@dest.example\r\nTo: <${sent.verp}>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\n\u00ff\u00fe\u0001\u0002:::;;;\r\n\r\nAction\r\n: failed\r\n--b--\r\n`);
  // 20,000 recipient blocks, none for jack but the very last: only the first blocks are read.
  const junk = Array.from({ length: 20_000 }, (_, i) => ({ recipient: `x${i}@dest.example`, action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 unknown' }));
  const started = Date.now();
  await report(sent, dsn(sent, [...junk, { recipient: 'jack@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 unknown' }]));
  assert.ok(Date.now() - started < 20_000, 'a huge report is read in bounded time');

  assert.is((await eventsOf(sent.id, 'bounced')).length, 0);
  assert.is(await status(sent.id), 'delivered');
  assert.is(await suppression('jack@dest.example'), null);
  assert.is(await suppression('x1@dest.example'), null, 'addresses the email was never sent to');
  const kept = await s.t.app.store.read(value<number>('SELECT count(*) FROM inbound_reports WHERE email_id = ? AND processed_at IS NOT NULL', sent.id));
  assert.is(kept, 3);
  assert.equal(s.t.logs.filter((l) => l.includes('"level":"error"')), [], 'no fault of ours');
  // A forged VERP address (another MAC) is refused at RCPT, so no report reaches another email.
  const forged = sent.verp.replace(/-[0-9a-f]{12}@/, '-0123456789ab@');
  assert.is((await s.deliver(dsn(sent, [{ recipient: 'jack@dest.example', action: 'failed', status: '5.1.1' }]), { from: '', to: [forged] })).code, 550);
});

test('a bounce of another workspace\'s email suppresses in that workspace only', async () => {
  // A second workspace, with its own key and verified domain.
  const b = await seedWorkspace(s.t, { workspace: 'second' });
  await s.verifiedDomain('second-shop.example', b.key);
  const res = await request(`${s.t.api}/emails`, { key: b.key, body: { from: 'hi@second-shop.example', to: ['kim@dest.example'], subject: 'From B', text: 'x' } });
  assert.is(res.status, 200);
  const m = await eventually(() => s.sink.messages.find((x) => x.raw.includes(res.body.providerMessageId)));
  await eventually(async () => (await request(`${s.t.api}/emails/${res.body.id}/events`, { key: b.key })).body.data.some((e: { type: string }) => e.type === 'delivered'));
  const sent = { id: res.body.id, messageId: res.body.providerMessageId, verp: m.mailFrom };
  await report(sent, dsn(sent, [{ recipient: 'kim@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 unknown user' }]));

  assert.is((await request(`${s.t.api}/suppressions/kim@dest.example`, { key: b.key })).body.reason, 'hard_bounce');
  assert.is(await suppression('kim@dest.example'), null, 'the first workspace is not affected');
  const fromA = await sendAndDeliver(['kim@dest.example'], 'From A to kim');
  assert.is(await status(fromA.id), 'delivered');
});

test('the queue\'s own permanent refusals: a bad address is suppressed, a policy refusal is not', async () => {
  s.sink.replyTo('gone@dest.example', { code: 550, message: '5.1.1 <gone@dest.example>: No such user here' });
  s.sink.replyTo('old@dest.example', { code: 550, message: 'User unknown' });
  s.sink.replyTo('picky@dest.example', { code: 550, message: '5.7.1 Message rejected as spam by content filter' });
  const res = await s.send({ from: 'news@shop.example', to: ['gone@dest.example', 'old@dest.example', 'picky@dest.example'], subject: 'Refused', text: 'x' });
  assert.is(res.status, 200);
  const bounced = await eventually(async () => {
    const e = await eventsOf(res.body.id, 'bounced');
    return e.length === 3 && e;
  });
  const hard = Object.fromEntries(bounced.map((e) => [e.recipient, e.data.hardBounce]));
  assert.equal(hard, { 'gone@dest.example': true, 'old@dest.example': true, 'picky@dest.example': false });
  assert.is((await suppression('gone@dest.example')).reason, 'hard_bounce');
  assert.is((await suppression('gone@dest.example')).emailId, res.body.id);
  assert.match((await suppression('old@dest.example')).detail, /User unknown/);
  assert.is(await suppression('picky@dest.example'), null);

  const next = await s.send({ from: 'news@shop.example', to: ['gone@dest.example'], subject: 'Refused again', text: 'x' });
  assert.is(next.status, 200);
  assert.is(await status(next.body.id), 'blocked');
});

test('hard-bounce rule: bad-address codes and address wording suppress; the sender, policy, content, size and full mailboxes do not', () => {
  const hard = (code: number | null, enhanced: string | null, response = '') => isHardBounce({ code, enhanced, response });
  for (const e of ['5.1.1', '5.1.2', '5.1.3', '5.1.6', '5.1.10', '5.2.1']) assert.ok(hard(550, e), e);
  for (const e of ['5.7.1', '5.7.26', '5.3.4', '5.2.2', '5.1.7', '5.1.8', '5.4.4', '4.2.2']) assert.not.ok(hard(550, e, 'user unknown'), e);
  assert.ok(hard(550, null, '550 No such user here'));
  assert.ok(hard(553, null, '553 sorry, mailbox name not allowed: recipient address invalid'));
  assert.ok(hard(550, '5.0.0', '550 5.0.0 Recipient does not exist'), 'the catch-all code falls back to the wording');
  assert.not.ok(hard(550, null, '550 Mailbox unavailable'), 'RFC 5321 says 550 for policy refusals too');
  assert.not.ok(hard(550, null, '550 Sender address rejected: user unknown'), 'about our sender, not the recipient');
  assert.not.ok(hard(554, null, '554 no such user'), 'only 550, 551 and 553 name the recipient');
  assert.not.ok(hard(null, null, 'connection refused'));
});

test.run();
