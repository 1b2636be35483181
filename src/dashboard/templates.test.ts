// The Templates and Labels pages in a real browser against the real app: a template made from the welcome
// starter, its subject edited with the preview and its findings following, a test send, publishing and the
// release listed with its usage; a nested label, a rule tried with a dry run before it is saved, then saved.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { request, seedWorkspace, TEST_PASSWORD } from '../testkit/app.ts';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { openBrowser, screenshots, signedIn } from '../testkit/browser.ts';

let s: OutboundScene;
let browser: Browser;
let email: string;

test.before(async () => {
  s = await startOutboundScene();
  // The scene already seeded the default workspace's owner; this is a second member to sign in as.
  ({ email } = await seedWorkspace(s.t, { email: 'editor@mailwright.test' }));
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
  browser = await openBrowser();
});
test.after(async () => {
  await browser?.close();
  await s?.stop();
});

const call = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const subjectShown = (page: Page) => page.getByTestId('preview-subject');

/**
 * A signed-in page, with what the CSP refused in it (the preview must show styled mail without loosening it).
 * CSS transitions finish at once: the phone screenshot would otherwise catch the nav drawer mid-slide.
 */
async function open() {
  const session = await signedIn(browser, s.t, email, TEST_PASSWORD);
  const refused: string[] = [];
  session.page.on('console', (m) => m.type() === 'error' && /Content Security Policy/.test(m.text()) && refused.push(m.text()));
  const cdp = await session.context.newCDPSession(session.page);
  await cdp.send('Animation.enable');
  await cdp.send('Animation.setPlaybackRate', { playbackRate: 1000 });
  return { ...session, refused };
}

/** Screenshots from the top of the page, as someone arriving on it sees it. */
async function shoot(page: Page, name: string) {
  await page.evaluate('window.scrollTo(0, 0)');
  await screenshots(page, name);
}

test('templates: from the welcome starter to an edited, previewed, test-sent and published release', async () => {
  const { page, context, errors, refused } = await open();
  await page.goto(`${s.t.url}/templates`);
  await page.getByText('No templates yet').waitFor();

  await page.getByRole('button', { name: 'New template' }).click();
  const dialog = page.getByRole('dialog', { name: 'New template' });
  await dialog.getByRole('radio', { name: /^Welcome/ }).check();
  assert.is(await dialog.getByLabel('Key').inputValue(), 'welcome', 'the key follows the name, which follows the starter');
  await dialog.getByRole('button', { name: 'Create template' }).click();
  await page.waitForURL(/\/templates\/tmpl_[0-9A-Z]{26}$/);
  const id = new URL(page.url()).pathname.split('/')[2];

  // The starter renders with its sample data and nothing to report.
  await subjectShown(page).getByText('Welcome to Acme Cloud, Dana').waitFor();
  await page.getByTestId('findings').getByText('All clear').waitFor();
  assert.ok(await page.locator('iframe[title="HTML preview"]').isVisible(), 'the HTML is shown in a frame');

  // A placeholder nobody declared: it renders empty and the findings warn.
  await page.locator('input[name="subject"]').fill('Welcome aboard, {{user_name}} {{plan}}');
  await subjectShown(page).getByText('Welcome aboard, Dana', { exact: true }).waitFor();
  await page.locator('[data-testid="findings"] [data-code="undeclared_variable"]').waitFor();
  assert.match(await page.getByTestId('findings').innerText(), /Warning/);

  // Declared, with a sample value: it renders and the warning goes.
  await page.getByRole('button', { name: 'Add variable' }).click();
  await page.getByLabel('Key', { exact: true }).last().fill('plan');
  await page.getByLabel('Sample plan').fill('Pro');
  await subjectShown(page).getByText('Welcome aboard, Dana Pro').waitFor();
  await page.getByTestId('findings').getByText('All clear').waitFor();
  await page.getByTestId('save-status').getByText(/Saved · revision \d+/).waitFor();
  const saved = (await call(`/templates/${id}`)).body;
  assert.is(saved.draft.subjectTemplate, 'Welcome aboard, {{user_name}} {{plan}}');
  assert.equal(saved.draft.variables.at(-1), { key: 'plan', type: 'string', required: false });
  assert.equal(saved.draft.sampleData.plan, 'Pro');
  // The inline styles reach the frame (the dashboard's CSP alone would strip them): the preheader is hidden.
  const frame = page.frameLocator('iframe[title="HTML preview"]');
  assert.is(await frame.locator('h1').innerText(), 'Welcome to Acme Cloud');
  assert.is(await frame.locator('div').first().isVisible(), false, 'the hidden preheader stays hidden');
  await shoot(page, 'template-editor');

  // Someone else saves the draft meanwhile: the next edit here is refused, said so, and their version loads.
  const other = await call(`/templates/${id}/draft`, { method: 'PUT', body: { revision: saved.draft.revision, name: 'Welcome email' } });
  assert.is(other.status, 200, JSON.stringify(other.body));
  await page.locator('textarea[name="text"]').fill('Hi {{user_name}}, welcome.');
  await page.getByRole('alert').getByText('Someone else changed this draft.').waitFor();
  await page.getByRole('button', { name: 'Load their version' }).click();
  await eventually(async () => (await page.locator('input[name="name"]').inputValue()) === 'Welcome email', 10_000, 'their version');
  assert.is(await page.locator('textarea[name="text"]').inputValue(), saved.draft.textTemplate, 'the refused edit is gone');

  // A test send of the draft with the sample data.
  await page.getByRole('button', { name: 'Send test' }).click();
  const testDialog = page.getByRole('dialog', { name: 'Send a test' });
  await testDialog.locator('input[name="to"]').fill('qa@dest.test');
  assert.is(await testDialog.locator('input[name="from"]').inputValue(), 'test@sender.test');
  await testDialog.getByRole('button', { name: 'Send test' }).click();
  await testDialog.getByText('Test sent to qa@dest.test').waitFor();
  const [delivered] = await s.sink.waitForMessages(1, 10_000);
  assert.match(delivered.raw.toString(), /Subject: Welcome aboard, Dana Pro/);
  await testDialog.getByRole('button', { name: 'Close' }).click();

  // Publishing makes v1, listed with its usage, which counts real sends only.
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await page.getByRole('dialog', { name: 'Publish v1' }).getByRole('button', { name: 'Publish v1' }).click();
  await page.waitForURL(/\/releases$/);
  const release = page.locator('tr[data-release="1"]');
  await release.getByText('Live').waitFor();
  assert.match(await release.innerText(), /Welcome aboard, \{\{user_name\}\} \{\{plan\}\}/);
  assert.match(await release.innerText(), /0\s+emails/);
  const sent = await s.send({ from: 'hello@sender.test', to: 'dana@dest.test', template: { key: 'welcome', data: { product_name: 'Acme', user_name: 'Dana', action_url: 'https://acme.example/start', support_email: 'help@acme.example' } } });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  await page.reload();
  await page.locator('tr[data-release="1"]').getByText(/1\s+email$/).waitFor();
  // With nothing in draft, the content is read only until a new draft is started.
  await page.getByRole('tab', { name: 'Content' }).click();
  await page.getByRole('button', { name: 'Start a draft' }).waitFor();
  assert.ok(await page.locator('input[name="subject"]').isDisabled());

  // The list: the template is live, and search narrows it.
  await page.goto(`${s.t.url}/templates`);
  const row = page.locator(`tr[data-id="${id}"]`);
  await row.getByText('Live').waitFor();
  await shoot(page, 'templates');
  await page.getByLabel('Search templates').fill('nothing-like-it');
  await page.getByText('No active template matches “nothing-like-it”').waitFor();
  await page.getByLabel('Search templates').fill('welc');
  await row.waitFor();

  // Archived, it moves to the Archived tab and cannot be test-sent; restored, it is back.
  await row.getByRole('link').click();
  await page.getByRole('button', { name: 'Archive' }).click();
  await page.getByRole('button', { name: 'Restore' }).waitFor();
  assert.ok(await page.getByRole('button', { name: 'Send test' }).isDisabled());
  await page.getByRole('link', { name: '← Templates' }).click();
  await page.getByRole('tab', { name: 'Archived' }).click();
  await page.locator(`tr[data-id="${id}"]`).getByText('Archived').waitFor();
  await page.locator(`tr[data-id="${id}"]`).getByRole('link').click();
  await page.getByRole('button', { name: 'Restore' }).click();
  await page.getByRole('button', { name: 'Archive' }).waitFor();
  assert.is((await call(`/templates/${id}`)).body.template.lifecycle, 'active');

  assert.equal(errors, [], 'no errors in the page');
  assert.equal(refused, [], 'nothing refused by the CSP');
  await context.close();
});

test('labels: a nested label, a rule dry-run against stored mail before it is saved, then saved and applied', async () => {
  for (const subject of ['Invoice 1001', 'Invoice 1002 (final)', 'Lunch on Friday']) {
    const res = await s.send({ from: 'billing@sender.test', to: 'ap@dest.test', subject, text: `About ${subject}` });
    assert.is(res.status, 200, JSON.stringify(res.body));
  }
  const { page, context, errors, refused } = await open();
  await page.goto(`${s.t.url}/labels`);
  await page.getByText('No labels yet').waitFor();

  await page.getByRole('button', { name: 'New label' }).click();
  const dialog = page.getByRole('dialog', { name: 'New label' });
  await dialog.getByLabel('Name').fill('Finance/Invoices');
  await dialog.getByRole('button', { name: 'Colour #16a34a' }).click();
  await dialog.getByRole('button', { name: 'Create label' }).click();
  await page.waitForURL(/\/labels\/lbl_[0-9A-Z]{26}$/);
  const id = new URL(page.url()).pathname.split('/')[2];
  await page.getByRole('heading', { name: 'Finance/Invoices' }).waitFor();

  // The dry run answers before anything is stored.
  await page.getByLabel('Subject contains').fill('invoice');
  await page.getByRole('button', { name: 'Dry run' }).click();
  const dry = page.getByTestId('dry-run');
  await dry.getByText('Would file 2 stored emails.').waitFor();
  assert.match(await dry.innerText(), /Invoice 1002 \(final\)[\s\S]*Invoice 1001/, 'the newest first');
  assert.not.match(await dry.innerText(), /Lunch/);
  assert.equal((await call(`/labels/${id}`)).body.rules, [], 'a dry run saves nothing');
  await page.getByText('Also file the 2 stored emails that match').waitFor();

  await page.getByRole('button', { name: 'Save rule' }).click();
  await page.getByRole('list', { name: 'Saved rules' }).getByText('“invoice”').waitFor();
  const label = (await call(`/labels/${id}`)).body;
  assert.equal(label.rules.map((r: any) => [r.subject, r.direction, r.skipInbox]), [['invoice', null, false]]);
  assert.is(label.color, '#16a34a');
  await eventually(async () => (await call(`/labels/${id}`)).body.totalCount === 2, 10_000, 'the stored invoices filed');

  // The tree: the folder the name implies, the label under it with its count.
  await page.goto(`${s.t.url}/labels`);
  await page.getByText('(folder)').waitFor();
  const item = page.locator('[data-label="Finance/Invoices"]');
  await item.getByText('2 emails').waitFor();
  assert.match(await item.innerText(), /1 rule/);
  await shoot(page, 'labels');

  assert.equal(errors, [], 'no errors in the page');
  assert.equal(refused, [], 'nothing refused by the CSP');
  await context.close();
});

test.run();
