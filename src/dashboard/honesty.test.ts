// The dashboard says what is true without a reload, in a real browser (Debian's Chromium through playwright-core)
// against the real app with mail received over SMTP: the sidebar's unread counts and labels follow mail that
// arrives (on any page), mail read, unread or archived, and labels made from the menu or the Labels page; the
// composer's From starts as the only sending address, then as the last one used; the Scheduled list shows when
// each send will go.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Page } from 'playwright-core';
import { request } from '../testkit/app.ts';
import type { InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { mailboxScene, type MailboxScene } from '../testkit/browser.ts';

// The page's own globals, in the functions run there.
declare const document: any;
declare const window: any;

let m: MailboxScene;
let s: InboundScene;
let page: Page;
let errors: Error[];

test.before(async () => {
  m = await mailboxScene();
  ({ s, page, errors } = m);
  s.routeTo('dest.test');
});
test.after(() => m?.stop());

const api = (path: string, opts: { method?: string; body?: unknown } = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });

const receive = (subject: string) => s.receive(subject);

/** The unread count beside Inbox in the sidebar (none shown is 0). */
const inboxCount = async () => Number((await page.locator('nav a[href="/mail/inbox"] .count').allInnerTexts())[0] ?? 0);
const countBecomes = (want: number, what: string) => eventually(async () => (await inboxCount()) === want, 10_000, `${what}: Inbox ${want}`);
/** Set once, gone after any reload: the page is the same page. */
const markPage = () => page.evaluate(() => void (window.samePage = true));
const samePage = () => page.evaluate(() => window.samePage === true);

test('From: the only sending address, then the last one sent from, per workspace and user', async () => {
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.getByRole('button', { name: 'Compose', exact: true }).click();
  const compose = page.getByRole('dialog', { name: 'New message' });
  const from = compose.locator('input[name=from]');
  await eventually(async () => (await from.inputValue()) === s.inbox.address, 5_000, 'From filled with the one address');
  await page.keyboard.press('Escape');
  await compose.waitFor({ state: 'detached' });

  // Two addresses and nothing sent yet: From waits for a choice.
  const sales = await s.createInbox(s.domain.id, 'sales');
  await page.getByRole('button', { name: 'Compose', exact: true }).click();
  // The fields show once the sending addresses are known (compose.tsx): From is as it will stay.
  await compose.locator('input[name=to]').waitFor();
  assert.is(await from.inputValue(), '', 'no address chosen among two');
  await from.fill(sales.address);
  await compose.locator('input[name=to]').fill('ann@dest.test');
  await compose.locator('input[name=subject]').fill('From sales');
  await compose.getByLabel('Message').fill('Hello from sales.');
  await compose.getByRole('button', { name: 'Send', exact: true }).click();
  await page.locator('.toast', { hasText: 'Sent' }).waitFor();
  await compose.waitFor({ state: 'detached' });
  const sent = (await api('/emails?direction=out')).body.data;
  assert.equal(sent.map((e: any) => [e.subject, e.from.address]), [['From sales', sales.address]]);

  // The next message, after a reload too, starts from the address last used.
  await page.reload();
  await page.getByRole('button', { name: 'Compose', exact: true }).click();
  await eventually(async () => (await from.inputValue()) === sales.address, 5_000, 'From filled with the last one used');
  await page.keyboard.press('Escape');
  assert.equal(errors, []);
});

test('the Inbox count follows mail that arrives, is read, unread and archived, with no reload', async () => {
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.getByText('No mail in Inbox').waitFor();
  await markPage();
  const before = await inboxCount();
  const id = await receive('Counted live');
  await countBecomes(before + 1, 'a message arrived');
  await page.locator('.mail-row', { hasText: 'Counted live' }).click();
  await countBecomes(before, 'read by opening it');
  await page.getByRole('button', { name: 'Unread', exact: true }).click();
  await countBecomes(before + 1, 'marked unread');
  await page.getByRole('button', { name: 'Archive', exact: true }).click();
  await countBecomes(before, 'archived');
  assert.ok((await api(`/emails/${id}`)).body.archivedAt, 'archived on the box');

  // On another page, the sidebar still hears the box.
  await page.getByRole('link', { name: 'Domains', exact: true }).click();
  await page.waitForURL(/\/domains$/);
  await receive('Counted elsewhere');
  await countBecomes(before + 1, 'a message arrived while on Domains');
  assert.ok(await samePage(), 'no reload happened');
  assert.equal(errors, []);
});

test('a label made from the menu or the Labels page shows in the sidebar at once', async () => {
  await receive('Give me a label');
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.locator('.mail-row', { hasText: 'Give me a label' }).click();
  await markPage();
  await page.getByRole('button', { name: 'Labels', exact: true }).click();
  await page.getByLabel('New label').fill('Made in the menu');
  await page.keyboard.press('Enter');
  const side = (name: string) => page.locator('nav a[href^="/mail/label/"]', { hasText: name });
  await side('Made in the menu').waitFor({ timeout: 10_000 });

  await page.getByRole('link', { name: 'Labels and rules' }).click();
  await page.getByRole('button', { name: 'New label' }).first().click();
  const dialog = page.getByRole('dialog', { name: 'New label' });
  await dialog.getByLabel('Name').fill('Made on the page');
  await dialog.getByRole('button', { name: 'Create label' }).click();
  await side('Made on the page').waitFor({ timeout: 10_000 });
  assert.ok(await samePage(), 'no reload happened');
  assert.equal(errors, []);
});

test('Scheduled shows when each send will go, not when it was scheduled', async () => {
  const at = new Date(Date.now() + 12 * 24 * 3600_000);
  at.setUTCHours(9, 30, 0, 0);
  const res = await api('/emails', { body: { from: s.inbox.address, to: ['bea@dest.test'], subject: 'Goes later', text: 'Later.', scheduled_at: at.toISOString() } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  await page.goto(`${s.t.url}/mail/scheduled`);
  const date = page.locator('.mail-row', { hasText: 'Goes later' }).locator('.date');
  await date.waitFor();
  // What the row should say, in the browser's own locale and zone: the day it goes (12 days ahead, so a date).
  const [day, full] = await page.evaluate((iso: string) => {
    const d = new Date(iso);
    const sameYear = d.getFullYear() === new Date().getFullYear();
    return [d.toLocaleDateString([], { month: 'short', day: 'numeric', year: sameYear ? undefined : 'numeric' }), d.toLocaleString()];
  }, at.toISOString());
  assert.is((await date.innerText()).trim(), day);
  assert.is(await date.getAttribute('title'), `Goes ${full}`);
  assert.is(await date.locator('svg[aria-label="Scheduled for"]').count(), 1, 'marked as scheduled');
  assert.equal(errors, []);
});

test.run();
