// Account, plans and metering over real HTTP and SMTP: GET /account and /profile with nothing
// secret in them, limits counted in the transaction that queues (50 concurrent sends against 10), batch items
// failing alone, submission and forwarding metered too, stacked plans, received mail never counted, and the
// reputation pause with the owner's resume.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { freePort, login, request } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { UNAUTHORIZED_MESSAGE } from '../errors.ts';
import { run, value } from '../db/query.ts';

const plan = (tier: string, messageClass: string, limits: Record<string, number>) => ({ key: `${tier}_${messageClass}_monthly`, tier, message_class: messageClass, interval: 'monthly', price: tier === 'pro' ? 2900 : 0, currency: 'USD', limits });
const PLANS = [plan('selfhosted', 'transactional', { recipients: 10, attachment_bytes: 3000 }), plan('pro', 'marketing', { recipients: 5 })];

let s: InboundScene;
let cookie: string;
let owner: string;

test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_PLANS: JSON.stringify(PLANS), MAILWRIGHT_SUBMISSION_PORT: String(await freePort()), MAILWRIGHT_REPUTATION_MIN_SENT: '20' } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
  owner = (await s.t.app.store.read(value<string>('SELECT email FROM users ORDER BY created_at LIMIT 1')))!;
  cookie = await login(s.t, owner);
});
test.after(() => s.stop());

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const mail = (to: string | string[], extra: Record<string, unknown> = {}) => ({ from: 'app@sender.test', to, subject: 'metered', text: 'hello', ...extra });
const sentCount = async () => Number(await s.t.app.store.read(value<number>("SELECT count(*) FROM emails WHERE direction = 'out'")));
/** A row changed behind the API's back, as the test's setting up needs. */
const change = (sql: string, ...params: unknown[]) => s.t.app.store.write(() => run(sql, ...params));
const defaultWorkspace = async () => (await s.t.app.store.read(value<string>("SELECT id FROM workspaces WHERE name = 'default'")))!;

test('GET /account: every part, no secret anywhere; the default plan is held', async () => {
  const res = await api('/account');
  assert.is(res.status, 200, JSON.stringify(res.body));
  const a = res.body;
  assert.equal(Object.keys(a).sort(), ['access', 'billing', 'infrastructure', 'plans', 'reputation', 'usage', 'user', 'workspace']);
  assert.is(a.user.email, owner);
  assert.equal(a.usage.recipients, { used: 0, limit: 10 });
  assert.equal(a.usage.attachmentBytes, { used: 0, limit: 3000 });
  assert.match(a.usage.periodStart, /^\d{4}-\d\d-01T00:00:00\.000Z$/);
  assert.equal(a.billing.subscriptions.map((x: any) => [x.planKey, x.state]), [['selfhosted_transactional_monthly', 'active']]);
  assert.equal(a.plans.map((p: any) => p.key), ['selfhosted_transactional_monthly', 'pro_marketing_monthly']);
  assert.equal([a.access.tier, a.access.marketing, a.access.sendingPaused], ['selfhosted', false, false]);
  assert.equal([a.reputation.status, a.reputation.sent], ['healthy', 0]);
  assert.is(a.infrastructure.hostname, 'mx.mailwright.test');
  assert.match(a.infrastructure.tls.subject, /mx\.mailwright\.test/);
  assert.is(a.workspace.mailer.startsWith('Mailwright '), true);
  assert.equal([a.workspace.stats.domains, a.workspace.stats.inboxes, a.workspace.stats.keys], [2, 1, 1]);
  const text = JSON.stringify(a);
  for (const secret of [s.key, s.key.slice(3), 'password', 'hash', 'PRIVATE KEY']) assert.not.ok(text.includes(secret), secret);
  assert.equal([(await request(`${s.t.api}/account`)).body.error.message], [UNAUTHORIZED_MESSAGE]);
});

test('GET /profile is session only and shows the same state', async () => {
  assert.is((await api('/profile')).body.error.code, 'session_required');
  const res = await request(`${s.t.api}/profile`, { cookie });
  assert.is(res.status, 200);
  assert.ok(['user', 'usage', 'access', 'reputation', 'billing', 'plans'].every((k) => k in res.body), Object.keys(res.body).join());
});

test('section 4.7: a key reads account, analytics and keys; billing, key changes and the profile need the session', async () => {
  for (const path of ['/account', '/analytics', '/keys']) assert.is((await api(path)).status, 200, path);
  const sessionOnly: Array<[string, string, unknown]> = [
    ['GET', '/profile', undefined],
    ['POST', '/billing/checkout', { plan_key: 'pro_marketing_monthly' }],
    ['POST', '/billing/cancel', {}],
    ['POST', '/keys', { name: 'k' }],
    ['DELETE', '/keys/key_01ARZ3NDEKTSV4RRFFQ69G5FAV', undefined],
    ['POST', '/account/sending/resume', undefined],
  ];
  for (const [method, path, body] of sessionOnly) {
    const res = await api(path, { method, body });
    assert.equal([res.status, res.body.error?.code], [403, 'session_required'], `${method} ${path}`);
    const withSession = await request(`${s.t.api}${path}`, { method, body, cookie });
    assert.ok(withSession.status !== 403 && withSession.status !== 401 && withSession.status < 500, `${method} ${path} with the session: ${withSession.status}`);
  }
  for (const path of ['/account', '/analytics', '/keys']) assert.is((await request(`${s.t.api}${path}`, { cookie })).status, 200, `${path} with the session`);
});

test('50 concurrent sends against a limit of 10 recipients: exactly 10 accepted, the rest 429 quota_exceeded', async () => {
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => api('/emails', { body: mail(`r${i}@dest.test`) })));
  const accepted = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 429);
  assert.equal([accepted.length, refused.length], [10, 40]);
  assert.ok(refused.every((r) => r.body.error.code === 'quota_exceeded' && r.headers.get('retry-after') === null));
  assert.is(await sentCount(), 10, 'nothing queued for a refused send');
  assert.equal((await api('/account')).body.usage.recipients, { used: 10, limit: 10 });
});

test('stacked plans add up; a batch item over the limit fails alone; attachment bytes are metered', async () => {
  // A marketing plan held besides the default: 10 + 5 recipients.
  const now = Date.now();
  const ws = await defaultWorkspace();
  await change("INSERT INTO subscriptions (id, workspace_id, plan_key, message_class, state, provider, period_start, period_end, created_at) VALUES ('sub_test', ?, 'pro_marketing_monthly', 'marketing', 'active', 'manual', ?, ?, ?)", ws, now, now + 30 * 86_400_000, now);
  assert.equal((await api('/account')).body.usage.recipients.limit, 15);
  const batch = await api('/emails/batch', { body: [mail(['a1@dest.test', 'a2@dest.test']), mail(['b1@dest.test', 'b2@dest.test', 'b3@dest.test', 'b4@dest.test']), mail('c1@dest.test'), mail('d1@dest.test')] });
  assert.is(batch.status, 200, JSON.stringify(batch.body));
  assert.equal(batch.body.data.map((d: any) => d.ok), [true, false, true, true]);
  assert.is(batch.body.data[1].error.code, 'quota_exceeded');
  assert.equal([batch.body.successful, batch.body.failed], [3, 1]);
  assert.equal((await api('/account')).body.usage.recipients.used, 14);
  // The marketing plan sets no attachment limit, so the sum is unlimited now; without it, 3,000 bytes.
  await change("UPDATE subscriptions SET state = 'canceled' WHERE id = 'sub_test'");
  const big = await api('/emails', { body: mail('e1@dest.test', { attachments: [{ filename: 'a.bin', content: randomBytes(4000).toString('base64') }] }) });
  assert.equal([big.status, big.body.error?.code], [429, 'quota_exceeded']);
});

test('SMTP submission, forwarding confirmations and forwarded copies are metered; received mail is not', async () => {
  const ws = await defaultWorkspace();
  await change('DELETE FROM usage WHERE workspace_id = ?', ws);
  await change("UPDATE subscriptions SET state = 'canceled' WHERE workspace_id = ?", ws);
  const used = async () => (await api('/account')).body.usage.recipients.used as number;

  // Received mail never counts.
  assert.is((await s.deliver('From: x@sender.example\r\nSubject: in\r\n\r\nhi\r\n', {})).code, 250);
  assert.is(await used(), 0);

  // A forwarding confirmation is one recipient.
  const fwd = await api(`/inboxes/${s.inbox.id}/forwarding`, { method: 'PUT', body: { forward_to: 'friend@dest.test' } });
  assert.is(fwd.body.forwardStatus, 'pending');
  assert.is(await used(), 1);

  // Submission counts its RCPTs; over the limit it is a 550 5.7.1.
  const smtp = await RawSmtp.open(s.t.submissionPort!);
  try {
    await smtp.read();
    await smtp.command('EHLO app.test');
    await smtp.command('STARTTLS');
    await smtp.startTls();
    await smtp.command('EHLO app.test');
    assert.is((await smtp.command(`AUTH PLAIN ${Buffer.from(`\0app\0${s.key}`).toString('base64')}`)).code, 235);
    const submit = async (rcpts: string[]) => {
      await smtp.command('MAIL FROM:<app@sender.test>');
      for (const r of rcpts) await smtp.command(`RCPT TO:<${r}>`);
      await smtp.command('DATA');
      smtp.write('From: app@sender.test\r\nTo: x@dest.test\r\nSubject: sub\r\n\r\nbody\r\n.\r\n');
      return smtp.read(15_000);
    };
    assert.is((await submit(['s1@dest.test', 's2@dest.test'])).code, 250);
    assert.is(await used(), 3);
    const over = await submit(Array.from({ length: 8 }, (_, i) => `t${i}@dest.test`));
    assert.equal([over.code, over.text.startsWith('5.7.1')], [550, true], over.text);
  } finally {
    smtp.close();
  }

  // A forwarded copy over the limit is not sent, and the received email says why.
  await change("UPDATE inboxes SET forward_status = 'active' WHERE id = ?", s.inbox.id);
  await change('UPDATE usage SET recipients = 10 WHERE workspace_id = ?', ws);
  const before = await sentCount();
  assert.is((await s.deliver('From: x@sender.example\r\nSubject: forward me\r\n\r\nhi\r\n', {})).code, 250);
  const [received] = await s.stored('subject = ?', 'forward me');
  const events = (await api(`/emails/${received.id}/events`)).body.data;
  assert.ok(events.some((e: any) => e.type === 'blocked' && e.recipient === 'friend@dest.test' && e.data.reason === 'quota_exceeded'), JSON.stringify(events));
  assert.is(await sentCount(), before, 'no copy queued');
});

test('reputation: past the bounce threshold sending pauses on every path until the owner resumes it', async () => {
  const ws = await defaultWorkspace();
  await change('DELETE FROM usage WHERE workspace_id = ?', ws);
  const today = new Date().toISOString().slice(0, 10);
  // 30 sent, 3 bounced today: 10 % against a pause threshold of 5 %.
  await change('INSERT INTO daily_stats (workspace_id, day, sent, bounced) VALUES (?, ?, 30, 3) ON CONFLICT (workspace_id, day) DO UPDATE SET sent = 30, bounced = 3', ws, today);
  const refused = await api('/emails', { body: mail('p1@dest.test') });
  assert.equal([refused.status, refused.body.error.code], [403, 'sending_paused']);
  assert.equal((await api('/emails', { body: mail('p2@dest.test') })).body.error.code, 'sending_paused');
  const account = (await api('/account')).body;
  assert.equal([account.reputation.status, account.access.sendingPaused], ['paused', true]);
  assert.match(account.access.pauseReason, /bounce rate 10\.00 %/);

  assert.is((await api('/account/sending/resume', { method: 'POST' })).body.error.code, 'session_required');
  const resumed = await request(`${s.t.api}/account/sending/resume`, { method: 'POST', cookie });
  assert.equal(resumed.body, { ok: true, resumed: true });
  // Only days after the resume count toward a new pause: today's bounces do not pause it again.
  assert.is((await api('/emails', { body: mail('p3@dest.test') })).status, 200);
  assert.equal((await api('/account')).body.access.sendingPaused, false);
});

test.run();
