// The domain page of a box whose own name cannot be right (the OS default `vm`), in a real browser: a banner
// says what is wrong and how to fix it, the records table offers nothing that would name `vm`, and inbound
// setup says to fix the name first instead of offering the button.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { request, seedWorkspace, startTestApp, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { openBrowser, signedIn } from '../testkit/browser.ts';

let browser: Browser;
let t: TestApp;
let page: Page;
let errors: Error[];
let key: string;

test.before(async () => {
  browser = await openBrowser();
  t = await startTestApp({ env: { MAILWRIGHT_HOSTNAME: 'vm' } });
  const seeded = await seedWorkspace(t);
  key = seeded.key;
  ({ page, errors } = await signedIn(browser, t, seeded.email, TEST_PASSWORD));
});
test.after(async () => {
  await browser?.close();
  await t?.stop();
});

test('the domain page shows the hostname banner and no record naming the box', async () => {
  const d = (await request(`${t.api}/domains`, { key, body: { name: 'shop.example' } })).body;
  await page.goto(`${t.url}/domains/${d.id}`);
  const banner = page.getByTestId('hostname-banner');
  await banner.getByText("This box's name is not ready for DNS").waitFor();
  const text = await banner.innerText();
  assert.ok(text.includes(`The box's hostname "vm" is not a fully qualified domain name`), text);
  assert.ok(text.includes('To fix: set hostname (MAILWRIGHT_HOSTNAME) to the box\'s public name, such as mail.example.com'), text);

  await page.locator('tr[data-record="DKIM"]').waitFor();
  assert.equal([await page.locator('tr[data-record="MX"]').count(), await page.locator('tr[data-record="SPF"]').count()], [0, 0]);
  assert.not.match(await page.locator('table[aria-label="DNS records"]').innerText(), /\bvm\b/);
  await page.getByTestId('inbound-card').getByText("Set the box's hostname first").waitFor();
  assert.is(await page.getByRole('button', { name: 'Set up inbound' }).count(), 0);
  assert.equal(errors, []);
});

test.run();
