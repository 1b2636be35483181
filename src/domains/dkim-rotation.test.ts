// DKIM rotation gated on DNS, end to end: the new key does not sign while DNS lacks its record, signs once
// DNS serves it, and the old key stays published for the queue's lifetime, so a message deferred before the
// rotation (signed with the old key) still verifies when it is finally delivered.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';
import { request, runCli } from '../testkit/app.ts';
import { retireOldKeys } from './dkim-keys.ts';
import { run } from '../db/query.ts';
import { rotateDueKeys } from './verification.ts';

let s: OutboundScene;
let domainId: string;
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const selectorOf = (raw: Buffer) => /^DKIM-Signature:[^]*?\bs=([a-z0-9]+)/im.exec(raw.toString('latin1'))?.[1];
const arrived = (to: string) => eventually(() => s.sink.messages.find((m) => m.rcptTo.includes(to)), 15_000, `a message for ${to}`);
const send = (to: string) => s.send({ from: 'app@rot.test', to: [to], subject: `for ${to}`, text: 'x' });

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '2s', MAILWRIGHT_DKIM_ROTATION_DAYS: '180' } });
  domainId = (await s.verifiedDomain('rot.test')).id;
  s.routeTo('dest.test');
  s.routeTo('later.test', '127.0.0.9'); // nothing listens there yet: mail to it is deferred
});
test.after(() => s.stop());

test('the new key signs only once DNS serves it; mail deferred before the rotation still verifies after it', async () => {
  const old = (await api(`/domains/${domainId}`)).body.dkimSelector as string;
  // Deferred before the rotation: its signed copy carries the old selector.
  const early = (await send('early@later.test')).body.id;
  await eventually(async () => (await api(`/emails/${early}/raw`)).status === 200, 10_000, 'the early message signed');

  const rotated = await api(`/domains/${domainId}/dkim/rotate`, { method: 'POST' });
  assert.is(rotated.status, 201, JSON.stringify(rotated.body));
  const fresh = rotated.body.pending.selector as string;
  assert.ok(fresh && fresh !== old);
  assert.equal(rotated.body.pending.record.name, `${fresh}._domainkey.rot.test`);
  assert.match(rotated.body.pending.record.value, /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+$/);
  assert.equal([(await api(`/domains/${domainId}/dkim/rotate`, { method: 'POST' })).status], [409], 'one rotation at a time');

  // DNS does not serve the new key yet: a verify leaves the old key signing.
  await api(`/domains/${domainId}/verify`, { method: 'POST' });
  const before = await arrived((await send('before@dest.test')).body.id && 'before@dest.test');
  assert.is(selectorOf(before.raw), old, 'still the old key');
  assert.equal([(await s.dkim(before.raw)).status], ['pass']);

  s.dns.set(rotated.body.pending.record.name, 'TXT', [rotated.body.pending.record.value]);
  await api(`/domains/${domainId}/verify`, { method: 'POST' });
  const shown = (await api(`/domains/${domainId}`)).body;
  assert.equal([shown.dkimSelector, shown.dkimRotation.pending, shown.dkimRotation.retiring.map((k: { selector: string }) => k.selector)], [fresh, null, [old]]);
  assert.ok(Date.parse(shown.dkimRotation.retiring[0].keepPublishedUntil) > Date.now() + 4 * 24 * 3600_000, 'kept published for the queue lifetime');
  const after = await arrived((await send('after@dest.test')).body.id && 'after@dest.test');
  assert.is(selectorOf(after.raw), fresh, 'the new key signs now');
  assert.equal([(await s.dkim(after.raw)).status], ['pass']);

  // The early message goes out now, still with the old signature, which still verifies.
  s.routeTo('later.test');
  const late = await arrived('early@later.test');
  assert.is(selectorOf(late.raw), old);
  assert.equal([(await s.dkim(late.raw)).status], ['pass']);

  // Past the queue lifetime the old key is retired: its record is no longer asked for.
  assert.is(await s.t.app.store.write(() => retireOldKeys(Date.now() + 6 * 24 * 3600_000)), 1);
  assert.equal((await api(`/domains/${domainId}`)).body.dkimRotation.retiring, []);
  assert.is((await api('/domains/dom_01ARZ3NDEKTSV4RRFFQ69G5FAV/dkim/rotate', { method: 'POST' })).status, 404);

  // The CLI does the same: the record to publish, then the pending key shown by the API; one at a time.
  const cli = await runCli(['dkim', 'rotate', 'rot.test'], s.t.env);
  assert.is(cli.code, 0, cli.stderr);
  const pending = (await api(`/domains/${domainId}`)).body.dkimRotation.pending;
  assert.ok(cli.stdout.includes(pending.record.name) && cli.stdout.includes(pending.record.value));
  const again = await runCli(['dkim', 'rotate', 'rot.test'], s.t.env);
  assert.ok(again.code !== 0 && /already waits/.test(again.stderr), again.stderr);
  assert.ok((await runCli(['dkim', 'rotate', 'nope.test'], s.t.env)).code !== 0);
});

test('scheduled rotation: a key older than dkim_rotation_days gets one successor to publish', async () => {
  const old = (await s.verifiedDomain('aged.test')).id;
  assert.is(await rotateDueKeys(s.t.app), 0, 'young keys are left alone');
  await s.t.app.store.write(() => run('UPDATE dkim_keys SET created_at = ? WHERE domain_id = ?', Date.now() - 200 * 24 * 3600_000, old));
  assert.is(await rotateDueKeys(s.t.app), 1);
  const pending = (await api(`/domains/${old}`)).body.dkimRotation.pending;
  assert.ok(pending && pending.record.name.endsWith('._domainkey.aged.test'));
  assert.is(await rotateDueKeys(s.t.app), 0, 'one waiting key at a time');
});

test.run();
