// Settings' "Change passphrase" form in a real browser (Debian's Chromium) against the real app: the rule and
// the box's refusals shown in the form, then a change that keeps this browser signed in (its session renewed)
// and signs out another one at its next request.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { request, seedWorkspace, startTestApp, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { openBrowser, signedIn } from '../testkit/browser.ts';

let browser: Browser;
let t: TestApp;
let email = '';

test.before(async () => {
  browser = await openBrowser();
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  ({ email } = await seedWorkspace(t));
});
test.after(async () => {
  await browser?.close();
  await t?.stop();
});

const NEW = 'quiet lantern over 9 hills';

test('Settings: the passphrase form shows the rule and the errors, changes it, and signs out the other browser', async () => {
  const other = await signedIn(browser, t, email, TEST_PASSWORD);
  const me = await signedIn(browser, t, email, TEST_PASSWORD);
  const { page, errors } = me;
  try {
    await other.page.goto(`${t.url}/settings`);
    await other.page.getByRole('heading', { name: 'Signed-in browsers' }).waitFor();

    await page.goto(`${t.url}/settings`);
    const form = page.locator('[aria-label="Change passphrase"]');
    await form.getByText('At least 12 characters with at least 6 different ones').waitFor();
    const fill = async (current: string, next: string, again = next) => {
      await form.getByLabel('Current passphrase').fill(current);
      // Its label holds the rule too, so it is found by name.
      await form.locator('input[name=new_password]').fill(next);
      await form.getByLabel('New passphrase again').fill(again);
      await form.getByRole('button', { name: 'Change passphrase' }).click();
    };

    await fill(TEST_PASSWORD, 'aaaaaaaaaaaaaaaa');
    await form.getByRole('alert').filter({ hasText: 'The new passphrase repeats too few different characters' }).waitFor();
    await fill(TEST_PASSWORD, NEW, `${NEW}!`);
    await form.getByRole('alert').filter({ hasText: 'The two new passphrases differ' }).waitFor();
    await fill('not my passphrase', NEW);
    await form.getByRole('alert').filter({ hasText: 'The current passphrase is not correct' }).waitFor();
    assert.is((await request(`${t.api}/auth/login`, { body: { email, password: NEW } })).status, 401, 'nothing changed yet');

    await fill(TEST_PASSWORD, NEW);
    await page.locator('.toast[role=status]', { hasText: 'Passphrase changed; the 1 other signed-in browser was signed out' }).waitFor();
    assert.is(await form.getByLabel('Current passphrase').inputValue(), '', 'the form is empty again');
    // The list is loaded again: this browser alone, still signed in with its renewed session.
    await page.locator('[aria-label="Sessions"] li').first().waitFor();
    assert.is(await page.locator('[aria-label="Sessions"] li').count(), 1);
    await page.reload();
    await page.getByRole('heading', { name: 'Signed-in browsers' }).waitFor();
    assert.ok(page.url().endsWith('/settings'), page.url());

    // The other browser finds its session ended at its next request.
    await other.page.reload();
    await other.page.waitForURL(/\/login$/);

    assert.is((await request(`${t.api}/auth/login`, { body: { email, password: TEST_PASSWORD } })).status, 401, 'the old passphrase fails');
    assert.is((await request(`${t.api}/auth/login`, { body: { email, password: NEW } })).status, 200, 'the new one signs in');
    assert.equal(errors, []);
  } finally {
    await other.context.close();
    await me.context.close();
  }
});

test.run();
