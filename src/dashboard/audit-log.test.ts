// Settings > Audit log in a real browser (Debian's Chromium) against the real app: the rows of what was done
// (a key made in the dashboard, a domain added and deleted with a key) with who did it and from where, the
// deleted domain still named, and the filter by kind of action.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { login, request, seedWorkspace, startTestApp, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { openBrowser, signedIn } from '../testkit/browser.ts';

let browser: Browser;
let t: TestApp;
let owner: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  browser = await openBrowser();
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  owner = await seedWorkspace(t);
});
test.after(async () => {
  await browser?.close();
  await t?.stop();
});

test('Settings > Audit log lists who did what, keeps deleted targets named, and filters by kind', async () => {
  const cookie = await login(t, owner.email);
  assert.is((await request(`${t.api}/keys`, { body: { name: 'deploy bot' }, cookie })).status, 201);
  const d = await request(`${t.api}/domains`, { body: { name: 'gone.example' }, key: owner.key });
  assert.is(d.status, 201);
  assert.is((await request(`${t.api}/domains/${d.body.id}`, { method: 'DELETE', key: owner.key })).status, 200);

  const { page, errors, context } = await signedIn(browser, t, owner.email, TEST_PASSWORD);
  try {
    await page.goto(`${t.url}/settings`);
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.waitForURL(/\/settings\/audit$/);
    const table = page.locator('table[aria-label="Audit log"]');
    await table.waitFor();
    const rows = table.locator('tbody tr');
    assert.is(await rows.count(), 3);
    const text = (await rows.allInnerTexts()).map((r) => r.replace(/\s+/g, ' '));
    assert.match(text[0], /Domain deleted gone\.example API key …\w{6} 127\.0\.0\.1/);
    assert.match(text[1], /Domain created gone\.example API key/);
    assert.match(text[2], /Key created deploy bot You 127\.0\.0\.1/);

    await page.getByLabel('Kind of action').selectOption({ label: 'Keys' });
    // The page's CSP forbids evaluating strings, so the wait polls through the locator, for at most 5 s.
    for (const until = Date.now() + 5000; (await rows.count()) !== 1 && Date.now() < until; ) await page.waitForTimeout(100);
    assert.is(await rows.count(), 1);
    assert.match(await rows.first().innerText(), /Key created/);
    await page.getByLabel('Kind of action').selectOption({ label: 'Webhooks' });
    await page.getByText('Nothing recorded yet').waitFor();
    assert.equal(errors, []);
  } finally {
    await context.close();
  }
});

test.run();
