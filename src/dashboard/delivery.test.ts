// Delivery status in the dashboard, in Chromium against the real app and the test kit's SMTP sink: a message
// composed and sent to an address the sink refuses (550) reads "Bounced" in the Sent view with the remote reply
// in the reading pane, and its notice arrives in the Inbox threaded with it; a deferred one (451) reads
// "Delayed" with the next attempt, a delivered one "Delivered"; a complaint coming in while the message is open
// changes the pane and the row live, over the event stream.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { login, request, TEST_PASSWORD } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { arfReport } from '../testkit/reports.ts';
import { openBrowser, signedIn } from '../testkit/browser.ts';

let browser: Browser;
let s: InboundScene;
let page: Page;
let errors: Error[];
let cookie: string;

test.before(async () => {
  browser = await openBrowser();
  s = await startInboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  s.routeTo('dest.test');
  s.sink.replyTo('nobody@dest.test', { code: 550, message: '5.1.1 <nobody@dest.test>: Recipient address rejected: User unknown' });
  s.sink.replyTo('slow@dest.test', { code: 451, message: '4.2.0 Mailbox busy, try again later' });
  cookie = await login(s.t, s.email);
  ({ page, errors } = await signedIn(browser, s.t, s.email, TEST_PASSWORD));
});
test.after(async () => {
  await browser?.close();
  await s?.stop();
});

const row = (subject: string) => page.locator('.mail-row', { hasText: subject });
const recipientLine = (address: string) => page.getByRole('region', { name: 'Delivery' }).locator('li', { hasText: address }).first();
/** A send by the owner's session, as the dashboard makes it. */
async function sendAsOwner(to: string, subject: string) {
  const res = await request(`${s.t.api}/emails`, { cookie, body: { from: 'hello@in.example', to: [to], subject, text: 'Hello.' } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body as { id: string; threadId: string; providerMessageId: string };
}

test('composed to an address that does not exist: "Bounced" in Sent, the reply in the pane, the notice in the Inbox', async () => {
  await page.goto(`${s.t.url}/mail/sent`);
  await page.getByRole('button', { name: 'Compose' }).click();
  const dialog = page.getByRole('dialog', { name: 'New message' });
  await dialog.getByPlaceholder('you@your-domain').fill('Hello <hello@in.example>');
  await dialog.getByPlaceholder('Addresses, separated by commas').fill('nobody@dest.test');
  await dialog.getByLabel('Subject').fill('Lunch on Friday');
  await dialog.getByLabel('Message').fill('Are you in?');
  await dialog.getByText('Saved', { exact: true }).waitFor();
  await dialog.getByRole('button', { name: 'Send', exact: true }).click();
  // The list follows the event stream: no reload.
  await row('Lunch on Friday').locator('.delivery-word', { hasText: /^Bounced$/ }).waitFor({ timeout: 15_000 });
  await row('Lunch on Friday').click();
  const line = recipientLine('nobody@dest.test');
  await line.getByText('Bounced: 550 5.1.1 <nobody@dest.test>: Recipient address rejected: User unknown (the address is now suppressed)').waitFor();

  await page.goto(`${s.t.url}/mail/inbox`);
  await row('Delivery Status Notification (Failure)').click();
  const notice = page.frameLocator('iframe[title="Message from Mail Delivery Subsystem"]');
  await notice.getByText('Address not found').waitFor();
  await notice.getByText(/wasn't delivered to nobody@dest\.test/).waitFor();
  // Threaded: the original above it, with where it stands.
  await page.locator('iframe[title="Message from Hello"]').waitFor();
  await recipientLine('nobody@dest.test').getByText(/^Bounced: 550/).waitFor();
  assert.not.ok(s.sink.messages.some((m) => m.rcptTo.includes('hello@in.example')), 'the notice never left the box');
  assert.equal(errors, []);
});

test('a deferred send reads "Delayed" with the next attempt and the answer; a delivered one "Delivered"', async () => {
  await sendAsOwner('slow@dest.test', 'Busy mailbox');
  await sendAsOwner('friend@dest.test', 'Plain delivery');
  await page.goto(`${s.t.url}/mail/sent`);
  await row('Busy mailbox').locator('.delivery-word', { hasText: /^Delayed$/ }).waitFor({ timeout: 15_000 });
  await row('Plain delivery').locator('.delivery-word', { hasText: /^Delivered$/ }).waitFor({ timeout: 15_000 });
  await row('Busy mailbox').click();
  await recipientLine('slow@dest.test').getByText(/^Delayed: next attempt at .*\d:\d\d.*; the server said: 451 4\.2\.0 Mailbox busy, try again later$/).waitFor();
  await row('Plain delivery').click();
  await recipientLine('friend@dest.test').getByText(/^Delivered at .*\d:\d\d/).waitFor();
  assert.equal(errors, []);
});

test('a complaint arriving while the message is open changes the pane and the row live, and brings its notice', async () => {
  const sent = await sendAsOwner('carol@dest.test', 'Spring sale');
  const m = await eventually(() => s.sink.messages.find((x) => x.raw.includes(sent.providerMessageId)), 10_000, 'the delivery');
  await page.goto(`${s.t.url}/mail/sent/${sent.id}`);
  await recipientLine('carol@dest.test').getByText(/^Delivered at/).waitFor({ timeout: 10_000 });
  const reply = await s.deliver(arfReport({ verp: m.mailFrom, messageId: sent.providerMessageId }, { originalRcptTo: 'carol@dest.test' }), { from: '', to: [m.mailFrom], helo: 'mx.dest.test' });
  assert.is(reply.code, 250, reply.text);
  await recipientLine('carol@dest.test').getByText(/^Complained \(marked as spam\) at/).waitFor({ timeout: 10_000 });
  await row('Spring sale').locator('.delivery-word', { hasText: /^Spam complaint$/ }).waitFor();
  await page.locator('.message', { hasText: 'Mail Delivery Subsystem' }).waitFor();
  await page.frameLocator('iframe[title="Message from Mail Delivery Subsystem"]').getByText('carol@dest.test reported your message as spam', { exact: false }).waitFor();
  assert.equal(errors, []);
});

test.run();
