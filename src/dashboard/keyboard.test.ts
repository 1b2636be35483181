// The dashboard by keyboard, in a real browser (Debian's Chromium through playwright-core) against the real app
// with mail received over SMTP: every dialog takes the focus when it opens, keeps Tab and Shift+Tab inside,
// closes on Escape and gives the focus back to what opened it; the shortcuts keep working after a click in a
// message's body (a frame of its own), and still nothing in the body runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Locator, Page } from 'playwright-core';
import { request } from '../testkit/app.ts';
import type { InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { DESKTOP, mailboxScene, type MailboxScene, PHONE } from '../testkit/browser.ts';

// The page's own global, in the functions run there.
declare const document: any;

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

/** A message received over SMTP, its body HTML; answers its id. */
const receive = (subject: string, html = `<p>Words of ${subject}.</p>`) =>
  s.receive(subject, { headers: 'MIME-Version: 1.0\nContent-Type: text/html; charset=utf-8', body: `<html><body>${html}</body></html>` });

/** Where the focus is: inside the dialog, and a name for the element (to see Tab move and wrap). */
const focusInDialog = () =>
  page.evaluate(() => {
    const el = document.activeElement;
    const dialog = el?.closest('[role="dialog"]');
    return { inside: !!dialog, name: el ? `${el.tagName}:${el.getAttribute('name') ?? el.getAttribute('aria-label') ?? el.textContent?.trim().slice(0, 30)}` : '' };
  });

/**
 * Opens a dialog by clicking `opener`, then checks what a keyboard user relies on: the focus is in it (on
 * `firstFocus` when given), Tab and Shift+Tab many times over never leave it and come round again, Escape
 * closes it and the focus is back on the opener.
 */
async function checkDialog(opener: Locator, name: string, firstFocus?: string) {
  await opener.click();
  const dialog = page.getByRole('dialog', { name });
  await dialog.waitFor();
  const first = await eventually(async () => {
    const f = await focusInDialog();
    return f.inside && (!firstFocus || f.name === firstFocus) && f;
  }, 5_000, `${name}: the focus in the dialog${firstFocus ? ` on ${firstFocus}` : ''}`);
  for (const key of ['Tab', 'Shift+Tab']) {
    const seen: string[] = [first.name];
    for (let i = 0; i < 24; i++) {
      await page.keyboard.press(key);
      const f = await focusInDialog();
      assert.ok(f.inside, `${name}: ${key} #${i + 1} left the dialog (focus on ${f.name})`);
      seen.push(f.name);
    }
    assert.ok(new Set(seen).size > 1, `${name}: ${key} moves between controls`);
    assert.ok(new Set(seen).size < seen.length, `${name}: ${key} comes round to the start again`);
  }
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  await eventually(() => opener.evaluate((el) => el === document.activeElement), 3_000, `${name}: the focus back on what opened it`);
}

test('every dialog keeps the keyboard inside until it closes, then gives the focus back', async () => {
  await receive('Dialogs around');
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.locator('.mail-row', { hasText: 'Dialogs around' }).waitFor();
  // The composer starts in To (a new message) and closes on Escape, the draft kept if one was typed.
  await checkDialog(page.getByRole('button', { name: 'Compose', exact: true }), 'New message', 'INPUT:to');

  await page.goto(`${s.t.url}/domains`);
  await checkDialog(page.getByRole('button', { name: 'Add domain' }).first(), 'Add a domain', 'INPUT:name');
  await page.goto(`${s.t.url}/developers`);
  await checkDialog(page.getByRole('button', { name: 'Create API key' }), 'Create an API key', 'INPUT:name');
  await page.goto(`${s.t.url}/labels`);
  await checkDialog(page.getByRole('button', { name: 'New label' }).first(), 'New label', 'INPUT:name');
  await page.goto(`${s.t.url}/inboxes`);
  await checkDialog(page.getByRole('button', { name: 'New inbox' }).first(), 'New inbox');

  // The shortcuts' list, opened from the keyboard; while it is open, the page's own keys wait.
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.locator('.mail-row', { hasText: 'Dialogs around' }).waitFor();
  await page.keyboard.press('?');
  const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
  await help.waitFor();
  assert.ok((await focusInDialog()).inside, 'the list has the focus');
  await page.keyboard.press('Tab');
  assert.ok((await focusInDialog()).inside, 'Tab stays in the list');
  await page.keyboard.press('c');
  await page.keyboard.press('Escape');
  await help.waitFor({ state: 'detached' });
  assert.is(await page.getByRole('dialog', { name: 'New message' }).count(), 0, 'c under an open dialog composed nothing');
  assert.equal(errors, []);
});

test('after a click in a message body, j, e, r, # and ? still work, and nothing in the body runs', async () => {
  const older = await receive('Older one');
  const hostile = '<p>Newer one: click me.</p><script>window.ran = 1; try { top.ranInFrame = 1 } catch (e) {}</script><img src="nope:x" onerror="window.ran = 1">';
  const newer = await receive('Newer one', hostile);
  const body = (subject: string) => page.frameLocator('iframe[title^="Message from"]').getByText(`${subject}: click me`);
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.locator('.mail-row', { hasText: 'Newer one' }).click();
  await page.waitForURL(new RegExp(`/mail/inbox/${newer}$`));
  await body('Newer one').click();
  assert.is(await page.evaluate(() => document.activeElement?.tagName), 'IFRAME', 'the click put the focus in the frame');
  const inner = page.frames().find((f) => f.url().includes(`/emails/${newer}/html`))!;
  assert.equal(await inner.evaluate(() => (globalThis as any).ran), undefined, 'no script or handler ran in the body');
  assert.equal(await page.evaluate(() => (globalThis as any).ranInFrame), undefined, 'nothing reached the dashboard');

  // ?: the list of shortcuts.
  await page.keyboard.press('?');
  await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
  await page.keyboard.press('Escape');
  await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor({ state: 'detached' });

  // r: a reply to this message.
  await body('Newer one').click();
  await page.keyboard.press('r');
  const reply = page.getByRole('dialog', { name: 'Reply' });
  await reply.waitFor();
  assert.is(await reply.locator('input[name=subject]').inputValue(), 'Re: Newer one');
  await page.keyboard.press('Escape');
  await reply.waitFor({ state: 'detached' });

  // j: the next message down the list.
  await body('Newer one').click();
  await page.keyboard.press('j');
  await page.waitForURL(new RegExp(`/mail/inbox/${older}$`));
  await page.frameLocator('iframe[title^="Message from"]').getByText('Words of Older one').waitFor();

  // e: archived, from a click in that body too.
  await page.frameLocator('iframe[title^="Message from"]').getByText('Words of Older one').click();
  await page.keyboard.press('e');
  await page.locator('.toast', { hasText: 'Archived' }).waitFor();
  await eventually(async () => (await api(`/emails/${older}`)).body.archivedAt !== null, 5_000, 'archived on the box');

  // #: to the Trash.
  await page.goto(`${s.t.url}/mail/inbox/${newer}`);
  await body('Newer one').click();
  await page.keyboard.press('#');
  await page.locator('.toast', { hasText: 'Moved to Trash' }).waitFor();
  await eventually(async () => (await api(`/emails/${newer}`)).body.trashedAt !== null, 5_000, 'in the Trash on the box');
  assert.equal(errors, []);
});

test('at phone width the menu drawer closes on Escape', async () => {
  await page.setViewportSize(PHONE);
  try {
    await page.goto(`${s.t.url}/overview`);
    const menu = page.getByRole('button', { name: 'Menu' });
    await menu.click();
    assert.is(await menu.getAttribute('aria-expanded'), 'true');
    await page.locator('nav.nav.open').waitFor();
    await page.keyboard.press('Escape');
    await page.locator('nav.nav.open').waitFor({ state: 'detached' });
    assert.is(await menu.getAttribute('aria-expanded'), 'false');
  } finally {
    await page.setViewportSize(DESKTOP);
  }
  assert.equal(errors, []);
});

test('the label menu closes on Escape, back on its button', async () => {
  await receive('Label me');
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.locator('.mail-row', { hasText: 'Label me' }).click();
  const button = page.getByRole('button', { name: 'Labels', exact: true });
  await button.click();
  await page.getByLabel('New label').click();
  await page.keyboard.press('Escape');
  await page.getByLabel('New label').waitFor({ state: 'detached' });
  assert.ok(await button.evaluate((el) => el === document.activeElement), 'the focus is back on Labels');
  assert.equal(errors, []);
});

test.run();
