// Nothing is lost by one keystroke, in a real browser (Debian's Chromium through playwright-core) against the
// real app with mail received over SMTP: `#` moves a message to the Trash and the toast's Undo brings it back;
// the Trash view restores, deletes forever and empties, each deletion asked first; Archive, Spam and taking a
// label off offer an Undo that reverses exactly that change. What the box stored is checked over the API.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Page } from 'playwright-core';
import { request } from '../testkit/app.ts';
import type { InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { mailboxScene, type MailboxScene } from '../testkit/browser.ts';

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
const email = async (id: string) => (await api(`/emails/${id}`)).body;

/** A message received over SMTP; answers its id. */
const receive = (subject: string) => s.receive(subject);
const row = (subject: string) => page.locator('.mail-row', { hasText: subject });
const gone = (subject: string, what: string) => eventually(async () => (await row(subject).count()) === 0, 5_000, what);
const toast = (text: string) => page.locator('.toast[role=status]', { hasText: text });

/** Opens the message from the view's list and waits for its text in the reading pane. */
async function openMessage(view: string, subject: string) {
  await page.goto(`${s.t.url}/mail/${view}`);
  await row(subject).click();
  await page.frameLocator('iframe[title^="Message from"]').getByText(`Words of ${subject}`).waitFor();
}

test('# moves the message to the Trash, and the toast’s Undo brings it back where it was', async () => {
  const id = await receive('Keep me after all');
  await openMessage('inbox', 'Keep me after all');
  await page.keyboard.press('#');
  await toast('Moved to Trash').waitFor();
  await gone('Keep me after all', 'gone from the Inbox');
  assert.match((await email(id)).trashedAt ?? '', /^\d{4}-/, 'in the Trash on the box, not deleted');
  await toast('Moved to Trash').getByRole('button', { name: 'Undo' }).click();
  await toast('Undone').waitFor();
  await row('Keep me after all').waitFor();
  assert.is((await email(id)).trashedAt, null);
  await page.waitForURL(new RegExp(`/mail/inbox/${id}$`));
  // z is Undo too.
  await page.keyboard.press('#');
  await toast('Moved to Trash').waitFor();
  await gone('Keep me after all', 'gone again');
  await page.keyboard.press('z');
  await toast('Undone').waitFor();
  await eventually(async () => (await email(id)).trashedAt === null, 5_000, 'back in the Inbox on the box');
  assert.equal(errors, []);
});

test('Delete, then the Trash view: the message is there and Restore puts it back in the Inbox', async () => {
  const id = await receive('Restore me');
  await openMessage('inbox', 'Restore me');
  await page.getByRole('button', { name: 'Delete', exact: true }).click();
  await toast('Moved to Trash').waitFor();
  await page.getByRole('link', { name: 'Trash', exact: true }).click();
  await page.waitForURL(/\/mail\/trash$/);
  await row('Restore me').click();
  await page.getByText(/^In the Trash since/).waitFor();
  assert.is(await page.getByRole('button', { name: 'Archive' }).count(), 0, 'a message in the Trash offers Restore and Delete forever');
  await page.getByRole('button', { name: 'Restore' }).click();
  await toast('Restored from the Trash').waitFor();
  await gone('Restore me', 'gone from the Trash');
  assert.is((await email(id)).trashedAt, null);
  await page.getByRole('link', { name: /^Inbox(\s+\d+)?$/ }).click();
  await row('Restore me').waitFor();
  assert.equal(errors, []);
});

test('Delete forever asks first, from its button and from #; Cancel keeps the message', async () => {
  const id = await receive('Really gone');
  assert.is((await api(`/emails/${id}`, { method: 'PATCH', body: { trashed: true } })).status, 200);
  await openMessage('trash', 'Really gone');
  await page.getByRole('button', { name: 'Delete forever' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete forever?' });
  await dialog.waitFor();
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
  assert.is((await api(`/emails/${id}`)).status, 200, 'Cancel deleted nothing');
  // # in the Trash asks the same question; Enter there is the safe answer.
  await page.keyboard.press('#');
  await dialog.waitFor();
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'detached' });
  assert.is((await api(`/emails/${id}`)).status, 200, 'Enter kept it');
  await page.keyboard.press('#');
  await dialog.getByRole('button', { name: 'Delete forever' }).click();
  await toast('Deleted forever').waitFor();
  await gone('Really gone', 'gone from the Trash');
  assert.is((await api(`/emails/${id}`)).status, 404, 'deleted on the box');
  assert.equal(errors, []);
});

test('Empty Trash asks first, then deletes everything in the Trash for good', async () => {
  const ids = [await receive('Old newsletter'), await receive('Older newsletter')];
  for (const id of ids) await api(`/emails/${id}`, { method: 'PATCH', body: { trashed: true } });
  const kept = await receive('Not in the Trash');
  await page.goto(`${s.t.url}/mail/trash`);
  await row('Older newsletter').waitFor();
  await page.getByRole('button', { name: 'Empty Trash' }).click();
  const dialog = page.getByRole('dialog', { name: 'Empty the Trash?' });
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  for (const id of ids) assert.is((await api(`/emails/${id}`)).status, 200, 'Cancel emptied nothing');
  await page.getByRole('button', { name: 'Empty Trash' }).click();
  await dialog.getByRole('button', { name: 'Delete forever' }).click();
  await toast('Deleted 2 messages forever').waitFor();
  await page.getByText('No mail in Trash').waitFor();
  for (const id of ids) assert.is((await api(`/emails/${id}`)).status, 404);
  assert.is((await api(`/emails/${kept}`)).status, 200, 'mail outside the Trash stays');
  assert.equal(errors, []);
});

test('Archive, Spam and taking a label off each offer Undo, which reverses exactly that change', async () => {
  const id = await receive('Undo everything');
  await openMessage('inbox', 'Undo everything');
  await page.getByRole('button', { name: 'Archive', exact: true }).click();
  await toast('Archived').getByRole('button', { name: 'Undo' }).click();
  await toast('Undone').waitFor();
  assert.is((await email(id)).archivedAt, null);
  const before = (await email(id)).category;
  // Undo brings the message back into the reading pane; Spam acts on what is shown, so wait for it.
  await page.waitForURL(new RegExp(`/mail/inbox/${id}$`));
  await page.frameLocator('iframe[title^="Message from"]').getByText('Words of Undo everything').waitFor();

  await page.getByRole('button', { name: 'Spam', exact: true }).click();
  await toast('Moved to Spam').waitFor();
  assert.is((await email(id)).category, 'spam');
  await toast('Moved to Spam').getByRole('button', { name: 'Undo' }).click();
  await toast('Undone').waitFor();
  assert.is((await email(id)).category, before);
  await row('Undo everything').waitFor();

  assert.is((await api(`/emails/${id}/labels`, { body: { add: ['Keepers'] } })).status, 200);
  await page.reload();
  await page.getByRole('button', { name: 'Labels', exact: true }).click();
  // A click, not uncheck(): the box is ticked by what the server says, which changes a moment later.
  await page.getByRole('checkbox', { name: 'Keepers' }).click();
  await toast('Removed the label Keepers').getByRole('button', { name: 'Undo' }).click();
  await toast('Undone').waitFor();
  assert.equal((await email(id)).labels.map((l: { name: string }) => l.name), ['Keepers']);
  assert.equal(errors, []);
});

test.run();
