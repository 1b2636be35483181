// The dashboard in a real browser (Debian's Chromium through playwright-core) against the real app: the first
// start through the link `mailwright setup link` prints (and the link refused a second time), signing in and out, reading hostile
// HTML mail in the sandboxed pane (scripts, handlers and a meta refresh never run, remote images load only
// when asked), archiving with `e`, composing with a file, replying and forwarding from the box's drafts, and
// scheduling then canceling a send.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { simpleParser } from 'mailparser';
import { request, runCli, startTestApp, TEST_PASSWORD } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { DESKTOP, openBrowser, screenshots, signedIn } from '../testkit/browser.ts';

let browser: Browser;
let s: InboundScene;
let page: Page;
let errors: Error[];
let images: Server;
let imageHits = 0;
let imageUrl = '';

test.before(async () => {
  browser = await openBrowser();
  images = createServer((_, res) => {
    imageHits++;
    res.writeHead(200, { 'content-type': 'image/gif' }).end(Buffer.from('R0lGODlhAQABAAAAACw=', 'base64'));
  });
  await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
  imageUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}/pixel.gif`;
  s = await startInboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
  ({ page, errors } = await signedIn(browser, s.t, s.email, TEST_PASSWORD));
});
test.after(async () => {
  await browser?.close();
  images?.close();
  await s?.stop();
});

test('first start: the link the CLI prints creates the owner once; the same link is refused afterwards', async () => {
  const fresh = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  const context = await browser.newContext({ viewport: DESKTOP, colorScheme: 'light' });
  try {
    const link = await runCli(['setup', 'link'], fresh.env);
    assert.is(link.code, 0, link.stderr);
    const token = /\/setup#([A-Za-z0-9_-]+)$/.exec(link.stdout.trim())![1];
    const p = await context.newPage();
    await p.goto(`${fresh.url}/`);
    await p.waitForURL(/\/setup$/);
    await p.locator('code', { hasText: 'mailwright setup link' }).waitFor();
    await p.goto(`${fresh.url}/setup#${token}`);
    await screenshots(p, 'setup');
    await p.getByLabel('Your e-mail address').fill('owner@box.example');
    await p.locator('input[name=password]').fill('short');
    await p.getByLabel('Passphrase again').fill('short');
    await p.getByRole('button', { name: 'Create the owner' }).click();
    // The browser's own minlength stops it; a long but weak one gets the box's answer.
    await p.locator('input[name=password]').fill('aaaaaaaaaaaaaaaa');
    await p.getByLabel('Passphrase again').fill('aaaaaaaaaaaaaaaa');
    await p.getByRole('button', { name: 'Create the owner' }).click();
    await p.getByText('repeats too few different characters').waitFor();
    await p.locator('input[name=password]').fill('orbit lantern quietly 42');
    await p.getByLabel('Passphrase again').fill('orbit lantern quietly 42');
    await p.getByRole('button', { name: 'Create the owner' }).click();
    await p.waitForURL(/\/mail$/);
    await p.getByRole('button', { name: 'Compose' }).waitFor();

    const again = await request(`${fresh.api}/setup`, { body: { token, email: 'thief@evil.example', password: 'another long passphrase' } });
    assert.equal([again.status, again.body.error.code], [403, 'invalid_setup_token']);
    assert.equal((await request(`${fresh.api}/setup`)).body, { needed: false });
    // Signing out and in again through the login page.
    await p.getByRole('button', { name: 'Sign out' }).click();
    await p.waitForURL(/\/login$/);
    await screenshots(p, 'login');
    await p.getByLabel('E-mail').fill('owner@box.example');
    await p.getByLabel('Password').fill('wrong password here');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByText('Invalid email or password').waitFor();
    await p.getByLabel('Password').fill('orbit lantern quietly 42');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL(/\/mail$/);
  } finally {
    await context.close();
    await fresh.stop();
  }
});

test('hostile HTML mail: no script, handler or refresh runs; remote images load only when asked', async () => {
  const html = [
    '<html><head><meta http-equiv="refresh" content="0;url=javascript:top.pwnedByRefresh=1"></head><body>',
    '<p>Quarterly <b>numbers</b> inside.</p>',
    '<script>window.pwnedByScript = 1; try { top.pwnedByScript = 1 } catch (e) {}</script>',
    '<img src="nope:x" onerror="window.pwnedByHandler = 1; try { top.pwnedByHandler = 1 } catch (e) {}">',
    `<img src="${imageUrl}" alt="tracker">`,
    '</body></html>',
  ].join('\n');
  const raw = `From: Mallory <mallory@sender.example>\nTo: ${s.inbox.address}\nSubject: Hostile newsletter\nMessage-ID: <hostile@sender.example>\nMIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n${html}\n`;
  assert.is((await s.deliver(raw, {})).code, 250);
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.getByText('Hostile newsletter').click();
  const frame = page.frameLocator('iframe[title^="Message from"]');
  await frame.getByText('Quarterly').waitFor();
  await page.waitForTimeout(500);
  await screenshots(page, 'mail-reading');
  const top = await page.evaluate(() => [(globalThis as any).pwnedByScript, (globalThis as any).pwnedByHandler, (globalThis as any).pwnedByRefresh]);
  assert.equal(top, [undefined, undefined, undefined], 'nothing reached the dashboard');
  const inner = page.frames().find((f) => f.url().includes('/html'))!;
  assert.equal(await inner.evaluate(() => [(globalThis as any).pwnedByScript, (globalThis as any).pwnedByHandler]), [undefined, undefined], 'nothing ran in the frame');
  assert.is(imageHits, 0, 'the remote image was not fetched');
  await page.getByTestId('images-blocked').waitFor();
  await page.getByRole('button', { name: 'Show images' }).click();
  await eventually(() => imageHits > 0, 5_000, 'the image fetched once asked');
  assert.equal(errors, []);
});

test('archive with e: the message leaves the Inbox and is in the Archive', async () => {
  assert.is((await s.deliver(`From: Bob <bob@sender.example>\nTo: ${s.inbox.address}\nSubject: Archive me\nMessage-ID: <archive-me@sender.example>\n\nplain words\n`, {})).code, 250);
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.getByText('Archive me').click();
  await page.frameLocator('iframe[title^="Message from"]').getByText('plain words').waitFor();
  await page.keyboard.press('e');
  await page.getByText('Archived', { exact: true }).waitFor();
  await eventually(async () => (await page.locator('.mail-row', { hasText: 'Archive me' }).count()) === 0, 5_000, 'gone from the Inbox');
  await page.goto(`${s.t.url}/mail/archive`);
  await page.locator('.mail-row', { hasText: 'Archive me' }).waitFor();
  await screenshots(page, 'mailbox');
  await page.keyboard.press('?');
  await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
  await screenshots(page, 'shortcuts');
  await page.keyboard.press('Escape');
  assert.equal(errors, []);
});

test('compose: a draft saved as you type, a file attached with the limits shown, sent and received', async () => {
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.locator('.mail-row').first().waitFor();
  await page.keyboard.press('c');
  const dialog = page.getByRole('dialog', { name: 'New message' });
  await dialog.getByPlaceholder('you@your-domain').fill('Me <me@sender.test>');
  await dialog.getByPlaceholder('Addresses, separated by commas').fill('friend@dest.test');
  await dialog.getByLabel('Subject').fill('Report attached');
  await dialog.getByLabel('Message').fill('Here it is.');
  await dialog.getByText('Saved', { exact: true }).waitFor();
  assert.is((await request(`${s.t.api}/drafts`, { key: s.key })).body.data[0].subject, 'Report attached', 'the draft is on the box');
  await dialog.getByText('Up to 10 files, 10 MB in all').waitFor();
  await dialog.locator('input[type=file]').setInputFiles({ name: 'report.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2\n') });
  await dialog.locator('[data-testid=attachment]', { hasText: 'report.csv' }).getByRole('button', { name: 'Remove' }).waitFor();
  await screenshots(page, 'compose');
  await dialog.getByRole('button', { name: 'Send', exact: true }).click();
  // The toast, not the mailbox navigation's link, which reads Sent too once it is shown.
  await page.locator('.toast[role=status]', { hasText: /^Sent$/ }).waitFor();
  const m = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('friend@dest.test')), 10_000, 'the message at the sink');
  const parsed = await simpleParser(m.raw);
  assert.equal([parsed.subject, parsed.text?.trim(), parsed.attachments[0]?.filename, parsed.attachments[0]?.content.toString()], ['Report attached', 'Here it is.', 'report.csv', 'a,b\n1,2\n']);
  assert.is((await request(`${s.t.api}/drafts`, { key: s.key })).body.count, 0, 'the draft went with the send');
  assert.equal(errors, []);
});

test('forward: the original\'s files come along on the draft, and go with the forward', async () => {
  const reply = await s.deliver(
    `From: Bob <bob@sender.example>\r\nTo: ${s.inbox.address}\r\nSubject: Plans with a file\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b1"\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nThe plan is attached.\r\n--b1\r\nContent-Type: text/plain; name="plan.txt"\r\nContent-Disposition: attachment; filename="plan.txt"\r\n\r\nStep one.\r\n--b1--\r\n`,
    { to: [s.inbox.address] },
  );
  assert.is(reply.code, 250, reply.text);
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.locator('.mail-row', { hasText: 'Plans with a file' }).click();
  await page.getByRole('button', { name: 'Forward' }).click();
  const dialog = page.getByRole('dialog', { name: 'Forward' });
  await dialog.locator('[data-testid=attachment]', { hasText: 'plan.txt' }).waitFor();
  assert.is(await dialog.getByLabel('Subject').inputValue(), 'Fwd: Plans with a file');
  await dialog.getByPlaceholder('Addresses, separated by commas').fill('ivy@dest.test');
  await dialog.getByRole('button', { name: 'Send', exact: true }).click();
  await page.locator('.toast[role=status]', { hasText: /^Sent$/ }).waitFor();
  const m = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('ivy@dest.test')), 10_000, 'the forward at the sink');
  const parsed = await simpleParser(m.raw);
  assert.match(parsed.text ?? '', /---------- Forwarded message ---------\nFrom: Bob <bob@sender\.example>/);
  assert.equal(parsed.attachments.map((a) => [a.filename, a.content.toString().trim()]), [['plan.txt', 'Step one.']]);
  assert.equal(errors, []);
});

test('reply: to the Reply-To, from the inbox, quoted and threaded; a reply closed untouched leaves no draft', async () => {
  const got = await s.deliver(
    `From: Bob <bob@sender.example>\r\nReply-To: Team Bob <team@dest.test>\r\nTo: ${s.inbox.address}\r\nSubject: Lunch plans\r\nMessage-ID: <lunch-plans@sender.example>\r\n\r\nNoon on Friday?\r\n`,
    { to: [s.inbox.address] },
  );
  assert.is(got.code, 250, got.text);
  await page.goto(`${s.t.url}/mail/inbox`);
  await page.locator('.mail-row', { hasText: 'Lunch plans' }).click();
  const drafts = async () => (await request(`${s.t.api}/drafts`, { key: s.key })).body.count as number;
  const before = await drafts();
  await page.getByRole('button', { name: 'Reply' }).click();
  let dialog = page.getByRole('dialog', { name: 'Reply' });
  await dialog.getByLabel('Subject').waitFor();
  assert.is(await dialog.getByPlaceholder('Addresses, separated by commas').inputValue(), 'Team Bob <team@dest.test>');
  await dialog.getByRole('button', { name: /close/i }).click();
  await eventually(async () => (await drafts()) === before, 5_000, 'the untouched reply draft removed');

  await page.getByRole('button', { name: 'Reply' }).click();
  dialog = page.getByRole('dialog', { name: 'Reply' });
  await dialog.getByLabel('Subject').waitFor();
  assert.is(await dialog.getByLabel('Subject').inputValue(), 'Re: Lunch plans');
  assert.match(await dialog.getByLabel('Message').inputValue(), /^\n\nOn .+, Bob <bob@sender\.example> wrote:\n> Noon on Friday\?/);
  await dialog.getByLabel('Message').press('Control+Home');
  await dialog.getByLabel('Message').pressSequentially('Noon works.');
  await dialog.getByRole('button', { name: 'Send', exact: true }).click();
  await page.locator('.toast[role=status]', { hasText: /^Sent$/ }).waitFor();
  const m = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('team@dest.test')), 10_000, 'the reply at the sink');
  const parsed = await simpleParser(m.raw);
  assert.equal([parsed.subject, parsed.inReplyTo, parsed.from?.value[0].address], ['Re: Lunch plans', '<lunch-plans@sender.example>', s.inbox.address]);
  assert.match(parsed.text ?? '', /^Noon works\.\n\nOn .+ wrote:\n> Noon on Friday\?/);
  assert.equal(errors, []);
});

test('schedule a send, see it under Scheduled, and cancel it', async () => {
  await page.goto(`${s.t.url}/mail/scheduled`);
  await page.getByRole('button', { name: 'Compose' }).click();
  const dialog = page.getByRole('dialog', { name: 'New message' });
  await dialog.getByPlaceholder('you@your-domain').fill('me@sender.test');
  await dialog.getByPlaceholder('Addresses, separated by commas').fill('later@dest.test');
  await dialog.getByLabel('Subject').fill('See you tomorrow');
  await dialog.getByLabel('Message').fill('Later.');
  const tomorrow = new Date(Date.now() + 24 * 3600_000);
  const local = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  await dialog.locator('input[type=datetime-local]').fill(local);
  await dialog.getByRole('button', { name: 'Schedule' }).click();
  await page.getByText(/^Scheduled for/).waitFor();
  await page.reload();
  await page.locator('.mail-row', { hasText: 'See you tomorrow' }).click();
  await page.getByRole('button', { name: 'Cancel send' }).click();
  await page.getByText('The scheduled send was canceled').waitFor();
  const email = (await request(`${s.t.api}/emails?status=canceled`, { key: s.key })).body.data.find((e: { subject: string }) => e.subject === 'See you tomorrow');
  assert.ok(email, 'canceled on the box');
  assert.not.ok(s.sink.messages.some((x) => x.rcptTo.includes('later@dest.test')));
  assert.equal(errors, []);
});

test.run();
