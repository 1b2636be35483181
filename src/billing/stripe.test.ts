// The Stripe provider against a local HTTPS server shaped as Stripe's API (src/testkit/stripe.ts), reached by
// name through the test DNS server: the exact Checkout Session request, and the webhook: a valid signature
// activates, an invalid one, a tampered body or an old timestamp is 400 and changes nothing, a duplicate
// delivery changes nothing, other events are acknowledged and ignored. Cancel never calls Stripe.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startStripe, stripeSignature, type LocalStripe } from '../testkit/stripe.ts';
import { startTestApp, seedWorkspace, login, request, type TestApp } from '../testkit/app.ts';
import { heldPlans } from '../account/plans.ts';
import { verifyStripeSignature } from './stripe.ts';
import { all, get, value } from '../db/query.ts';

const PUBLIC = 'https://mail.box.test';
const WEBHOOK_SECRET = 'whsec_test_5f1c0ffee5f1c0ffee5f1c0ffee';
const PLANS = [
  { key: 'selfhosted_transactional_monthly', tier: 'selfhosted', message_class: 'transactional', interval: 'monthly', price: 0, currency: 'USD' },
  { key: 'pro_marketing_monthly', tier: 'pro', message_class: 'marketing', interval: 'monthly', price: 1900, currency: 'USD', limits: { recipients: 50000 } },
  { key: 'pro_transactional_yearly', tier: 'pro', message_class: 'transactional', interval: 'yearly', price: 19000, currency: 'EUR' },
];

let dns: DnsServer;
let stripe: LocalStripe;
let t: TestApp;
let a: Awaited<ReturnType<typeof seedWorkspace>>;
let cookie: string;

test.before(async () => {
  dns = await startDnsServer();
  stripe = await startStripe();
  dns.add('api.stripe.test', 'A', '127.0.0.1');
  t = await startTestApp({
    fetchCa: stripe.ca,
    env: {
      MAILWRIGHT_RATE_LIMIT: '0',
      MAILWRIGHT_PUBLIC_URL: PUBLIC,
      MAILWRIGHT_DNS_SERVERS: dns.address,
      MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true',
      MAILWRIGHT_PLANS: JSON.stringify(PLANS),
      MAILWRIGHT_BILLING_PROVIDER: 'stripe',
      MAILWRIGHT_STRIPE_SECRET_KEY: stripe.secretKey,
      MAILWRIGHT_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      MAILWRIGHT_STRIPE_API_URL: stripe.namedUrl,
    },
  });
  a = await seedWorkspace(t);
  cookie = await login(t, a.email);
});
test.after(async () => {
  await t.stop();
  await stripe.close();
  await dns.close();
});

const checkout = (plan_key: string) => request(`${t.api}/billing/checkout`, { cookie, body: { plan_key } });
const held = async () => (await t.app.store.read(heldPlans(t.app.config, a.workspace.id))).map((h) => h.plan.key).sort();
const subscriptions = () => t.app.store.read(all<Record<string, any>>('SELECT * FROM subscriptions WHERE workspace_id = ? ORDER BY created_at, id', a.workspace.id));
const checkoutRow = (id: string) => t.app.store.read(get<Record<string, any>>('SELECT * FROM checkout_sessions WHERE id = ?', id));
/** Exactly what Stripe posts: the JSON body and its Stripe-Signature header, no credential. */
const deliver = (body: string, signature: string | null) =>
  request(`${t.api}/billing/stripe/webhook`, { body, headers: { 'content-type': 'application/json; charset=utf-8', ...(signature === null ? {} : { 'stripe-signature': signature }) } });
const nowS = () => Math.floor(Date.now() / 1000);

test('checkout creates a Stripe Checkout Session with the exact documented request, and answers its url', async () => {
  stripe.reset();
  const res = await checkout('pro_marketing_monthly');
  assert.is(res.status, 200, JSON.stringify(res.body));
  const id = res.body.session_id as string;
  assert.match(id, /^chk_/);
  assert.is(stripe.requests.length, 1);
  const sent = stripe.requests[0]!;
  assert.is(sent.method, 'POST');
  assert.is(sent.path, '/v1/checkout/sessions');
  assert.is(sent.headers.authorization, `Bearer ${stripe.secretKey}`);
  assert.is(sent.headers['content-type'], 'application/x-www-form-urlencoded');
  assert.is(sent.headers['idempotency-key'], id);
  assert.is(sent.headers.host, `api.stripe.test:${stripe.port}`);
  assert.equal(sent.form, {
    mode: 'subscription',
    client_reference_id: id,
    success_url: `${PUBLIC}/billing/checkout/${id}?result=success`,
    cancel_url: `${PUBLIC}/billing/checkout/${id}?result=canceled`,
    'line_items[0][quantity]': '1',
    'line_items[0][price_data][currency]': 'usd',
    'line_items[0][price_data][unit_amount]': '1900',
    'line_items[0][price_data][recurring][interval]': 'month',
    'line_items[0][price_data][product_data][name]': 'Mailwright pro (marketing, monthly)',
    'metadata[workspace_id]': a.workspace.id,
    'metadata[plan_key]': 'pro_marketing_monthly',
    'metadata[checkout_id]': id,
    'subscription_data[metadata][workspace_id]': a.workspace.id,
    'subscription_data[metadata][plan_key]': 'pro_marketing_monthly',
  });
  const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === id)!;
  assert.equal(res.body, { url: session.url, session_id: id });
  const row = (await checkoutRow(id))!;
  assert.equal([row.provider, row.provider_session_id, row.state, row.url, row.workspace_id], ['stripe', session.id, 'open', session.url, a.workspace.id]);
  // A yearly plan in another currency: interval year, currency lower-case.
  const yearly = await checkout('pro_transactional_yearly');
  assert.is(yearly.status, 200);
  const form = stripe.requests[1]!.form;
  assert.equal([form['line_items[0][price_data][currency]'], form['line_items[0][price_data][unit_amount]'], form['line_items[0][price_data][recurring][interval]']], ['eur', '19000', 'year']);
  assert.equal(await held(), ['selfhosted_transactional_monthly'], 'nothing is held before Stripe says it is paid');
});

test('the webhook with a valid signature activates the plan of that checkout; a duplicate delivery changes nothing', async () => {
  const started = await checkout('pro_marketing_monthly');
  const cs = (await checkoutRow(started.body.session_id))!.provider_session_id as string;
  // The box's page for a Stripe checkout waits for Stripe and offers no button.
  const page = await request(`${t.url}/billing/checkout/${started.body.session_id}?result=success`, { cookie });
  assert.is(page.status, 200);
  assert.match(page.body, 'Payment received');
  assert.not.match(page.body, '<form');
  const forged = await request(`${t.url}/billing/checkout/${started.body.session_id}`, { method: 'POST', cookie, headers: { origin: PUBLIC }, body: '' });
  assert.is(forged.status, 404, 'a Stripe checkout cannot be confirmed on the page without paying');

  const event = JSON.stringify(stripe.completedEvent(cs));
  const res = await deliver(event, stripeSignature(event, WEBHOOK_SECRET));
  assert.equal([res.status, res.body], [200, { received: true }]);
  assert.equal(await held(), ['pro_marketing_monthly', 'selfhosted_transactional_monthly']);
  const subs = await subscriptions();
  assert.is(subs.length, 1);
  assert.equal([subs[0]!.plan_key, subs[0]!.state, subs[0]!.provider, subs[0]!.provider_ref], ['pro_marketing_monthly', 'active', 'stripe', stripe.sessions.get(cs)!.subscription]);
  assert.is((await checkoutRow(started.body.session_id))!.state, 'completed');

  // Stripe delivers at least once: the same event again (a new signature, as a retry has) changes nothing.
  const again = await deliver(event, stripeSignature(event, WEBHOOK_SECRET));
  assert.equal([again.status, again.body], [200, { received: true }]);
  assert.equal(await subscriptions(), subs);
  assert.is((await checkout('pro_marketing_monthly')).status, 409, 'now held');
});

test('an invalid signature, a tampered body, a missing header or an old timestamp is 400 and changes nothing', async () => {
  const started = await checkout('pro_transactional_yearly');
  const cs = (await checkoutRow(started.body.session_id))!.provider_session_id as string;
  const event = JSON.stringify(stripe.completedEvent(cs));
  const before = await subscriptions();
  const cases: Array<[string, string, string | null]> = [
    ['signed with another secret', event, stripeSignature(event, 'whsec_not_ours')],
    ['a body changed after signing', event.replace('"paid"', '"paid" '), stripeSignature(event, WEBHOOK_SECRET)],
    ['no header', event, null],
    ['an empty header', event, ''],
    ['only a v0 signature', event, stripeSignature(event, WEBHOOK_SECRET).replace('v1=', 'v0=')],
    ['no timestamp', event, stripeSignature(event, WEBHOOK_SECRET).replace(/^t=\d+,/, '')],
    ['a timestamp other than the one signed', event, stripeSignature(event, WEBHOOK_SECRET).replace(/^t=\d+/, `t=${nowS() + 1}`)],
    // A minute past the 300 s tolerance: these are checked one after the other, seconds later on a slow machine.
    ['a replay older than 300 s', event, stripeSignature(event, WEBHOOK_SECRET, nowS() - 360)],
    ['a timestamp far in the future', event, stripeSignature(event, WEBHOOK_SECRET, nowS() + 360)],
    ['a truncated signature', event, stripeSignature(event, WEBHOOK_SECRET).slice(0, -2)],
  ];
  for (const [label, body, signature] of cases) {
    const res = await deliver(body, signature);
    assert.is(res.status, 400, label);
    assert.is(res.body.error.code, 'invalid_signature', label);
  }
  assert.equal(await subscriptions(), before);
  assert.is((await checkoutRow(started.body.session_id))!.state, 'open');
  // Within the tolerance, and with several v1 signatures of which one is right (a secret being rolled), it passes.
  const t0 = nowS() - 290;
  const good = stripeSignature(event, WEBHOOK_SECRET, t0);
  const res = await deliver(event, `${stripeSignature(event, 'whsec_old', t0)},${good.split(',')[1]},v0=abc`);
  assert.is(res.status, 200);
  assert.equal(await held(), ['pro_marketing_monthly', 'pro_transactional_yearly']);
});

test('other events are acknowledged and ignored; unpaid sessions wait for async_payment_succeeded; unknown sessions change nothing', async () => {
  const signed = (body: unknown) => {
    const text = JSON.stringify(body);
    return deliver(text, stripeSignature(text, WEBHOOK_SECRET));
  };
  const before = await subscriptions();
  assert.equal((await signed({ id: 'evt_1', object: 'event', type: 'invoice.paid', data: { object: { id: 'in_1', object: 'invoice' } } })).body, { received: true });
  assert.equal((await signed({ id: 'evt_2', object: 'event', type: 'checkout.session.completed', data: { object: { id: 'cs_test_not_ours', payment_status: 'paid', client_reference_id: 'chk_x' } } })).body, { received: true });
  assert.equal(await subscriptions(), before);
  const notEvent = await deliver('{"hello":1}', stripeSignature('{"hello":1}', WEBHOOK_SECRET));
  assert.is(notEvent.status, 400);

  await request(`${t.api}/billing/cancel`, { cookie, body: { message_class: 'marketing' } });
  const started = await checkout('pro_marketing_monthly');
  const cs = (await checkoutRow(started.body.session_id))!.provider_session_id as string;
  const completed = stripe.completedEvent(cs);
  completed.data.object.payment_status = 'unpaid'; // a bank debit still clearing
  assert.is((await signed(completed)).status, 200);
  assert.is((await checkoutRow(started.body.session_id))!.state, 'open');
  assert.equal(await held(), ['pro_transactional_yearly']);
  assert.is((await signed(stripe.completedEvent(cs, 'checkout.session.async_payment_succeeded'))).status, 200);
  assert.equal(await held(), ['pro_marketing_monthly', 'pro_transactional_yearly']);
});

test('cancel never calls Stripe; Stripe errors and unsafe answers are 502 and record nothing', async () => {
  stripe.reset();
  const res = await request(`${t.api}/billing/cancel`, { cookie, method: 'POST' });
  assert.equal([res.status, res.body], [200, { ok: true }]);
  assert.equal(await held(), ['selfhosted_transactional_monthly']);
  assert.is(stripe.requests.length, 0);

  const rows = async () => (await t.app.store.read(value<number>('SELECT count(*) FROM checkout_sessions')))!;
  const count = await rows();
  stripe.answerWith(400, { error: { type: 'invalid_request_error', message: 'Invalid currency: xxx' } });
  const refused = await checkout('pro_marketing_monthly');
  assert.equal([refused.status, refused.body.error.code], [502, 'billing_provider_error']);
  assert.match(refused.body.error.message, 'Invalid currency');
  stripe.answerWith(200, { id: 'cs_test_1', url: 'javascript:alert(1)' });
  assert.equal((await checkout('pro_marketing_monthly')).body.error.code, 'billing_provider_error');
  stripe.answerWith(302, '', { location: 'https://169.254.169.254/' });
  assert.equal((await checkout('pro_marketing_monthly')).body.error.code, 'billing_provider_unreachable');
  stripe.reset();
  assert.is(await rows(), count);
});

test('a Stripe API URL on a private address is refused unless allow_private_fetch is on', async () => {
  const strict = await startTestApp({
    fetchCa: stripe.ca,
    env: { MAILWRIGHT_PUBLIC_URL: PUBLIC, MAILWRIGHT_PLANS: JSON.stringify(PLANS), MAILWRIGHT_BILLING_PROVIDER: 'stripe', MAILWRIGHT_STRIPE_SECRET_KEY: stripe.secretKey, MAILWRIGHT_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, MAILWRIGHT_STRIPE_API_URL: stripe.url },
  });
  try {
    stripe.reset();
    const owner = await seedWorkspace(strict);
    const res = await request(`${strict.api}/billing/checkout`, { cookie: await login(strict, owner.email), body: { plan_key: 'pro_marketing_monthly' } });
    assert.equal([res.status, res.body.error.code], [502, 'billing_provider_unreachable']);
    assert.match(res.body.error.message, 'loopback');
    assert.is(stripe.requests.length, 0, 'nothing was sent');
  } finally {
    await strict.stop();
  }
});

test('signature check: Stripe’s documented scheme, constant-time over every v1', () => {
  const body = Buffer.from('{"id":"evt_1"}');
  const now = 1_700_000_000_000;
  const header = stripeSignature(body.toString(), 'whsec_x', now / 1000);
  assert.equal(verifyStripeSignature(header, body, 'whsec_x', now), { ok: true, timestamp: now / 1000 });
  assert.is(verifyStripeSignature(header, body, 'whsec_x', now + 300_000).ok, true, 'exactly at the tolerance');
  assert.is(verifyStripeSignature(header, body, 'whsec_x', now + 301_000).ok, false);
  assert.is(verifyStripeSignature(header.toUpperCase(), body, 'whsec_x', now).ok, false, 'T= and V1= are not the names');
  assert.is(verifyStripeSignature(`${header},v1=zz`, body, 'whsec_x', now).ok, true, 'a malformed extra v1 is skipped');
  assert.is(verifyStripeSignature('garbage', body, 'whsec_x', now).ok, false);
});

test.run();
