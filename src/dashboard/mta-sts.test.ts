// MTA-STS on the domain page of a receiving domain, in a real browser: its three records among the DNS records
// with the host to type, the mode, and the switch to enforce, which asks first and then changes the policy the
// box serves (and so the id the MTA-STS record must carry).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { request, seedWorkspace, startTestApp, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { openBrowser, signedIn } from '../testkit/browser.ts';
import { run } from '../db/query.ts';

let browser: Browser;
let t: TestApp;
let page: Page;
let errors: Error[];
let key: string;

test.before(async () => {
  browser = await openBrowser();
  t = await startTestApp();
  const seeded = await seedWorkspace(t);
  key = seeded.key;
  ({ page, errors } = await signedIn(browser, t, seeded.email, TEST_PASSWORD));
});
test.after(async () => {
  await browser?.close();
  await t?.stop();
});

const policy = (host: string) =>
  new Promise<string>((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: t.running.http.port, path: '/.well-known/mta-sts.txt', headers: { host } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });

test('the domain page shows the MTA-STS records and mode, and asks before switching to enforce', async () => {
  const d = (await request(`${t.api}/domains`, { key, body: { name: 'shop.example' } })).body;
  await request(`${t.api}/domains/${d.id}/inbound/setup`, { method: 'POST', key });
  // The MX check needs DNS this test has none of: inbound is made ready as a verify would.
  await t.app.store.write(() => run("UPDATE domains SET inbound_status = 'ready' WHERE id = ?", d.id));
  await page.goto(`${t.url}/domains/${d.id}`);
  for (const kind of ['MTA-STS', 'MTA-STS-HOST', 'TLS-RPT']) await page.locator(`tr[data-record="${kind}"]`).waitFor();
  const before = (await request(`${t.api}/domains/${d.id}`, { key })).body.mtaSts;
  assert.ok((await page.locator('tr[data-record="MTA-STS"]').innerText()).includes(`v=STSv1; id=${before.policyId};`));
  assert.ok((await page.locator('tr[data-record="MTA-STS-HOST"]').innerText()).includes('mx.mailwright.test'));
  const card = page.getByTestId('mta-sts');
  await card.getByText('Testing').waitFor();
  assert.ok((await card.innerText()).includes('https://mta-sts.shop.example/.well-known/mta-sts.txt'));

  await card.getByRole('button', { name: 'Switch to enforce' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText('Senders that honour MTA-STS will refuse to deliver if TLS to this box fails').waitFor();
  assert.match(await policy('mta-sts.shop.example'), /mode: testing/, 'nothing changes before the owner confirms');
  await dialog.getByRole('button', { name: 'Enforce' }).click();
  await card.getByText('Enforce', { exact: true }).waitFor();
  const after = (await request(`${t.api}/domains/${d.id}`, { key })).body.mtaSts;
  assert.is(after.mode, 'enforce');
  await page.locator('tr[data-record="MTA-STS"]').getByText(`v=STSv1; id=${after.policyId};`).waitFor();
  assert.match(await policy('mta-sts.shop.example'), /mode: enforce\r\n/);

  await card.getByRole('button', { name: 'Back to testing' }).click();
  await card.getByText('Testing', { exact: true }).waitFor();
  assert.match(await policy('mta-sts.shop.example'), /mode: testing\r\n/);
  assert.equal(errors, []);
});

test.run();
