// Billing with the manual provider over real HTTP and a real session cookie: checkout -> the box's page
// (GET shows, the button's POST confirms) -> the plan is held; stacking one plan per message class,
// replacing within a class; session-only routes; malformed and unknown keys; cancel; the page's sign-in,
// same-origin and workspace rules; an expired checkout.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestApp, seedWorkspace, login, request, type TestApp } from '../testkit/app.ts';
import { heldPlans } from '../account/plans.ts';
import { periodEnd } from '../account/subscriptions.ts';
import { all, get, value } from '../db/query.ts';

const PUBLIC = 'https://mail.box.test';
const plan = (tier: string, messageClass: string, interval: string, price: number, recipients: number | null) => ({
  key: `${tier}_${messageClass}_${interval}`,
  tier,
  message_class: messageClass,
  interval,
  price,
  currency: 'USD',
  limits: recipients === null ? {} : { recipients },
});
const PLANS = [
  plan('selfhosted', 'transactional', 'monthly', 0, null),
  plan('pro', 'marketing', 'monthly', 1900, 50_000),
  plan('pro', 'transactional', 'yearly', 9900, 100_000),
  plan('business', 'transactional', 'monthly', 4900, 500_000),
];

let t: TestApp;
let a: Awaited<ReturnType<typeof seedWorkspace>>;
let b: Awaited<ReturnType<typeof seedWorkspace>>;
let cookieA: string;
let cookieB: string;
let offsetMs = 0;

test.before(async () => {
  t = await startTestApp({
    clock: { now: () => Date.now() + offsetMs },
    env: { MAILWRIGHT_RATE_LIMIT: '0', MAILWRIGHT_PUBLIC_URL: PUBLIC, MAILWRIGHT_PLANS: JSON.stringify(PLANS) },
  });
  a = await seedWorkspace(t);
  b = await seedWorkspace(t, { workspace: 'acme' });
  cookieA = await login(t, a.email);
  cookieB = await login(t, b.email);
});
test.after(() => t.stop());

const checkout = (cookie: string, body: unknown) => request(`${t.api}/billing/checkout`, { cookie, body });
const cancel = (cookie: string, body?: unknown) => request(`${t.api}/billing/cancel`, { method: 'POST', cookie, body });
/** The checkout page on this test server (the URL names the public host). */
const pageUrl = (url: string) => `${t.url}${new URL(url).pathname}`;
const openPage = (url: string, cookie?: string) => request(pageUrl(url), { cookie });
// What a browser sends when the page's own form is submitted.
const confirm = (url: string, cookie?: string, headers: Record<string, string> = { origin: PUBLIC, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' }) =>
  request(pageUrl(url), { method: 'POST', cookie, headers, body: '' });
const held = async (workspaceId: string) => (await t.app.store.read(heldPlans(t.app.config, workspaceId))).map((h) => h.plan.key).sort();
const subscriptions = (workspaceId: string) =>
  t.app.store.read(all<Record<string, any>>('SELECT * FROM subscriptions WHERE workspace_id = ? ORDER BY created_at, id', workspaceId));
const checkoutRow = (id: string) => t.app.store.read(get<Record<string, any>>('SELECT * FROM checkout_sessions WHERE id = ?', id));

test('a bearer key on the session-only billing routes is 403 session_required; no credential is 401', async () => {
  for (const path of ['/billing/checkout', '/billing/cancel']) {
    const res = await request(`${t.api}${path}`, { key: a.key, body: { plan_key: 'pro_marketing_monthly' } });
    assert.is(res.status, 403, path);
    assert.is(res.body.error.code, 'session_required', path);
    const none = await request(`${t.api}${path}`, { body: { plan_key: 'pro_marketing_monthly' } });
    assert.is(none.status, 401, path);
  }
  assert.equal(await held(a.workspace.id), ['selfhosted_transactional_monthly']);
});

test('malformed plan keys are 400 validation_error, unknown ones 404, the default plan 409', async () => {
  for (const body of [{}, { plan_key: 5 }, { plan_key: '' }, { plan_key: 'pro' }, { plan_key: 'PRO_marketing_monthly' }, { plan_key: 'pro_marketing_weekly' }, { plan_key: 'pro_bulk_monthly' }, { plan_key: 'pro_marketing_monthly ' }]) {
    const res = await checkout(cookieA, body);
    assert.is(res.status, 400, JSON.stringify(body));
    assert.is(res.body.error.code, 'validation_error', JSON.stringify(body));
    assert.is(res.body.error.errors[0].path, 'plan_key', JSON.stringify(body));
  }
  const unknown = await checkout(cookieA, { plan_key: 'gold_marketing_yearly' });
  assert.is(unknown.status, 404);
  assert.is(unknown.body.error.code, 'not_found');
  const held_ = await checkout(cookieA, { plan_key: 'selfhosted_transactional_monthly' });
  assert.is(held_.status, 409);
  assert.is(held_.body.error.code, 'plan_already_held');
  assert.is((await t.app.store.read(value<number>('SELECT count(*) FROM checkout_sessions'))), 0, 'nothing recorded');
});

test('manual checkout end to end: the page shows the plan, its button activates it, the plan is then held', async () => {
  const started = await checkout(cookieA, { plan_key: 'pro_marketing_monthly' });
  assert.is(started.status, 200);
  assert.equal(Object.keys(started.body).sort(), ['session_id', 'url']);
  assert.match(started.body.session_id, /^chk_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.is(started.body.url, `${PUBLIC}/billing/checkout/${started.body.session_id}`);
  const row = (await checkoutRow(started.body.session_id))!;
  assert.equal([row.workspace_id, row.plan_key, row.provider, row.state, row.url, row.provider_session_id], [a.workspace.id, 'pro_marketing_monthly', 'manual', 'open', started.body.url, null]);

  const page = await openPage(started.body.url, cookieA);
  assert.is(page.status, 200);
  assert.match(page.headers.get('content-type')!, /^text\/html/);
  assert.is(page.headers.get('cache-control'), 'no-store');
  assert.match(page.body, 'pro_marketing_monthly');
  assert.match(page.body, '$19.00 a month');
  assert.match(page.body, '<form method="post">');
  assert.is((await checkoutRow(started.body.session_id))!.state, 'open', 'GET changes nothing');
  assert.equal(await held(a.workspace.id), ['selfhosted_transactional_monthly']);

  const before = Date.now() + offsetMs;
  const done = await confirm(started.body.url, cookieA);
  assert.is(done.status, 200);
  assert.match(done.body, 'Subscription active');
  assert.equal(await held(a.workspace.id), ['pro_marketing_monthly', 'selfhosted_transactional_monthly']);
  const [sub] = await subscriptions(a.workspace.id);
  assert.equal([sub.plan_key, sub.message_class, sub.state, sub.provider], ['pro_marketing_monthly', 'marketing', 'active', 'manual']);
  assert.ok(sub.period_start >= before && sub.period_start <= Date.now() + offsetMs);
  assert.is(sub.period_end, periodEnd(sub.period_start, 'monthly'));
  assert.equal([(await checkoutRow(started.body.session_id))!.state, typeof (await checkoutRow(started.body.session_id))!.completed_at], ['completed', 'number']);

  const again = await checkout(cookieA, { plan_key: 'pro_marketing_monthly' });
  assert.is(again.status, 409);
  assert.is(again.body.error.code, 'plan_already_held');
  // The page of a confirmed checkout says so; confirming twice changes nothing.
  assert.match((await openPage(started.body.url, cookieA)).body, 'Already confirmed');
  assert.is((await confirm(started.body.url, cookieA)).status, 200);
  assert.is((await subscriptions(a.workspace.id)).length, 1);
});

test('another message class stacks; a plan of a held class replaces the old one (canceled) in one step', async () => {
  const yearly = await checkout(cookieA, { plan_key: 'pro_transactional_yearly' });
  assert.is(yearly.status, 200);
  const page = await openPage(yearly.body.url, cookieA);
  assert.match(page.body, 'replaces the transactional plan');
  assert.match(page.body, 'selfhosted_transactional_monthly');
  assert.is((await confirm(yearly.body.url, cookieA)).status, 200);
  assert.equal(await held(a.workspace.id), ['pro_marketing_monthly', 'pro_transactional_yearly'], 'the default plan gives way to a transactional subscription');
  const sub = (await subscriptions(a.workspace.id)).find((s) => s.plan_key === 'pro_transactional_yearly')!;
  assert.is(sub.period_end, periodEnd(sub.period_start, 'yearly'));

  const business = await checkout(cookieA, { plan_key: 'business_transactional_monthly' });
  assert.is((await confirm(business.body.url, cookieA)).status, 200);
  assert.equal(await held(a.workspace.id), ['business_transactional_monthly', 'pro_marketing_monthly']);
  const rows = await subscriptions(a.workspace.id);
  assert.equal(
    rows.map((s) => [s.plan_key, s.state]),
    [
      ['pro_marketing_monthly', 'active'],
      ['pro_transactional_yearly', 'canceled'],
      ['business_transactional_monthly', 'active'],
    ],
  );
  assert.type(rows[1]!.canceled_at, 'number');
  // Two checkouts open for one plan: the second confirmation finds it held and activates nothing.
  const first = await checkout(cookieB, { plan_key: 'pro_marketing_monthly' });
  const second = await checkout(cookieB, { plan_key: 'pro_marketing_monthly' });
  assert.is((await confirm(first.body.url, cookieB)).status, 200);
  const late = await confirm(second.body.url, cookieB);
  assert.is(late.status, 409);
  assert.match(late.body, 'already holds this plan');
  assert.is((await checkoutRow(second.body.session_id))!.state, 'canceled');
  assert.is((await subscriptions(b.workspace.id)).length, 1);
});

test('the page needs the session: without it, it says to sign in and confirms nothing', async () => {
  const started = await checkout(cookieB, { plan_key: 'pro_transactional_yearly' });
  const page = await openPage(started.body.url);
  assert.is(page.status, 401);
  assert.match(page.body, 'Sign in');
  assert.not.match(page.body, 'pro_transactional_yearly');
  assert.is((await confirm(started.body.url)).status, 401);
  assert.is((await confirm(started.body.url, 'service_session_v2=' + 'A'.repeat(43))).status, 401);
  // A key is no session for a page either.
  assert.is((await request(pageUrl(started.body.url), { method: 'POST', key: b.key, headers: { origin: PUBLIC }, body: '' })).status, 401);
  assert.is((await checkoutRow(started.body.session_id))!.state, 'open');
});

test('a cross-site confirmation is refused (403) and changes nothing', async () => {
  const started = await checkout(cookieB, { plan_key: 'pro_transactional_yearly' });
  const foreign: Array<Record<string, string>> = [{ 'sec-fetch-site': 'cross-site', origin: 'https://evil.test' }, { 'sec-fetch-site': 'same-site' }, { origin: 'https://evil.test' }, { origin: 'null' }];
  for (const headers of foreign) {
    const res = await confirm(started.body.url, cookieB, headers);
    assert.is(res.status, 403, JSON.stringify(headers));
    assert.match(res.body, 'Nothing was changed');
  }
  assert.is((await checkoutRow(started.body.session_id))!.state, 'open');
  assert.equal(await held(b.workspace.id), ['pro_marketing_monthly', 'selfhosted_transactional_monthly']);
  // curl with the cookie and no browser headers is allowed (DESIGN.md CSRF rule).
  assert.is((await confirm(started.body.url, cookieB, {})).status, 200);
  assert.equal(await held(b.workspace.id), ['pro_marketing_monthly', 'pro_transactional_yearly']);
});

test("workspace isolation: another workspace's session can neither see nor confirm a checkout", async () => {
  const started = await checkout(cookieA, { plan_key: 'pro_transactional_yearly' });
  const page = await openPage(started.body.url, cookieB);
  assert.is(page.status, 404);
  assert.not.match(page.body, 'pro_transactional_yearly');
  assert.is((await confirm(started.body.url, cookieB)).status, 404);
  assert.is((await checkoutRow(started.body.session_id))!.state, 'open');
  const subsB = (await subscriptions(b.workspace.id)).length;
  assert.equal(await held(a.workspace.id), ['business_transactional_monthly', 'pro_marketing_monthly']);
  assert.is((await subscriptions(b.workspace.id)).length, subsB);
  assert.is((await openPage(`${PUBLIC}/billing/checkout/chk_01JZZZZZZZZZZZZZZZZZZZZZZZ`, cookieA)).status, 404);
});

test('a manual checkout left unconfirmed for over 24 hours is closed and activates nothing', async () => {
  const started = await checkout(cookieA, { plan_key: 'pro_transactional_yearly' });
  offsetMs = 25 * 60 * 60 * 1000;
  try {
    cookieA = await login(t, a.email); // the old session expired meanwhile too
    const page = await openPage(started.body.url, cookieA);
    assert.is(page.status, 409);
    assert.match(page.body, 'within 24 hours');
    assert.is((await confirm(started.body.url, cookieA)).status, 409);
    assert.is((await checkoutRow(started.body.session_id))!.state, 'canceled');
    assert.equal(await held(a.workspace.id), ['business_transactional_monthly', 'pro_marketing_monthly']);
  } finally {
    offsetMs = 0;
    cookieA = await login(t, a.email);
  }
});

test('cancel: one message class, then all; never the default plan; idempotent; strict body', async () => {
  assert.is((await cancel(cookieA, { message_class: 'bulk' })).status, 400);
  const typo = await cancel(cookieA, { messageClass: 'marketing' });
  assert.equal([typo.status, typo.body.error.code], [400, 'validation_error'], 'an unknown field is refused, not read as "cancel all"');
  assert.equal(await held(a.workspace.id), ['business_transactional_monthly', 'pro_marketing_monthly']);

  const one = await cancel(cookieA, { message_class: 'marketing' });
  assert.equal([one.status, one.body], [200, { ok: true }]);
  assert.equal(await held(a.workspace.id), ['business_transactional_monthly']);

  const all = await cancel(cookieA);
  assert.equal([all.status, all.body], [200, { ok: true }]);
  assert.equal(await held(a.workspace.id), ['selfhosted_transactional_monthly'], 'back on the default plan');
  assert.ok((await subscriptions(a.workspace.id)).every((s) => s.state === 'canceled' && typeof s.canceled_at === 'number'));

  // Nothing left to cancel (only the default plan): still ok, nothing changes.
  assert.equal((await cancel(cookieA, {})).body, { ok: true });
  assert.equal((await cancel(cookieA, { message_class: 'transactional' })).body, { ok: true });
  assert.equal(await held(a.workspace.id), ['selfhosted_transactional_monthly']);
  // Workspace B is untouched by A's cancel.
  assert.equal(await held(b.workspace.id), ['pro_marketing_monthly', 'pro_transactional_yearly']);
  // Canceled plans can be bought again.
  assert.is((await checkout(cookieA, { plan_key: 'pro_marketing_monthly' })).status, 200);
});

test('the Stripe webhook is not served by a box without a webhook secret', async () => {
  const res = await request(`${t.api}/billing/stripe/webhook`, { body: { id: 'evt_1', type: 'checkout.session.completed' }, headers: { 'stripe-signature': 't=1,v1=00' } });
  assert.is(res.status, 404);
});

test('period end: one month or one year later, clamped to the month', () => {
  assert.is(new Date(periodEnd(Date.UTC(2026, 0, 31, 10, 30), 'monthly')).toISOString(), '2026-02-28T10:30:00.000Z');
  assert.is(new Date(periodEnd(Date.UTC(2024, 1, 29), 'yearly')).toISOString(), '2025-02-28T00:00:00.000Z');
  assert.is(new Date(periodEnd(Date.UTC(2026, 11, 15), 'monthly')).toISOString(), '2027-01-15T00:00:00.000Z');
});

test.run();
