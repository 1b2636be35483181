// Whether an inbox receives, as its owner reads it (API) and as a sender meets it (RCPT): never "receiving"
// before its domain's MX points here (the domain's last MX check), and every refused recipient logged at info
// with the address and the reply, at most LOGGED_REFUSALS a session (smtp/mx.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { BOX, eventually } from '../testkit/outbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';

let s: InboundScene;
test.before(async () => {
  s = await startInboundScene();
});
test.after(() => s.stop());

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const logged = (msg: string) => s.t.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === msg);

test('an inbox says it waits for its MX until the MX points here, and refuses mail until then', async () => {
  const d = await s.verifiedDomain('later.example');
  const created = await api('/inboxes', { body: { domain_id: d.id, local_part: 'sales' } });
  assert.is(created.status, 201);
  assert.equal([created.body.receiving, created.body.receivingStatus], [false, 'inbound_not_set_up']);

  await api(`/domains/${d.id}/inbound/setup`, { method: 'POST' });
  const waiting = await api(`/inboxes/${created.body.id}`);
  assert.equal([waiting.body.status, waiting.body.receiving, waiting.body.receivingStatus], ['active', false, 'waiting_for_mx']);
  const listed = (await api(`/inboxes?domain_id=${d.id}`)).body.data;
  assert.equal(listed.map((i: any) => [i.address, i.receivingStatus]), [['sales@later.example', 'waiting_for_mx']]);
  const refused = await s.deliver('Subject: early\r\n\r\nhello\r\n', { to: ['sales@later.example'] });
  assert.ok(refused.code >= 500, `refused while the MX does not point here: ${refused.code} ${refused.text}`);

  s.dns.set('later.example', 'MX', [{ preference: 10, exchange: BOX }]);
  assert.is((await api(`/domains/${d.id}/inbound/verify`, { method: 'POST' })).body.status, 'ready');
  const ready = await api(`/inboxes/${created.body.id}`);
  assert.equal([ready.body.receiving, ready.body.receivingStatus], [true, 'receiving']);
  assert.is((await s.deliver('Subject: now\r\n\r\nhello\r\n', { to: ['sales@later.example'] })).code, 250);

  const off = await api(`/inboxes/${created.body.id}`, { method: 'PATCH', body: { status: 'disabled' } });
  assert.equal([off.body.receiving, off.body.receivingStatus], [false, 'disabled']);
});

test('refused recipients are logged at info with the address and the reply, at most 10 a session', async () => {
  const before = logged('recipient refused').length;
  const c = await RawSmtp.open(s.t.smtpPort);
  await c.read();
  await c.command('EHLO harvester.example');
  assert.is((await c.command('MAIL FROM:<h@harvester.example>')).code, 250);
  const unknown = await c.command('RCPT TO:<nobody@in.example>');
  assert.is(unknown.code, 550);
  const relay = await c.command('RCPT TO:<someone@elsewhere.example>');
  assert.is(relay.code, 554);
  for (let i = 0; i < 12; i++) await c.command(`RCPT TO:<guess${i}@in.example>`);
  await c.command('QUIT').catch(() => undefined);
  c.close();

  const lines = logged('recipient refused').slice(before);
  assert.is(lines.length, 10, 'ten refusals of the session are logged one by one');
  assert.equal(
    { level: lines[0].level, to: lines[0].to, from: lines[0].from, helo: lines[0].helo, ip: lines[0].ip },
    { level: 'info', to: 'nobody@in.example', from: 'h@harvester.example', helo: 'harvester.example', ip: '127.0.0.1' },
  );
  assert.match(lines[0].reply, /^550 5\.1\.1 <nobody@in\.example>: Recipient address rejected/);
  assert.equal([lines[1].to, lines[1].reply], ['someone@elsewhere.example', '554 5.7.1 <someone@elsewhere.example>: Relay access denied']);
  // The rest of the session's refusals: counted in one line when it ends.
  const summary = await eventually(() => logged('recipients refused in this session beyond those logged').find((l) => l.session === lines[0].session), 10_000, 'the summary line');
  assert.equal([summary.level, summary.refused, summary.logged], ['info', 14, 10]);
});

test.run();
