// Settings' Spam card in a real browser (Debian's Chromium) against the real app: what the filter has learned,
// entries added to each list (the box's refusals shown in the form), listed, and removed, each change read back
// through the API.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { request, seedWorkspace, startTestApp, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { openBrowser, signedIn } from '../testkit/browser.ts';

let browser: Browser;
let t: TestApp;
let email = '';
let key = '';

test.before(async () => {
  browser = await openBrowser();
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  ({ email, key } = await seedWorkspace(t));
});
test.after(async () => {
  await browser?.close();
  await t?.stop();
});

const entries = async (list: string) => (await request(`${t.api}/spam/${list}`, { key })).body.data.map((e: { entry: string }) => e.entry);

test('Settings: the Spam card says what the filter learned, adds to each list, shows refusals, removes', async () => {
  const { page, errors, context } = await signedIn(browser, t, email, TEST_PASSWORD);
  try {
    await page.goto(`${t.url}/settings`);
    const card = page.locator('[aria-label="Spam"]');
    await card.getByText('It has learned 0 spam and 0 other messages from your moves to and from Spam and your replies; until it has 50 of each').waitFor();
    const allow = card.locator('section[aria-label="Always allow"]');
    const block = card.locator('section[aria-label="Always block"]');
    await allow.getByText('No sender is always allowed').waitFor();
    await block.getByText('No sender is blocked').waitFor();

    await block.getByLabel('Address or domain to block').fill('Spammer.Example');
    await block.getByRole('button', { name: 'Add' }).click();
    await block.getByRole('listitem').filter({ hasText: 'spammer.example' }).getByText('domain and subdomains').waitFor();
    assert.equal(await entries('block'), ['spammer.example']);
    assert.is(await block.getByLabel('Address or domain to block').inputValue(), '', 'the field is empty again');

    // The box's refusals, in its words.
    await allow.getByLabel('Address or domain to allow').fill('spammer.example');
    await allow.getByRole('button', { name: 'Add' }).click();
    await allow.getByRole('alert').filter({ hasText: 'spammer.example is on your block list: remove it there first' }).waitFor();
    await allow.getByLabel('Address or domain to allow').fill('co.uk');
    await allow.getByRole('button', { name: 'Add' }).click();
    await allow.getByRole('alert').filter({ hasText: '"co.uk" is a public suffix' }).waitFor();
    assert.equal(await entries('allow'), []);

    await allow.getByLabel('Address or domain to allow').fill('Pal@Friend.example');
    await allow.getByRole('button', { name: 'Add' }).click();
    await allow.getByRole('listitem').filter({ hasText: 'pal@friend.example' }).waitFor();
    assert.equal(await allow.getByRole('alert').count(), 0, 'the error is gone');
    assert.equal(await entries('allow'), ['pal@friend.example']);

    await block.getByRole('button', { name: 'Remove spammer.example' }).click();
    await block.getByText('No sender is blocked').waitFor();
    assert.equal(await entries('block'), []);
    // After a reload the page shows what the box keeps.
    await page.reload();
    await page.locator('section[aria-label="Always allow"]').getByRole('listitem').filter({ hasText: 'pal@friend.example' }).waitFor();
    assert.equal(errors, []);
  } finally {
    await context.close();
  }
});

test.run();
