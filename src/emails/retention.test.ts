// Retention over real SMTP and HTTP with the box's clock moved forward: raw bytes go (410 raw_expired) while
// the text stays searchable, events go, then whole emails go and search no longer finds them; mail the queue
// still holds is never touched.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { runRetention } from './retention.ts';

let s: InboundScene;
let offset = 0;
const clock = { now: () => Date.now() + offset };
const api = (path: string) => request(`${s.t.api}${path}`, { key: s.key });
const DAY = 24 * 3600_000;

test.before(async () => {
  // The queue may try the deferred mail again once the clock has moved 40 days: a lifetime longer than that keeps
  // it queued (else it fails, leaves the queue, and retention rightly takes it).
  s = await startInboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m', MAILWRIGHT_QUEUE_LIFETIME: '365d' }, clock });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
  s.routeTo('nowhere.test', '127.0.0.9'); // nothing listens: mail to it stays deferred
});
test.after(() => s.stop());

test('raw bytes, then events, then whole emails go after their days; queued mail stays', async () => {
  for (const n of [1, 2]) {
    assert.is((await s.deliver(`From: a@sender.example\nTo: ${s.inbox.address}\nSubject: Ancient zebra report ${n}\nMessage-ID: <zebra${n}@sender.example>\n\nzebra stripes\n`, {})).code, 250);
  }
  const sent = (await s.send({ from: 'app@sender.test', to: ['one@dest.test'], subject: 'zebra out', text: 'x' })).body.id;
  const stuck = (await s.send({ from: 'app@sender.test', to: ['one@nowhere.test'], subject: 'zebra stuck', text: 'x' })).body.id;
  await eventually(async () => (await api(`/emails/${sent}`)).body.status === 'delivered', 10_000, 'the send delivered');
  await eventually(async () => (await api(`/emails/${stuck}/events`)).body.data.some((e: { type: string }) => e.type === 'delivery_delayed'), 10_000, 'the other deferred');
  const received = (await api('/emails?direction=in')).body.data.map((e: { id: string }) => e.id) as string[];
  assert.is((await api('/emails?query=zebra')).body.count, 4);
  assert.is((await api(`/emails/${received[0]}/raw`)).status, 200);

  offset += 40 * DAY;
  const raw = await runRetention(s.t.app, { mailDays: 0, rawDays: 10, eventsDays: 0 });
  assert.equal(raw, { emails: 0, raw: 3, events: 0, trash: 0 }, 'two received and one delivered; not the queued one');
  const expired = await api(`/emails/${received[0]}/raw`);
  assert.equal([expired.status, expired.body.error.code], [410, 'raw_expired']);
  assert.is((await api(`/emails/${sent}/raw`)).status, 410);
  assert.is((await api(`/emails/${stuck}/raw`)).status, 200, 'still needed for its next attempt');
  assert.match((await api(`/emails/${received[0]}`)).body.text, /zebra stripes/, 'the text stays');
  assert.is((await api('/emails?query=zebra')).body.count, 4, 'and stays searchable');

  const events = await runRetention(s.t.app, { mailDays: 0, rawDays: 0, eventsDays: 10 });
  assert.ok(events.events >= 5, JSON.stringify(events));
  assert.is((await api(`/emails/${sent}/events`)).body.count, 0);

  const before = (await api('/labels')).body.mailbox.inboxUnread;
  assert.is(before, 2);
  const mail = await runRetention(s.t.app, { mailDays: 30, rawDays: 0, eventsDays: 0 });
  assert.is(mail.emails, 3);
  assert.is((await api(`/emails/${received[0]}`)).status, 404);
  assert.equal((await api('/emails?query=zebra')).body.data.map((e: { id: string }) => e.id), [stuck], 'search no longer finds them');
  assert.is((await api('/labels')).body.mailbox.inboxUnread, 0, 'the counts follow');
  assert.equal(await runRetention(s.t.app, { mailDays: 30, rawDays: 10, eventsDays: 10 }), { emails: 0, raw: 0, events: 0, trash: 0 }, 'nothing left to do');
});

test.run();
