// Delivery status where people look, over real SMTP: mail sent with the dashboard's session to recipients the
// test kit's sink refuses (550), defers (451) or takes, and complaints and late bounces arriving at the VERP
// address. Asserts what the owner reads: each recipient's state on the email record and the list's summary,
// and the notice in the sender's mailbox (threaded with the original, never sent, never counted); an API
// key's send gets none.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { login, request } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { arfReport, dsnReport } from '../testkit/reports.ts';

let s: InboundScene;
let cookie: string;
test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  // in.example has the inbox hello@in.example; shop.example sends but has no inbox.
  await s.verifiedDomain('shop.example');
  s.routeTo('dest.example');
  s.sink.replyTo('nobody@dest.example', { code: 550, message: '5.1.1 <nobody@dest.example>: Recipient address rejected: User unknown in local recipient table' });
  s.sink.replyTo('gone@dest.example', { code: 550, message: '5.1.1 <gone@dest.example>: User unknown' });
  s.sink.replyTo('slow@dest.example', { code: 451, message: '4.2.0 Mailbox busy, try again later' });
  cookie = await login(s.t, s.email);
});
test.after(() => s.stop());

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const email = async (id: string) => (await api(`/emails/${id}`)).body;
/** Received mail of the workspace in one thread: the notices about a sent email. */
const noticesIn = async (threadId: string) => ((await api(`/threads/${threadId}`)).body.data ?? []).filter((m: { direction: string }) => m.direction === 'in');
const received = async () => (await api('/analytics?days=7')).body.metrics.received as number;

async function sendAsOwner(body: Record<string, unknown>) {
  const res = await request(`${s.t.api}/emails`, { cookie, body });
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body as { id: string; threadId: string; providerMessageId: string };
}

test('a bounced send: the recipient reads bounced with the remote reply, and a notice threads with it in the sender inbox', async () => {
  const before = await received();
  const sent = await sendAsOwner({ from: 'Hello <hello@in.example>', to: ['nobody@dest.example', 'friend@dest.example'], subject: 'Lunch on Friday', text: 'Are you in?' });
  const e = await eventually(async () => {
    const r = await email(sent.id);
    return r.recipients.every((x: { state: string }) => x.state === 'bounced' || x.state === 'delivered') && r;
  }, 15_000, 'both recipients final');
  assert.is(e.sentBy, 'dashboard');
  const nobody = e.recipients.find((r: { email: string }) => r.email === 'nobody@dest.example');
  assert.equal([nobody.state, nobody.detail.code, nobody.detail.reason, nobody.detail.attempts], ['bounced', 550, 'hard_bounce', 1]);
  assert.match(nobody.detail.response, /^550 5\.1\.1 <nobody@dest\.example>: Recipient address rejected: User unknown/);
  const friend = e.recipients.find((r: { email: string }) => r.email === 'friend@dest.example');
  assert.equal([friend.state, friend.detail.code], ['delivered', 250]);
  assert.equal(e.delivery, { state: 'bounced', counts: { bounced: 1, delivered: 1 } });
  assert.is(e.status, 'delivered', 'DESIGN.md status unchanged: delivered once any recipient got it');

  const row = (await api('/emails?direction=out')).body.data.find((x: { id: string }) => x.id === sent.id);
  assert.equal(row.delivery, { state: 'bounced', counts: { bounced: 1, delivered: 1 } });

  const [notice, ...more] = await eventually(async () => {
    const n = await noticesIn(sent.threadId);
    return n.length > 0 && n;
  }, 5_000, 'the notice');
  assert.is(more.length, 0, 'one notice: friend got the message');
  assert.equal(notice.from, { name: 'Mail Delivery Subsystem', address: 'mailer-daemon@mx.mailwright.test' });
  assert.equal([notice.subject, notice.inboxId, notice.inReplyTo, notice.category, notice.readAt], ['Delivery Status Notification (Failure)', s.inbox.id, sent.providerMessageId.slice(1, -1), 'primary', null]);
  assert.equal([notice.recipients, notice.delivery], [null, null]);
  assert.match(notice.text, /^Address not found\n/);
  assert.match(notice.text, /wasn't delivered to nobody@dest\.example/);
  assert.match(notice.text, /550 5\.1\.1 <nobody@dest\.example>: Recipient address rejected/);
  assert.match(notice.text, /suppression list/);
  assert.match(notice.text, /Subject: Lunch on Friday/);
  // In the Inbox, unread, and its bytes are a real message threaded by its headers.
  const inbox = (await api(`/emails?archived=false&inbox_id=${s.inbox.id}`)).body.data;
  assert.ok(inbox.some((m: { id: string }) => m.id === notice.id), 'in the Inbox view');
  const raw = await request(`${s.t.api}/emails/${notice.id}/raw`, { key: s.key });
  assert.is(raw.status, 200);
  const parsed = await simpleParser(Buffer.from(raw.body as string));
  assert.equal([parsed.inReplyTo, parsed.headers.get('auto-submitted'), parsed.subject], [sent.providerMessageId, 'auto-generated', 'Delivery Status Notification (Failure)']);
  // Never sent over the Internet, never counted: the sink saw only the original, analytics no received mail.
  assert.not.ok(s.sink.messages.some((m) => m.rcptTo.includes('hello@in.example')), 'nothing went to the sender over SMTP');
  assert.is((await api(`/emails/${notice.id}/events`)).body.count, 0, 'no received event');
  assert.is(await received(), before);
  assert.equal((await api(`/threads/${sent.threadId}`)).body.data.map((m: { id: string }) => m.id), [sent.id, notice.id]);
});

test('a deferred recipient reads delayed with the next attempt and the last answer; no notice for a delay', async () => {
  const sent = await sendAsOwner({ from: 'hello@in.example', to: ['slow@dest.example'], subject: 'Busy mailbox', text: 'Later is fine.' });
  const e = await eventually(async () => {
    const r = await email(sent.id);
    return r.recipients[0]?.state === 'delayed' && r;
  }, 15_000, 'the deferral');
  const [slow] = e.recipients;
  assert.equal([slow.email, slow.detail.code, slow.detail.attempts, slow.detail.response], ['slow@dest.example', 451, 1, '451 4.2.0 Mailbox busy, try again later']);
  const wait = Date.parse(slow.detail.nextAttemptAt) - Date.parse(slow.at);
  assert.ok(wait >= 9 * 60_000 && wait <= 11 * 60_000, `the next attempt 10 minutes after the last: ${wait} ms`);
  assert.equal([e.status, e.delivery], ['delivery_delayed', { state: 'delayed', counts: { delayed: 1 } }]);
  assert.equal(await noticesIn(sent.threadId), []);
});

test('an API key send that bounces gets its events and no notice', async () => {
  const sent = (await s.send({ from: 'hello@in.example', to: ['gone@dest.example'], subject: 'From the app', text: 'x' })).body;
  const e = await eventually(async () => {
    const r = await email(sent.id);
    return r.recipients[0]?.state === 'bounced' && r;
  }, 15_000, 'the bounce');
  assert.is(e.sentBy, 'api');
  assert.is((await s.events(sent.id)).filter((x) => x.type === 'bounced').length, 1);
  assert.equal(await noticesIn(sent.threadId), []);
});

test('a send to a suppressed address reads "suppressed" with the reason; no notice, nothing delivered', async () => {
  const sent = await sendAsOwner({ from: 'hello@in.example', to: ['nobody@dest.example'], subject: 'Again', text: 'x' });
  const e = await email(sent.id);
  assert.equal(e.recipients.map((r: { state: string; detail: { reason: string } }) => [r.state, r.detail.reason]), [['suppressed', 'hard_bounce']]);
  assert.equal([e.status, e.delivery.state], ['blocked', 'suppressed']);
  assert.equal(await noticesIn(sent.threadId), []);
});

test('a complaint and a late bounce at the VERP address: each recipient reads so, one notice each, once however often reported', async () => {
  const sent = await sendAsOwner({ from: 'Shop <news@shop.example>', to: ['carol@dest.example', 'dave@dest.example'], subject: 'Spring sale', text: 'Everything must go.' });
  const m = await eventually(() => s.sink.messages.find((x) => x.raw.includes(sent.providerMessageId)), 10_000, 'the delivery');
  await eventually(async () => (await email(sent.id)).delivery?.state === 'delivered', 10_000, 'delivered');
  const sentInfo = { verp: m.mailFrom, messageId: sent.providerMessageId };
  const arf = arfReport(sentInfo, { originalRcptTo: 'carol@dest.example' });
  for (let i = 0; i < 2; i++) assert.is((await s.deliver(arf, { from: '', to: [m.mailFrom], helo: 'mx.dest.example' })).code, 250);
  const dsn = dsnReport(sentInfo, [{ recipient: 'dave@dest.example', action: 'failed', status: '5.2.2', diagnostic: '552 5.2.2 Mailbox full' }]);
  assert.is((await s.deliver(dsn, { from: '', to: [m.mailFrom], helo: 'mx.dest.example' })).code, 250);

  const e = await email(sent.id);
  const states = Object.fromEntries(e.recipients.map((r: { email: string; state: string; detail: { reason: string | null; response: string } }) => [r.email, [r.state, r.detail.reason, r.detail.response]]));
  assert.equal(states['carol@dest.example'].slice(0, 2), ['complained', 'abuse']);
  assert.equal(states['dave@dest.example'], ['bounced', null, '552 5.2.2 Mailbox full']);
  assert.equal(e.delivery, { state: 'complained', counts: { complained: 1, bounced: 1 } });

  const notices = await noticesIn(sent.threadId);
  assert.equal(notices.map((n: { subject: string }) => n.subject).sort(), ['Delivery Status Notification (Failure)', 'Your message was marked as spam']);
  const spam = notices.find((n: { subject: string }) => n.subject.includes('spam'));
  assert.match(spam.text, /carol@dest\.example reported your message as spam/);
  const late = notices.find((n: { subject: string }) => n.subject.includes('Failure'));
  assert.match(late.text, /accepted your message, then reported that it could not deliver it/);
  assert.match(late.text, /552 5\.2\.2 Mailbox full/);
  // shop.example has no inbox: the notices are in the workspace's mailbox, in the Inbox view.
  assert.equal(notices.map((n: { inboxId: string | null }) => n.inboxId), [null, null]);
  const inbox = (await api('/emails?archived=false&category=primary')).body.data.map((x: { id: string }) => x.id);
  for (const n of notices) assert.ok(inbox.includes(n.id), 'in the Inbox');
});

test('a draft sent from the dashboard is recorded as sent from the dashboard', async () => {
  const draft = await request(`${s.t.api}/drafts`, { cookie, body: { from: 'hello@in.example', to: ['friend@dest.example'], subject: 'From a draft', text: 'x' } });
  assert.is(draft.status, 201, JSON.stringify(draft.body));
  const sent = await request(`${s.t.api}/drafts/${draft.body.id}/send`, { cookie, body: {} });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  assert.is((await email(sent.body.id)).sentBy, 'dashboard');
});

test.run();
