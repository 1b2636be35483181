// The free-space margin over real SMTP and HTTP: with the measure below min_free_space_mb, inbound mail gets
// 452 4.3.1 at MAIL, sends and uploads get 507 insufficient_storage, and nothing is stored; once space is
// back (the next look, within seconds) both are accepted again without a restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { request, sqliteOnly, TEST_STORE } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';

const MiB = 1024 * 1024;
let free = 10_000 * MiB;
let s: InboundScene;

test.before(async () => {
  if (TEST_STORE !== 'sqlite') return; // the free-space watch is of SQLite's data directory
  s = await startInboundScene({ env: { MAILWRIGHT_MIN_FREE_SPACE_MB: '100' }, measureFreeSpace: () => free });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(() => s?.stop());

const emails = () => Number(s.t.app.db.prepare('SELECT count(*) FROM emails').pluck().get());

sqliteOnly(test)('below the margin: 452 at MAIL, 507 on sends and uploads, nothing stored; above it again: accepted', async () => {
  free = 50 * MiB;
  await eventually(() => s.t.app.disk?.low === true, 8_000, 'the low space noticed');
  const before = emails();
  const c = await RawSmtp.open(s.t.smtpPort);
  await c.read();
  await c.command('EHLO client.example');
  const mail = await c.command('MAIL FROM:<a@sender.example>');
  assert.equal([mail.code, mail.text.startsWith('4.3.1')], [452, true], JSON.stringify(mail));
  await c.command('QUIT').catch(() => undefined);
  c.close();
  const send = await s.send({ from: 'app@sender.test', to: ['x@dest.test'], subject: 's', text: 't' });
  assert.equal([send.status, send.body.error.code, send.headers.get('retry-after')], [507, 'insufficient_storage', '60']);
  const batch = await request(`${s.t.api}/emails/batch`, { key: s.key, body: { emails: [{ from: 'app@sender.test', to: ['x@dest.test'], subject: 's', text: 't' }] } });
  assert.is(batch.status, 507);
  const draft = (await request(`${s.t.api}/drafts`, { key: s.key, body: {} })).body.id;
  const upload = await fetch(`${s.t.api}/drafts/${draft}/attachments`, { method: 'POST', headers: { authorization: `Bearer ${s.key}`, 'content-type': 'text/plain' }, body: 'x' });
  assert.is(upload.status, 507);
  assert.is(emails(), before, 'nothing stored');

  free = 10_000 * MiB;
  await eventually(() => s.t.app.disk?.low === false, 8_000, 'the space noticed again');
  assert.is((await s.deliver(`From: a@sender.example\nTo: ${s.inbox.address}\nSubject: back\nMessage-ID: <back@sender.example>\n\nhi\n`, {})).code, 250);
  assert.is((await s.send({ from: 'app@sender.test', to: ['x@dest.test'], subject: 's', text: 't' })).status, 200);
});

test.run();
