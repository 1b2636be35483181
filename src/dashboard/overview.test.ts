// Overview, Billing and Settings in a real browser against the real app, after real sends: usage against the
// plan's limits, the activity chart drawn, the queue and doctor's checks, resuming paused sending, choosing a
// plan through the box's checkout page and canceling it, and the session list (this browser marked, another
// revoked). No page errors, no CSP refusals, nothing wider than a phone at 390 px.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { freePort, login, request, TEST_PASSWORD } from '../testkit/app.ts';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { openBrowser, PHONE, screenshots, signedIn } from '../testkit/browser.ts';
import { run } from '../db/query.ts';

const plan = (tier: string, messageClass: string, price: number, limits: Record<string, number>) => ({ key: `${tier}_${messageClass}_monthly`, tier, message_class: messageClass, interval: 'monthly', price, currency: 'USD', limits });
const PLANS = [
  plan('selfhosted', 'transactional', 0, { recipients: 1000, attachment_bytes: 10 * 1024 * 1024 }),
  plan('pro', 'transactional', 1900, { recipients: 50_000 }),
  plan('pro', 'marketing', 2900, { recipients: 10_000 }),
];

let browser: Browser;
let s: OutboundScene;
let page: Page;
let errors: Error[];
const refused: string[] = [];

test.before(async () => {
  browser = await openBrowser();
  // The checkout URL is built from the public URL: it must be where this app really listens.
  const port = String(await freePort());
  s = await startOutboundScene({ env: { MAILWRIGHT_PLANS: JSON.stringify(PLANS), MAILWRIGHT_HTTP_PORT: port, MAILWRIGHT_PUBLIC_URL: `http://127.0.0.1:${port}` } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
  const sent = await Promise.all([
    s.send({ from: 'app@sender.test', to: ['ada@dest.test', 'grace@dest.test'], subject: 'Your receipt', text: 'Thanks' }),
    s.send({ from: 'app@sender.test', to: 'linus@dest.test', subject: 'Sign-in code', text: '123456' }),
  ]);
  for (const res of sent) assert.is(res.status, 200, JSON.stringify(res.body));
  await eventually(async () => (await Promise.all(sent.map((r) => s.events(r.body.id)))).flat().filter((e) => e.type === 'delivered').length === 3, 10_000, 'three deliveries');
  ({ page, errors } = await signedIn(browser, s.t, s.email, TEST_PASSWORD));
  // The browser reports every 401 as a console error; after signing out, asking whether there is a session
  // (GET /profile, which the app does quietly) is one, and expected. Anything else is a fault.
  page.on('console', (m) => m.type() === 'error' && !(page.url().endsWith('/login') && /status of 401/.test(m.text())) && refused.push(m.text()));
});
test.after(async () => {
  await browser?.close();
  await s?.stop();
});

async function fitsAPhone(p: Page): Promise<void> {
  const size = p.viewportSize()!;
  await p.setViewportSize(PHONE);
  // The chart follows its card through a ResizeObserver, a frame or more after the resize: wait for it.
  // A string: this project's Node typings have no DOM.
  await p.waitForFunction('document.documentElement.scrollWidth <= document.documentElement.clientWidth', undefined, { timeout: 3000 }).catch(() => {});
  const [scroll, client] = await p.evaluate<[number, number]>('[document.documentElement.scrollWidth, document.documentElement.clientWidth]');
  await p.setViewportSize(size);
  assert.ok(scroll <= client, `the page is ${scroll} px wide at ${client} px`);
}

test('Overview: usage against the plan, the chart, the queue and the health checks', async () => {
  await page.goto(`${s.t.url}/overview`);
  const recipients = page.getByLabel('Recipients this month');
  await recipients.getByText('of 1,000').waitFor();
  assert.is((await recipients.locator('.stat').textContent())?.trim(), '3');
  assert.is(await recipients.getByRole('progressbar').getAttribute('aria-valuenow'), '0');
  await page.getByLabel('Attachments this month').getByText('of 10.0 MB').waitFor();
  await page.getByLabel('Reputation').getByText('Healthy').waitFor();

  const activity = page.getByLabel('Activity');
  await activity.locator('.chart canvas').waitFor();
  assert.ok(await activity.getByText('Delivered', { exact: true }).isVisible());
  assert.is(await activity.getByRole('link', { name: '30 days' }).getAttribute('aria-current'), 'page');

  await page.getByLabel('Outbound queue').getByText('Nothing waiting').waitFor();
  // ACME is off here: the card shows the self-signed certificate the box made for its hostname.
  const certificate = page.getByLabel('TLS certificate');
  await certificate.getByText(/self-signed, issued by mx\.mailwright\.test; expires/).waitFor();
  assert.ok(await certificate.getByText('mx.mailwright.test', { exact: true }).isVisible());
  assert.match((await certificate.locator('.badge').textContent()) ?? '', /^\d+ days left$/);
  // The scene's DNS gives the box an address but no PTR; the verified domain has every record.
  const checks = page.getByLabel('Health checks');
  await checks.getByRole('region', { name: 'sender.test' }).getByText('All good').waitFor();
  await checks.getByText('127.0.0.1 has no PTR record').waitFor();
  await screenshots(page, 'overview');
  await fitsAPhone(page);

  await activity.getByRole('link', { name: '7 days' }).click();
  await page.waitForURL(/\/overview\?days=7$/);
  await activity.getByText('7 days', { exact: true }).and(page.locator('[aria-current=page]')).waitFor();
  await activity.locator('.chart canvas').waitFor();
  assert.is(await activity.locator('.chart canvas').count(), 1, 'one chart, the old one destroyed');
});

test('Overview: paused sending shows why, and "Resume sending" turns it back on', async () => {
  await s.t.app.store.write(() => run("UPDATE workspaces SET sending_paused_at = ?, sending_pause_reason = 'bounce rate 7.0 % over 30 days' WHERE name = 'default'", Date.now()));
  await page.goto(`${s.t.url}/overview`);
  const banner = page.getByRole('alert').filter({ hasText: 'Sending is paused' });
  await banner.getByText('bounce rate 7.0 %').waitFor();
  await banner.getByRole('button', { name: 'Resume sending' }).click();
  await page.getByText('Sending resumed').waitFor();
  await banner.waitFor({ state: 'detached' });
  assert.is((await request(`${s.t.api}/account`, { key: s.key })).body.access.sendingPaused, false);
});

test('Billing: the plans listed, one chosen through the checkout page, then canceled', async () => {
  await page.goto(`${s.t.url}/billing`);
  const plans = page.locator('[aria-label=Plans] > [role=listitem]');
  await plans.first().waitFor();
  assert.equal(await plans.evaluateAll((items) => items.map((i) => i.getAttribute('aria-label'))), ['Selfhosted transactional', 'Pro transactional', 'Pro marketing']);
  await plans.filter({ hasText: 'Selfhosted transactional' }).getByText('Current plan').waitFor();
  await plans.filter({ hasText: 'Pro marketing' }).getByText('$29.00').waitFor();
  await screenshots(page, 'billing');
  await fitsAPhone(page);

  await page.getByRole('button', { name: 'Choose Pro marketing' }).click();
  await page.waitForURL(/\/billing\/checkout\/chk_/);
  await page.getByRole('button', { name: 'Confirm' }).click();
  await page.getByText('Subscription active').waitFor();

  await page.goto(`${s.t.url}/billing`);
  await plans.filter({ hasText: 'Pro marketing' }).getByText('Current plan').waitFor();
  const held = page.getByLabel('Held plan pro_marketing_monthly');
  await held.getByRole('button', { name: 'Cancel plan' }).click();
  const dialog = page.getByRole('dialog', { name: 'Cancel Pro marketing?' });
  await dialog.getByRole('button', { name: 'Cancel plan' }).click();
  await page.getByText('Pro marketing canceled').waitFor();
  await held.waitFor({ state: 'detached' });
  assert.equal((await request(`${s.t.api}/account`, { key: s.key })).body.billing.subscriptions.map((x: any) => x.planKey), ['selfhosted_transactional_monthly']);
});

test('Settings: the user and workspace, this browser marked, another session revoked, then signing out', async () => {
  const other = await login(s.t, s.email);
  await page.goto(`${s.t.url}/settings`);
  await page.getByLabel('Signed in as').getByText(s.email).waitFor();
  await page.getByLabel('Workspace').getByText('default', { exact: true }).waitFor();
  const rows = page.getByRole('list', { name: 'Sessions' }).getByRole('listitem');
  await eventually(async () => (await rows.count()) === 2, 5_000, 'two sessions listed');
  const current = rows.filter({ hasText: 'This browser' });
  assert.is(await current.count(), 1);
  assert.is(await current.getAttribute('aria-current'), 'true');
  await current.getByRole('button', { name: 'Sign out this browser' }).waitFor();
  await screenshots(page, 'settings');
  await fitsAPhone(page);

  await rows.filter({ hasNotText: 'This browser' }).getByRole('button', { name: /^Revoke/ }).click();
  await page.getByText('Session revoked').waitFor();
  await eventually(async () => (await rows.count()) === 1, 5_000, 'the revoked session gone from the list');
  assert.is((await request(`${s.t.api}/profile`, { cookie: other })).status, 401);

  await current.getByRole('button', { name: 'Sign out this browser' }).click();
  await page.waitForURL(/\/login$/);
  assert.equal(errors, []);
  assert.equal(refused, []);
});

test.run();
