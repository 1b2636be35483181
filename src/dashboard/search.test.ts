// Search in the dashboard, in a real browser (Debian's Chromium through playwright-core) against the real app
// with mail received over SMTP and sent through the API: from the Inbox the search box finds archived and sent
// mail too, each row naming its folder and labels; spam and the Trash only with in:anywhere; "Search in" keeps
// it to the view; operators work as in the API; an empty result lists the operators.
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

const api = (path: string, opts: { method?: string; body?: unknown } = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });

const receive = (subject: string, from?: string) => s.receive(subject, { from });
const patch = async (id: string, body: Record<string, unknown>) => assert.is((await api(`/emails/${id}`, { method: 'PATCH', body: { learn: false, ...body } })).status, 200);

test.before(async () => {
  m = await mailboxScene();
  ({ s, page, errors } = m);
  s.routeTo('dest.example');
  const archived = await receive('Harbour plan, archived');
  await patch(archived, { archived: true, read: true });
  const sent = await api('/emails', { body: { from: `Hello <${s.inbox.address}>`, to: ['erin@dest.example'], subject: 'Harbour plan, sent', text: 'Words of the sent plan.' } });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const labelled = await receive('Harbour plan, in the Inbox', 'Carol <carol@sender.example>');
  assert.is((await api(`/emails/${labelled}/labels`, { body: { add: ['Big clients'] } })).status, 200);
  await patch(await receive('Harbour plan, spam'), { category: 'spam' });
  await patch(await receive('Harbour plan, trashed'), { trashed: true });
  await receive('Unrelated note');
});
test.after(() => m?.stop());

const row = (subject: string) => page.locator('.mail-row', { hasText: subject });
/** The subjects the list shows, each with the badges before it (folder, labels), in order. */
const shown = async () => (await page.locator('.mail-row .subject').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());

async function search(q: string) {
  const box = page.getByRole('searchbox', { name: 'Search' });
  await box.fill(q);
  await box.press('Enter');
  await page.waitForURL((url) => url.searchParams.get('q') === q);
}

test('from the Inbox, the search box finds archived and sent mail, each row naming its folder and labels', async () => {
  await page.goto(`${s.t.url}/mail/inbox`);
  await row('Unrelated note').waitFor();
  assert.is(await row('Harbour plan, archived').count(), 0, 'the Inbox view itself does not hold the archived one');
  await search('harbour');
  await row('Harbour plan, archived').waitFor();
  assert.equal(await shown(), ['Inbox Big clients Harbour plan, in the Inbox', 'Sent Harbour plan, sent', 'Archive Harbour plan, archived'], 'no spam, nothing from the Trash');
  assert.is(await page.getByRole('list', { name: 'All mail' }).count(), 1);
  assert.is(await page.getByRole('searchbox', { name: 'Search' }).getAttribute('placeholder'), 'Search all mail  ( / )');
  // A result opens in the reading pane and the results stay.
  await row('Harbour plan, archived').click();
  await page.frameLocator('iframe[title^="Message from"]').getByText('Words of Harbour plan, archived').waitFor();
  assert.is(new URL(page.url()).searchParams.get('q'), 'harbour');
  assert.is(await row('Harbour plan, sent').count(), 1);
  assert.equal(errors, []);
});

test('"Search in" keeps the search to the view; All mail goes back', async () => {
  await page.goto(`${s.t.url}/mail/inbox`);
  await search('harbour');
  await row('Harbour plan, sent').waitFor();
  const scope = page.getByRole('group', { name: 'Search in' });
  await scope.getByRole('link', { name: 'Inbox' }).click();
  await eventually(async () => (await row('Harbour plan, sent').count()) === 0, 5_000, 'sent mail gone from an Inbox search');
  assert.equal(await shown(), ['Harbour plan, in the Inbox'], 'the view named by the toolbar: no folder badges');
  assert.is(await page.getByRole('searchbox', { name: 'Search' }).getAttribute('placeholder'), 'Search inbox  ( / )');
  // A new search from here stays in the view.
  await search('harbour archived');
  await page.getByText('Nothing matches').waitFor();
  assert.is(new URL(page.url()).searchParams.get('scope'), 'folder');
  await scope.getByRole('link', { name: 'All mail' }).click();
  await row('Harbour plan, archived').waitFor();
  assert.equal(await shown(), ['Archive Harbour plan, archived']);
  assert.equal(errors, []);
});

test('spam and the Trash only with in:anywhere (or in:spam, in:trash); operators as in the API', async () => {
  await page.goto(`${s.t.url}/mail/sent`);
  await search('harbour in:anywhere');
  await row('Harbour plan, trashed').waitFor();
  assert.equal((await shown()).sort(), ['Archive Harbour plan, archived', 'Inbox Big clients Harbour plan, in the Inbox', 'Sent Harbour plan, sent', 'Spam Harbour plan, spam', 'Trash Harbour plan, trashed']);
  await search('in:trash');
  await eventually(async () => JSON.stringify(await shown()) === JSON.stringify(['Trash Harbour plan, trashed']), 5_000, 'the Trash alone');
  await search('from:carol label:"Big clients"');
  await eventually(async () => JSON.stringify(await shown()) === JSON.stringify(['Inbox Big clients Harbour plan, in the Inbox']), 5_000, 'from: and label:');
  await search('harbour -in:sent -is:unread');
  await eventually(async () => JSON.stringify(await shown()) === JSON.stringify(['Archive Harbour plan, archived']), 5_000, '-in:sent -is:unread');
  assert.equal(errors, []);
});

test('an empty result lists the operators; a malformed date says what is wrong', async () => {
  await page.goto(`${s.t.url}/mail/inbox`);
  await search('zebra crossing');
  await page.getByText('Nothing matches').waitFor();
  const hint = await page.locator('.mail-list .state.empty').innerText();
  for (const op of ['in:anywhere', 'from:', 'to:', 'subject:', 'has:attachment', 'filename:pdf', 'label:', 'is:unread', 'after:2026-11-01', 'before:', '"a phrase"', '-word']) assert.ok(hint.includes(op), `${op} in: ${hint}`);
  await search('before:2026-02-30');
  await page.getByText('query: before: must be a date such as 2026-11-01 or 2026/11/01; got "2026-02-30"').waitFor();
  assert.equal(errors, []);
});

test("a received reply's row shows its new words, not the quoted history; a search shows the words found", async () => {
  const body = 'Lighthouse works for me.\n\nOn Sun, Nov 29, 2026 at 9:40 AM Hello <hello@in.example> wrote:\n> Shall we use the lighthouse quay?\n';
  await s.receive('Re: Quay', { from: 'Dan <dan@sender.example>', body });
  await page.goto(`${s.t.url}/mail/inbox`);
  await row('Re: Quay').waitFor();
  assert.is((await row('Re: Quay').locator('.snippet').innerText()).trim(), 'Lighthouse works for me.');
  await search('quay');
  await row('Re: Quay').waitFor();
  assert.match(await row('Re: Quay').locator('.snippet').innerText(), /quay/i, 'the snippet around the searched word');
  assert.equal(errors, []);
});

test.run();
