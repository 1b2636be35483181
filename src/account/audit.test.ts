// The audit log end to end: each action of the dashboard, the API and the CLI leaves one row naming the actor
// (user and session, key, or the CLI), the client address (the one a trusted proxy forwarded), the target and
// small details without secrets; GET /audit is session only, newest first, paged and filtered, and keeps rows
// after their target is deleted; retention_audit_days prunes old rows.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { login, request, runCli, seedWorkspace, TEST_PASSWORD, TEST_STORE, tempDir } from '../testkit/app.ts';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { recordAudit } from './audit.ts';
import { pruneAuditLog } from '../start/schedules.ts';
import { column, value } from '../db/query.ts';

let s: OutboundScene;
let cookie: string;
let me: { userId: string; sessionId: string };
const plan = (tier: string, price: number) => ({ key: `${tier}_transactional_monthly`, tier, message_class: 'transactional', interval: 'monthly', price, currency: 'USD', limits: {} });
const PLANS = [plan('selfhosted', 0), plan('pro', 900)];
const browser = { 'sec-fetch-site': 'same-origin' };

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_TRUSTED_PROXIES: '127.0.0.1', MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_PLANS: JSON.stringify(PLANS) } });
  cookie = await login(s.t, s.email);
  const profile = await request(`${s.t.api}/profile`, { cookie });
  const sessions = await request(`${s.t.api}/sessions`, { cookie });
  me = { userId: profile.body.user.id, sessionId: sessions.body.data.find((x: { current: boolean }) => x.current).id };
});
test.after(() => s.stop());

const asUser = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { cookie, ...opts, headers: { ...browser, ...opts.headers } });
const asKey = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const keyId = async () => (await s.t.app.store.read(value<string>("SELECT id FROM api_keys WHERE name = 'seed key'")))!;
async function audit(query = '') {
  const res = await asUser(`/audit${query}`);
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body as { data: Array<Record<string, any>>; count: number; hasMore: boolean };
}
const ok = (res: { status: number; body: unknown }, status = 200) => assert.is(res.status, status, JSON.stringify(res.body));

test('each action writes one row with its actor, address, target and details', async () => {
  const user = { type: 'user', id: me.userId, sessionId: me.sessionId };
  const key = { type: 'key', id: await keyId() };
  const made = await asUser('/keys', { body: { name: 'deploy' }, headers: { 'x-forwarded-for': '203.0.113.9' } });
  ok(made, 201);
  ok(await asUser(`/keys/${made.body.id}`, { method: 'DELETE' }));
  const d = await s.verifiedDomain('audit.test');
  ok(await asKey(`/domains/${d.id}`, { method: 'PATCH', body: { open_tracking: true } }));
  ok(await asKey(`/domains/${d.id}/dkim/rotate`, { method: 'POST' }), 201);
  ok(await asKey(`/domains/${d.id}/inbound/setup`, { method: 'POST' }));
  const inbox = await asKey('/inboxes', { body: { domain_id: d.id, local_part: 'help' } });
  ok(inbox, 201);
  ok(await asKey(`/inboxes/${inbox.body.id}`, { method: 'PATCH', body: { name: 'Help desk' } }));
  ok(await asKey(`/inboxes/${inbox.body.id}/forwarding`, { method: 'PUT', body: { forward_to: s.email } }));
  s.routeTo('elsewhere.test');
  ok(await asKey(`/inboxes/${inbox.body.id}/forwarding`, { method: 'PUT', body: { forward_to: 'me@elsewhere.test' } }));
  const hook = await asKey('/webhooks', { body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } });
  ok(hook, 201);
  ok(await asKey(`/webhooks/${hook.body.id}`, { method: 'PATCH', body: { description: 'ops' } }));
  ok(await asKey(`/webhooks/${hook.body.id}/rotate-secret`, { method: 'POST' }));
  ok(await asKey(`/webhooks/${hook.body.id}`, { method: 'DELETE' }));
  ok(await asKey(`/inboxes/${inbox.body.id}`, { method: 'DELETE' }));
  const checkout = await asUser('/billing/checkout', { body: { plan_key: 'pro_transactional_monthly' } });
  ok(checkout);
  ok(await request(`${s.t.url}${new URL(checkout.body.url).pathname}`, { method: 'POST', cookie, headers: { ...browser, 'content-type': 'application/x-www-form-urlencoded' }, body: '' }));
  ok(await asUser('/billing/cancel', { method: 'POST', body: {} }));
  const other = await login(s.t, s.email);
  const otherId = (await request(`${s.t.api}/sessions`, { cookie: other })).body.data.find((x: { current: boolean }) => x.current).id;
  ok(await asUser(`/sessions/${otherId}`, { method: 'DELETE' }));
  ok(await asKey(`/domains/${d.id}`, { method: 'DELETE' }));

  const rows = (await audit('?limit=100')).data;
  const one = (action: string) => {
    const found = rows.filter((r) => r.action === action);
    assert.is(found.length, action === 'inbox.forwarding_changed' ? 2 : 1, `${action}: ${JSON.stringify(found)}`);
    return found[0];
  };
  const cases: Array<[string, Record<string, unknown>, { type: string; id: string | null; name: string | null }, Record<string, unknown>?]> = [
    ['key.created', user, { type: 'key', id: made.body.id, name: 'deploy' }, { prefix: made.body.prefix }],
    ['key.revoked', user, { type: 'key', id: made.body.id, name: 'deploy' }],
    ['domain.created', key, { type: 'domain', id: d.id, name: 'audit.test' }],
    ['domain.verified', key, { type: 'domain', id: d.id, name: 'audit.test' }, { previousStatus: 'pending' }],
    ['domain.updated', key, { type: 'domain', id: d.id, name: 'audit.test' }, { open_tracking: true }],
    ['domain.dkim_rotated', key, { type: 'domain', id: d.id, name: 'audit.test' }],
    ['domain.inbound_setup', key, { type: 'domain', id: d.id, name: 'audit.test' }],
    ['inbox.created', key, { type: 'inbox', id: inbox.body.id, name: 'help@audit.test' }],
    ['inbox.updated', key, { type: 'inbox', id: inbox.body.id, name: 'help@audit.test' }, { name: 'Help desk' }],
    ['inbox.deleted', key, { type: 'inbox', id: inbox.body.id, name: 'help@audit.test' }],
    ['webhook.created', key, { type: 'webhook', id: hook.body.id, name: 'http://127.0.0.1:9/hook' }],
    ['webhook.updated', key, { type: 'webhook', id: hook.body.id, name: 'http://127.0.0.1:9/hook' }, { description: 'ops' }],
    ['webhook.secret_rotated', key, { type: 'webhook', id: hook.body.id, name: 'http://127.0.0.1:9/hook' }, {}],
    ['webhook.deleted', key, { type: 'webhook', id: hook.body.id, name: 'http://127.0.0.1:9/hook' }],
    ['billing.checkout_started', user, { type: 'plan', id: 'pro_transactional_monthly', name: 'pro_transactional_monthly' }],
    ['billing.plan_activated', user, { type: 'plan', id: 'pro_transactional_monthly', name: 'pro_transactional_monthly' }],
    ['session.revoked', user, { type: 'session', id: otherId, name: null }],
    ['domain.deleted', key, { type: 'domain', id: d.id, name: 'audit.test' }],
  ];
  for (const [action, actor, target, data] of cases) {
    const row = one(action);
    assert.equal(row.actor, actor, `${action}: actor`);
    assert.equal(row.target, target, `${action}: target`);
    assert.is(row.ip, action === 'key.created' ? '203.0.113.9' : '127.0.0.1', `${action}: the client address`);
    for (const [k, v] of Object.entries(data ?? {})) assert.equal(row.data[k], v, `${action}: data.${k}`);
    assert.match(row.id, /^aud_/);
  }
  assert.equal(one('billing.plan_canceled').actor, user);
  const forwarding = rows.filter((r) => r.action === 'inbox.forwarding_changed').map((r) => r.data);
  assert.equal(forwarding.map((f) => f.forwardStatus).sort(), ['active', 'pending']);
  const text = JSON.stringify(rows);
  assert.not.ok(text.includes(made.body.key) || text.includes(hook.body.secret), 'no secret is ever in the log');
  assert.ok(rows.every((r, i) => i === 0 || r.createdAt <= rows[i - 1].createdAt), 'newest first');
});

test('the passphrase change is recorded (never the passphrase), and the CLI\'s actions as actor cli', async () => {
  const changed = await asUser('/auth/password', { body: { current_password: TEST_PASSWORD, new_password: 'another long passphrase for the box' } });
  ok(changed);
  cookie = changed.headers.getSetCookie().find((c) => c.startsWith('service_session_v2='))!.split(';')[0];
  const backup = `${tempDir('audit-backup-')}/box.tar.gz`;
  const d = await s.verifiedDomain('cli.test');
  // `mailwright backup` copies SQLite's file: on PostgreSQL it refuses, so there it is not run.
  const backs = TEST_STORE === 'sqlite';
  for (const args of [['key', 'create', '--name', 'from the shell'], ['workspace', 'create', 'side'], ['dkim', 'rotate', 'cli.test'], ...(backs ? [['backup', backup]] : [])]) {
    const run = await runCli(args, s.t.env);
    assert.is(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
  }
  const added = await runCli(['user', 'add', '--email', 'second@audit.test', '--password-stdin'], s.t.env, 'a long enough passphrase here\n');
  assert.is(added.code, 0, added.stderr);

  const rows = (await audit('?actor=cli')).data;
  assert.equal(rows.map((r) => r.action), ['user.created', ...(backs ? ['box.backup_created'] : []), 'domain.dkim_rotated', 'workspace.created', 'key.created']);
  assert.ok(rows.every((r) => r.actor.type === 'cli' && r.ip === null));
  assert.is(rows.find((r) => r.action === 'key.created')!.target.name, 'from the shell');
  assert.equal(rows.find((r) => r.action === 'domain.dkim_rotated')!.target, { type: 'domain', id: d.id, name: 'cli.test' });
  assert.equal(rows.find((r) => r.action === 'user.created')!.target.name, 'second@audit.test');
  if (backs) assert.is(rows.find((r) => r.action === 'box.backup_created')!.target.name, backup);
  const password = (await audit('?action=user.password_changed')).data;
  assert.is(password.length, 1);
  assert.equal(password[0].actor, { type: 'user', id: me.userId, sessionId: me.sessionId });
  assert.not.ok(JSON.stringify(password).includes('another long passphrase'));
});

test('GET /audit: filters, paging, rows kept after the target is gone, session only, one workspace', async () => {
  const seedKey = await keyId();
  const byKey = (await audit(`?actor=${seedKey}&limit=100`)).data;
  assert.ok(byKey.length >= 10 && byKey.every((r) => r.actor.id === seedKey));
  const keys = (await audit('?action=key.created,key.revoked&limit=100')).data;
  assert.ok(keys.length >= 3 && keys.every((r) => r.action === 'key.created' || r.action === 'key.revoked'));
  const domainId = (await audit('?action=domain.deleted')).data[0].target.id;
  const gone = (await audit(`?target_id=${domainId}`)).data.map((r) => r.action);
  assert.equal(gone, ['domain.deleted', 'domain.inbound_setup', 'domain.dkim_rotated', 'domain.updated', 'domain.verified', 'domain.created'], 'the deleted domain\'s history');
  assert.is((await asKey(`/domains/${domainId}`)).status, 404);

  const page1 = await audit('?limit=2');
  const page2 = await audit('?limit=2&offset=2');
  assert.is(page1.count, 2);
  assert.ok(page1.hasMore);
  assert.not.equal(page1.data[0].id, page2.data[0].id);
  const newest = page1.data[0].createdAt;
  assert.is((await audit(`?after=${encodeURIComponent(newest)}`)).count, 0);
  assert.ok((await audit(`?before=${encodeURIComponent(newest)}`)).data.every((r) => r.createdAt < newest));
  assert.ok((await audit('?after=2020-01-01&limit=100')).count > 0);

  const key = await asKey('/audit');
  assert.is(key.status, 403);
  assert.is(key.body.error.code, 'session_required');
  for (const bad of ['?action=key.stolen', '?after=yesterday', '?limit=500', '?sort=asc']) {
    const res = await asUser(`/audit${bad}`);
    assert.is(res.status, 400, bad);
    assert.is(res.body.error.code, 'validation_error', bad);
  }
  assert.is((await request(`${s.t.api}/audit`)).status, 401);

  // Another workspace sees its own rows and the box-wide ones (a backup, a new workspace), none of this one's.
  if (TEST_STORE === 'postgres') await backupRowAsOnSqlite();
  const acme = await seedWorkspace(s.t, { workspace: 'acme' });
  const theirs = (await request(`${s.t.api}/audit?limit=100`, { cookie: await login(s.t, acme.email) })).body.data as Array<{ action: string }>;
  assert.equal(theirs.map((r) => r.action).sort(), ['box.backup_created', 'workspace.created']);
});

test('retention_audit_days prunes older rows at housekeeping; 0 keeps them all', async () => {
  const { store, clock } = s.t.app;
  const day = 24 * 60 * 60_000;
  const old = await store.write(() => recordAudit(clock.now() - 401 * day, { type: 'system', id: 'test' }, { workspaceId: null, action: 'box.restored' }));
  const recent = await store.write(() => recordAudit(clock.now() - 399 * day, { type: 'system', id: 'test' }, { workspaceId: null, action: 'box.restored' }));
  const ids = async () => (await store.read(column<string>('SELECT id FROM audit_log WHERE id IN (?, ?)', old, recent))).sort();
  assert.is(await pruneAuditLog({ store, clock, config: { ...s.t.app.config, retentionAuditDays: 0 } }), 0);
  assert.equal(await ids(), [old, recent].sort());
  assert.is(s.t.app.config.retentionAuditDays, 400, 'the default');
  assert.is(await pruneAuditLog(s.t.app), 1);
  assert.equal(await ids(), [recent]);
  await eventually(async () => ((await audit('?action=box.restored')).data.map((r) => r.id).join() === recent ? true : undefined), 2000, 'the list');
});

/** The box-wide row the CLI's backup leaves on SQLite (it refuses on PostgreSQL), written as the CLI would. */
async function backupRowAsOnSqlite() {
  const cli = { type: 'cli', id: 'test' } as const;
  await s.t.app.store.write(() => recordAudit(s.t.app.clock.now(), cli, { workspaceId: null, action: 'box.backup_created' }));
}

test.run();
