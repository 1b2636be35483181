// Signing at acceptance (presign.ts): a send is composed and DKIM-signed as soon as it is committed, before the
// queue claims it; and mail a previous run accepted but never signed is found again at start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { Queue } from './queue.ts';
import { Presigner } from './presign.ts';
import type { SignedCopies } from './signed-copies.ts';
import { all } from '../db/query.ts';

let s: OutboundScene;
test.before(async () => {
  s = await startOutboundScene();
  await s.verifiedDomain('signs.test');
  s.routeTo('dest.test');
});
test.after(() => s.stop());

const raw = (id: string) => fetch(`${s.t.api}/emails/${id}/raw`, { headers: { authorization: `Bearer ${s.key}` } });
const deliveries = (id: string) => s.t.app.store.read(all<{ state: string; attempts: number }>('SELECT state, attempts FROM deliveries WHERE email_id = ?', id));

test('a send is signed while the queue delivers nothing: its raw bytes verify before any attempt', async () => {
  const queue = s.t.app.queue;
  assert.ok(queue instanceof Queue);
  await queue.stop();
  const sent = await s.send({ from: 'App <app@signs.test>', to: ['one@dest.test'], subject: 'Signed at once', text: 'Hello.' });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const res = await eventually(async () => {
    const r = await raw(sent.body.id);
    return r.status === 200 && r;
  }, 10_000, 'the signed copy');
  const bytes = Buffer.from(await res.arrayBuffer());
  const dkim = await s.dkim(bytes);
  assert.is(dkim.status, 'pass');
  assert.is(dkim.signingDomain, 'signs.test');
  assert.equal(await deliveries(sent.body.id), [{ state: 'queued', attempts: 0 }], 'nothing was attempted');
  assert.is(s.sink.messages.length, 0);
});

test('on start, queued mail never signed is signed; mail already signed, scheduled or attempted is left alone', async () => {
  const presigner = s.t.app.presign;
  assert.ok(presigner instanceof Presigner);
  await presigner.stop();
  const unsigned = await s.send({ from: 'app@signs.test', to: ['two@dest.test', 'three@dest.test'], subject: 'Left unsigned', text: 'Hi.' });
  assert.is(unsigned.status, 200);
  assert.is((await raw(unsigned.body.id)).status, 409, 'not signed while the presigner is stopped');
  const later = await s.send({ from: 'app@signs.test', to: ['four@dest.test'], subject: 'Later', text: 'Hi.', scheduled_at: new Date(Date.now() + 3_600_000).toISOString() });
  assert.is(later.status, 200, JSON.stringify(later.body));

  const asked: string[] = [];
  const copies = { prepare: async (id: string) => void asked.push(id) } as unknown as SignedCopies;
  const again = new Presigner(s.t.app, copies, { concurrency: 2 });
  again.start();
  await again.settled();
  assert.equal(asked, [unsigned.body.id], 'only the queued email never signed, once');
});

test.run();
