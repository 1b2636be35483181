// What the dashboard shows renders on a browser with no emoji font (Debian's Chromium through playwright-core,
// against the real app with mail received over SMTP): no page's text holds a pictograph, and its icons are SVG.
// Message bodies follow dark mode when the mail sets no colours of its own, plain text included; mail that
// sets its colours keeps them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Page } from 'playwright-core';
import { request } from '../testkit/app.ts';
import type { InboundScene } from '../testkit/inbound.ts';
import { mailboxScene, type MailboxScene } from '../testkit/browser.ts';
import { eventually } from '../testkit/outbound.ts';

// The page's own globals, in the functions run there.
declare const document: any;
declare function getComputedStyle(el: unknown): { backgroundColor: string; color: string };

let m: MailboxScene;
let s: InboundScene;
let page: Page;
let errors: Error[];

test.before(async () => {
  m = await mailboxScene();
  ({ s, page, errors } = m);
});
test.after(() => m?.stop());

const api = (path: string, opts: { method?: string; body?: unknown } = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });

let n = 0;
/** A message received over SMTP: headers for its body (`type`) and the body; answers its id. */
const receive = (subject: string, type: string, body: string) => s.receive(subject, { headers: `MIME-Version: 1.0\n${type}`, body });
const html = (body: string) => receive(`HTML ${++n}`, 'Content-Type: text/html; charset=utf-8', body);

/** The text of the page has no pictograph (each would be an empty box without an emoji font). */
async function noPictographs(where: string) {
  // Once loaded (the event stream never lets the network idle).
  await eventually(async () => (await page.locator('.spinner').count()) === 0, 10_000, `${where} loaded`);
  const found = await page.evaluate(() => (document.body.innerText as string).match(/\p{Extended_Pictographic}/gu));
  assert.equal(found, null, `${where}: pictographs in the text`);
}

test('no page shows a pictograph; its icons are SVG with a name or text beside them', async () => {
  const parts = ['--b1', 'Content-Type: text/plain', '', 'See the file.', '--b1', 'Content-Type: application/pdf; name="report.pdf"', 'Content-Disposition: attachment; filename="report.pdf"', 'Content-Transfer-Encoding: base64', '', 'JVBERi0xLjQK', '--b1--'];
  const id = await receive('With a file', 'Content-Type: multipart/mixed; boundary="b1"', parts.join('\n'));
  assert.is((await api(`/emails/${id}`, { method: 'PATCH', body: { important: true } })).status, 200);
  assert.is((await api('/labels', { body: { name: 'Newsletters', skip_inbox: true } })).status, 201);
  const later = new Date(Date.now() + 5 * 24 * 3600_000).toISOString();
  assert.is((await api('/emails', { body: { from: s.inbox.address, to: ['ann@in.example'], subject: 'Goes later', text: 'Later.', scheduled_at: later } })).status, 200);

  await page.goto(`${s.t.url}/mail/inbox`);
  const row = page.locator('.mail-row', { hasText: 'With a file' });
  await row.waitFor();
  assert.is(await row.locator('svg[aria-label="Important"]').count(), 1, 'the star is an SVG named Important');
  assert.is(await row.locator('svg[aria-label="Has attachments"]').count(), 1, 'the clip is an SVG named Has attachments');
  assert.is(await page.locator('nav a', { hasText: 'Newsletters' }).locator('svg[aria-label="Bucket"]').count(), 1, 'a bucket label is marked by an SVG');
  assert.is(await page.locator('button[aria-label="Menu"] svg').count(), 1, 'the menu button (at phone width) is an SVG');
  await noPictographs('the Inbox');

  await row.click();
  await page.locator('.attachments a', { hasText: 'report.pdf' }).waitFor();
  assert.is(await page.locator('.attachments a', { hasText: 'report.pdf' }).locator('svg[aria-hidden="true"]').count(), 1, 'the file has a clip beside its name');
  const important = page.getByRole('button', { name: 'Important' });
  assert.is(await important.getAttribute('aria-pressed'), 'true');
  assert.is(await important.locator('svg').count(), 1);
  assert.is(await page.getByRole('button', { name: 'Back to the list' }).locator('svg').count(), 1);
  await noPictographs('a message');

  await page.goto(`${s.t.url}/mail/scheduled`);
  await page.locator('.mail-row', { hasText: 'Goes later' }).locator('svg[aria-label="Scheduled for"]').waitFor();
  await noPictographs('Scheduled');

  await page.getByRole('button', { name: 'Compose', exact: true }).click();
  const close = page.getByRole('dialog', { name: 'New message' }).getByRole('button', { name: 'Close' });
  assert.is(await close.locator('svg').count(), 1, 'a dialog closes with an SVG cross');
  await noPictographs('the composer');
  await page.keyboard.press('Escape');

  for (const path of ['/labels', '/domains', `/domains/${s.domain.id}`, '/inboxes', '/templates', '/developers', '/overview', '/billing', '/settings']) {
    await page.goto(`${s.t.url}${path}`);
    await page.locator('h1').first().waitFor();
    await noPictographs(path);
  }
  assert.equal(errors, []);
});

/** The body's colours as drawn in the message's frame: the page's background and its first paragraph's text. */
async function bodyColours(id: string) {
  await page.goto(`${s.t.url}/mail/inbox/${id}`);
  const frame = page.frameLocator('iframe[title^="Message from"]');
  await frame.locator('p, pre').first().waitFor();
  return frame.locator('html').evaluate((root: any) => {
    const text = root.ownerDocument.querySelector('p, pre');
    // What shows behind the text: the root's background, else the body's (CSS paints the canvas with it).
    const back = [root, root.ownerDocument.body].map((el) => getComputedStyle(el).backgroundColor).find((c) => c !== 'rgba(0, 0, 0, 0)') ?? 'none';
    return { back, text: getComputedStyle(text).color };
  });
}

test('in dark mode a body that sets no colours is dark with light text; one with its own colours keeps them', async () => {
  const plainHtml = await html('<html><head><style>p { font-family: Georgia, serif; }</style></head><body><p>No colours of mine.</p></body></html>');
  const ownBackground = await html('<html><body bgcolor="#ffffff"><p>My white page.</p></body></html>');
  const ownStyle = await html('<html><body><table style="background-color:#fafafa"><tr><td><p style="color:#333333">Styled by me.</p></td></tr></table></body></html>');
  const plainText = await receive('Plain words', 'Content-Type: text/plain; charset=utf-8', 'Only words here.');
  await page.emulateMedia({ colorScheme: 'dark' });
  try {
    const dark = { back: 'rgb(26, 27, 32)', text: 'rgb(232, 233, 237)' };
    assert.equal(await bodyColours(plainHtml), dark, 'HTML with no colours follows dark mode');
    assert.equal(await bodyColours(plainText), dark, 'plain text follows dark mode');
    assert.equal(await bodyColours(ownBackground), { back: 'rgb(255, 255, 255)', text: 'rgb(0, 0, 0)' }, 'its own bgcolor is kept, with dark text');
    assert.equal((await bodyColours(ownStyle)).text, 'rgb(51, 51, 51)', 'its own colours are kept');
    assert.not.equal((await bodyColours(ownStyle)).back, dark.back, 'not darkened');
    await page.goto(`${s.t.url}/mail/inbox/${plainHtml}`);
    await page.waitForTimeout(300);
    await page.screenshot({ path: '/tmp/mailwright-dark-body.png' });
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
  }
  // In light mode the same mail is as it always was: black on the white frame.
  assert.equal(await bodyColours(plainHtml), { back: 'none', text: 'rgb(0, 0, 0)' });
  assert.equal(errors, []);
});

test.run();
