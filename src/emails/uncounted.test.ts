// Template test sends and forwarding confirmations are not the workspace's sending: over the real app, their
// deliveries and bounces stay out of GET /analytics (totals, domains, top subjects) and the reputation of
// GET /account, and bounced ones do not pause sending; the emails and their events are still there. Then on a
// workspace of its own, the days counted once they are over leave them out too.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from '../testkit/app.ts';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { run, value } from '../db/query.ts';
import { newId } from '../db/ids.ts';
import { createWorkspace } from '../account/workspaces.ts';
import { addEvent } from './events.ts';
import { analyticsOf, settleSubjectWindow } from './analytics.ts';
import { reputationOf } from '../account/reputation.ts';

let s: OutboundScene;
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const finished = (id: string) =>
  eventually(async () => {
    const types = (await s.events(id)).map((e) => e.type);
    return (types.includes('delivered') || types.includes('bounced')) && types;
  }, 10_000, `the outcome of ${id}`);

test.before(async () => {
  // One bounce in two sends would pause a workspace whose bounces counted (5 % pauses, from 1 send).
  s = await startOutboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m', MAILWRIGHT_REPUTATION_MIN_SENT: '1' } });
  await s.verifiedDomain('count.test');
  s.routeTo('dest.test');
  s.sink.replyTo('gone@dest.test', { code: 550, message: '5.1.1 no such user' });
});
test.after(() => s.stop());

test('test sends and forwarding confirmations are in neither analytics nor reputation, and bounced ones pause nothing', async () => {
  const template = (await api('/templates', { body: { name: 'Welcome', key: 'welcome', starter: 'welcome' } })).body.template.id;
  const tests = await Promise.all(
    ['tester@dest.test', 'gone@dest.test'].map((to) => api(`/templates/${template}/test`, { body: { to: [to], from: 'app@count.test' } })),
  );
  for (const t of tests) assert.equal([t.status, t.body.isTest], [201, true], JSON.stringify(t.body));

  const domainId = (await api('/domains')).body.data[0].id;
  const inbox = await api('/inboxes', { body: { domain_id: domainId, local_part: 'support' } });
  assert.is(inbox.status, 201, JSON.stringify(inbox.body));
  const forwarding = await api(`/inboxes/${inbox.body.id}/forwarding`, { method: 'PUT', body: { forward_to: 'gone@dest.test' } });
  assert.equal([forwarding.status, forwarding.body.forwardStatus], [200, 'pending']);
  const confirmation = (await s.t.app.store.read(value<string>("SELECT id FROM emails WHERE direction = 'out' AND subject LIKE '%forward%'")))!;
  assert.ok(confirmation, 'the confirmation mail is stored like any sent email');

  assert.equal(await finished(tests[0].body.id), ['sent', 'delivered']);
  assert.equal(await finished(tests[1].body.id), ['sent', 'bounced']);
  assert.equal(await finished(confirmation), ['sent', 'bounced']);

  // Two of three outcomes bounced, yet the workspace's own sending is clean: a real send is accepted.
  const real = await s.send({ from: 'app@count.test', to: ['reader@dest.test'], subject: 'Counted send', text: 'hello' });
  assert.is(real.status, 200, JSON.stringify(real.body));
  assert.equal(await finished(real.body.id), ['sent', 'delivered']);

  const a = (await api('/analytics?days=7')).body;
  assert.equal([a.metrics.sent, a.metrics.delivered, a.metrics.bounced], [1, 1, 0], JSON.stringify(a.metrics));
  assert.equal(a.topContent.map((c: { subject: string }) => c.subject), ['Counted send']);
  assert.equal(a.domains.map((d: { domain: string; sent: number; bounced: number }) => [d.domain, d.sent, d.bounced]), [['count.test', 1, 0]]);
  assert.is(a.timeline.at(-1).sent, 1);

  const reputation = (await api('/account')).body.reputation;
  assert.equal([reputation.sent, reputation.delivered, reputation.bounced, reputation.status], [1, 1, 0, 'healthy']);

  // Still there for whoever looks: the emails, their status and events.
  const shown = (await api(`/emails/${tests[1].body.id}`)).body;
  assert.equal([shown.isTest, shown.status], [true, 'bounced']);
  assert.is((await api(`/emails/${confirmation}`)).body.status, 'bounced');
});

test('days counted once over leave them out of the totals, domains and subjects too', async () => {
  const day = 86_400_000;
  const t0 = Date.UTC(2026, 0, 1, 12);
  const { store } = s.t.app;
  // A workspace of its own in the app's store, so that only these three sends are in its counts.
  const ws = (await store.write(() => createWorkspace({ now: () => t0 }, 'uncounted days'))).id;
  const email = (subject: string, domain: string, counted: boolean, isTest = false) =>
    store.write(function* () {
      const id = newId('em', t0);
      yield* run(
        "INSERT INTO emails (id, workspace_id, direction, status, domain, message_id, thread_id, from_address, subject, is_test, counted, created_at) VALUES (?, ?, 'out', 'sent', ?, ?, ?, ?, ?, ?, ?, ?)",
        id, ws, domain, `${id}@${domain}`, id, `a@${domain}`, subject, Number(isTest), Number(counted), t0,
      );
      for (const type of ['sent', 'bounced', 'complained'] as const) yield* addEvent({ now: () => t0 }, { workspaceId: ws, emailId: id, type, recipient: 'r@dest.test' });
      return id;
    });
  await email('Real', 'real.test', true);
  await email('A test send', 'test.test', false, true);
  await email('Confirm forwarding', 'notice.test', false);

  const now = t0 + 3 * day; // the day of the sends is long over: counted from its events
  let answer = await store.read(analyticsOf(ws, 7, now));
  for (let i = 0; !answer && i < 100; i++) {
    await store.write(() => settleSubjectWindow(ws, 7, now));
    answer = await store.read(analyticsOf(ws, 7, now));
  }
  assert.ok(answer, 'settled');
  assert.equal([answer!.metrics.sent, answer!.metrics.bounced, answer!.metrics.complaints], [1, 1, 1]);
  assert.equal(answer!.topContent.map((c) => c.subject), ['Real']);
  assert.equal(answer!.domains.map((d) => d.domain), ['real.test']);
  const thresholds = { reputationMinSent: 1, reputationBounceAtRisk: 0.02, reputationBouncePause: 0.05, reputationComplaintAtRisk: 0.001, reputationComplaintPause: 0.003 };
  const r = await store.read(reputationOf(thresholds, ws, t0));
  assert.equal([r.sent, r.bounced, r.complained], [1, 1, 1]);
});

test.run();
