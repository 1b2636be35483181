// The Domains, Inboxes and Developers pages in a real browser against the real app: an API key seen once,
// used and revoked; a domain added, verified against the test DNS server and set up for inbound; an inbox
// created (waiting for its MX, then receiving), forwarded and disabled; a webhook whose test event reaches a local receiver signed; a suppression
// removed; an email's event log. No page errors, and nothing wider than a phone at 390 px.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { request, seedWorkspace, TEST_PASSWORD } from '../testkit/app.ts';
import { addEvent } from '../emails/events.ts';
import { value } from '../db/query.ts';
import { BOX, eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { DESKTOP, openBrowser, PHONE, screenshots, signedIn } from '../testkit/browser.ts';

let browser: Browser;
let s: OutboundScene;
let page: Page;
let errors: Error[];
let login = '';
let receiver: Server;
let hookUrl = '';
const hits: Array<{ headers: IncomingMessage['headers']; body: string }> = [];
const DOMAIN = 'shop.test';
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });

/** At phone width the page is no wider than the screen (tables fold, nothing pushes it sideways). */
async function fitsPhone(p: Page, what: string) {
  await p.setViewportSize(PHONE);
  // A frame for the page to re-render at the new width (tables fold through matchMedia). The scripts are
  // strings because this file is type-checked without the DOM library.
  await p.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');
  const widths = (await p.evaluate('[document.documentElement.scrollWidth, innerWidth]')) as number[];
  await p.setViewportSize(DESKTOP);
  assert.ok(widths[0] <= widths[1], `${what} is ${widths[0]} px wide on a ${widths[1]} px phone`);
}

test.before(async () => {
  browser = await openBrowser();
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hits.push({ headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/mailwright`;
  s = await startOutboundScene({ env: { MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_DKIM_ED25519: 'true' } });
  // The domain's zone is served by Cloudflare's nameservers, so the page can name the provider.
  s.dns.addZone(DOMAIN, ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com']);
  s.routeTo('dest.test');
  ({ email: login } = await seedWorkspace(s.t, { email: 'developer@default.test' }));
  ({ page, errors } = await signedIn(browser, s.t, login, TEST_PASSWORD));
});
test.after(async () => {
  await browser?.close();
  receiver?.close();
  await s?.stop();
});

test('an API key is shown once, works, and stops working when revoked', async () => {
  await page.goto(`${s.t.url}/developers`);
  await page.getByRole('button', { name: 'Create API key' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Name').fill('Billing service');
  await dialog.getByRole('button', { name: 'Create key' }).click();
  const key = (await dialog.getByTestId('secret').innerText()).trim();
  assert.match(key, /^re_\S{20,}$/);
  await dialog.getByText('will not be shown again').waitFor();
  await dialog.getByRole('button', { name: 'Done' }).click();
  await dialog.waitFor({ state: 'detached' });

  const prefix = key.slice(0, 11);
  await page.reload();
  await page.locator(`tr[data-key="${prefix}"]`).waitFor();
  const html = await page.content();
  assert.not.ok(html.includes(key), 'the full key is nowhere on the page after a reload');
  assert.ok(html.includes(prefix), 'its prefix is listed');
  await fitsPhone(page, 'the keys tab');
  await screenshots(page, 'developers-keys');

  assert.is((await request(`${s.t.api}/domains`, { key })).status, 200, 'the new key works');
  await page.locator(`tr[data-key="${prefix}"]`).getByRole('button', { name: 'Revoke' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
  await page.locator(`tr[data-key="${prefix}"]`).waitFor({ state: 'detached' });
  assert.is((await request(`${s.t.api}/domains`, { key })).status, 401, 'a revoked key stops working');
});

test('a sending key made on the page sends but reads nothing else, and the table says so', async () => {
  await page.goto(`${s.t.url}/developers`);
  await page.getByRole('button', { name: 'Create API key' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Name').fill('Mailer');
  await dialog.getByRole('radio', { name: /Sending access/ }).check();
  await dialog.getByLabel('Sending from').waitFor();
  await dialog.getByRole('button', { name: 'Create key' }).click();
  const key = (await dialog.getByTestId('secret').innerText()).trim();
  await dialog.getByRole('button', { name: 'Done' }).click();
  const row = page.locator(`tr[data-key="${key.slice(0, 11)}"]`);
  await row.waitFor();
  assert.is((await row.locator('[data-access]').innerText()).trim(), 'Sending');
  const listed = (await request(`${s.t.api}/keys`, { key })).body.data;
  assert.equal(listed.map((k: { permission: string }) => k.permission), ['sending_access']);
  const refused = await request(`${s.t.api}/domains`, { key });
  assert.is(refused.status, 403);
  assert.is(refused.body.error.code, 'insufficient_scope');
});

test('a domain: added, its records listed, verified, the provider named, inbound set up, tracking on', async () => {
  await page.goto(`${s.t.url}/domains`);
  await page.getByText('No domains yet').waitFor();
  await page.getByRole('button', { name: 'Add domain' }).first().click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Domain name').fill(DOMAIN);
  await dialog.getByRole('button', { name: 'Add domain' }).click();
  await page.waitForURL(/\/domains\/dom_\w+$/);
  const id = page.url().split('/').pop()!;

  for (const record of ['DKIM', 'SPF', 'MX', 'DMARC']) await page.locator(`tr[data-record="${record}"]`).first().waitFor();
  const dkim = page.locator('tr[data-record="DKIM"]');
  assert.is(await dkim.count(), 2, 'RSA and ed25519');
  assert.match(await dkim.nth(0).innerText(), /^DKIM\s+Signs your mail[\s\S]*v=DKIM1; k=rsa; p=/);
  // The second signature's record, labelled as such, with its own selector in the provider's host.
  const ed = await dkim.nth(1).innerText();
  assert.match(ed, /DKIM \(ed25519\)\s+Second signature, recommended[\s\S]*v=DKIM1; k=ed25519; p=/);
  // The host as the provider's form wants it comes with the provider, a moment after the records.
  await dkim.nth(1).getByText(/Host in your DNS panel: mwe\w{8}\._domainkey/).waitFor();
  assert.match(await page.locator('tr[data-record="MX"]').innerText(), new RegExp(`bounces\\.${DOMAIN}[\\s\\S]*mx\\.mailwright\\.test[\\s\\S]*10`));
  await page.getByTestId('provider-card').locator('strong', { hasText: 'Cloudflare' }).waitFor();

  // Nothing published yet: Verify says what is missing.
  await page.getByRole('button', { name: 'Verify DNS' }).click();
  await page.getByText('What DNS answered').waitFor();
  await page.getByTestId('sending-card').getByText('Records missing or wrong').waitFor();

  s.dns.publish((await api(`/domains/${id}`)).body.records);
  await page.getByRole('button', { name: 'Verify DNS' }).click();
  await page.getByTestId('sending-card').getByText('Verified').waitFor();
  await page.getByText('What DNS answered').waitFor({ state: 'detached' });
  assert.is(await page.locator('tr[data-record="DKIM"]').getByText('Found').count(), 2, 'both DKIM records found');

  await page.getByRole('button', { name: 'Set up inbound' }).click();
  await page.getByTestId('inbound-mx').getByText('mx.mailwright.test').waitFor();
  assert.is((await api(`/domains/${id}`)).body.inbound.status, 'dns_pending');

  await page.getByRole('switch', { name: /Open tracking/ }).check();
  await eventually(async () => (await api(`/domains/${id}`)).body.open_tracking === true, 5000, 'open tracking on');
  await page.getByRole('switch', { name: /Marketing mail/ }).check();
  await eventually(async () => (await api(`/domains/${id}`)).body.marketing === true, 5000, 'marketing on');
  // DKIM rotation: a new key waits for its DNS record, shown to publish.
  await page.getByRole('button', { name: 'Rotate key' }).click();
  await page.getByTestId('dkim-rotation').getByText('Waiting for DNS').waitFor();
  const pending = (await api(`/domains/${id}`)).body.dkimRotation.pending;
  await page.getByTestId('dkim-rotation').getByText(pending.record.name).waitFor();

  // Everything loaded (the sidebar's event stream keeps the network from ever being idle).
  await eventually(async () => (await page.locator('.spinner').count()) === 0, 10_000, "the domain's page loaded");
  await fitsPhone(page, "a domain's page");
  await page.evaluate('scrollTo(0, 0)');
  await page.locator('.toast').waitFor({ state: 'detached' });
  await screenshots(page, 'domain');

  await page.goto(`${s.t.url}/domains`);
  await page.locator(`tr[data-domain="${DOMAIN}"]`).getByText('Verified').waitFor();
  await fitsPhone(page, 'the domains list');
  await screenshots(page, 'domains');
});

test('an inbox: created on the domain, forwarded to the owner, disabled and enabled', async () => {
  await page.goto(`${s.t.url}/inboxes`);
  await page.getByText('No inboxes yet').waitFor();
  await page.getByRole('button', { name: 'New inbox' }).first().click();
  const dialog = page.getByRole('dialog');
  await dialog.locator('input[name=local_part]').fill('support');
  await dialog.getByText(`The address will be support@${DOMAIN}`).waitFor();
  await dialog.locator('input[name=name]').fill('Support team');
  await dialog.getByRole('button', { name: 'Create inbox' }).click();
  const row = page.locator(`tr[data-inbox="support@${DOMAIN}"]`);
  // The domain's MX does not point here yet (inbound is dns_pending): not "Receiving", which would be untrue.
  await row.getByText('Waiting for MX').waitFor();
  await row.getByRole('link', { name: `the MX record of ${DOMAIN} points here` }).waitFor();
  assert.is(await row.getByText('Receiving').count(), 0);
  s.dns.set(DOMAIN, 'MX', [{ preference: 10, exchange: BOX }]);
  const domainId = (await api('/domains')).body.data[0].id;
  assert.is((await api(`/domains/${domainId}/inbound/verify`, { method: 'POST' })).body.status, 'ready');
  await page.reload();
  await row.getByText('Receiving').waitFor();

  await row.getByRole('button', { name: 'Forwarding' }).click();
  await dialog.getByLabel('Forward to').fill(login);
  await dialog.getByRole('button', { name: 'Start forwarding' }).click();
  await row.getByText(`→ ${login}`).waitFor();
  await row.getByText('Forwarding active').waitFor();

  await row.getByRole('button', { name: 'Disable' }).click();
  await dialog.getByRole('button', { name: 'Disable' }).click();
  await row.getByText('Disabled').waitFor();
  // The badge can show before a loaded machine's read sees the commit: wait for the box to say it too.
  const inbox = await eventually(async () => {
    const first = (await api('/inboxes')).body.data[0];
    return first.status === 'disabled' ? first : undefined;
  }, 10_000, 'the inbox disabled on the box');
  assert.equal([inbox.address, inbox.status, inbox.forwardStatus, inbox.name], [`support@${DOMAIN}`, 'disabled', 'active', 'Support team']);
  await row.getByRole('button', { name: 'Enable' }).click();
  await row.getByText('Receiving').waitFor();
  await fitsPhone(page, 'the inboxes page');
  await screenshots(page, 'inboxes');
});

test('a webhook: its secret shown once, a signed test event delivered, the secret rotated', async () => {
  await page.goto(`${s.t.url}/developers/webhooks`);
  await page.getByText('No webhook endpoints').waitFor();
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('URL').fill(hookUrl);
  await dialog.getByLabel('Description (optional)').fill('Order service');
  await dialog.getByRole('button', { name: 'Add endpoint' }).click();
  const secret = (await dialog.getByTestId('secret').innerText()).trim();
  assert.match(secret, /^whsec_/);
  await dialog.getByRole('button', { name: 'Open endpoint' }).click();
  await page.waitForURL(/\/developers\/webhooks\/wh_\w+$/);
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  await page.getByText('No deliveries yet').waitFor();

  await page.getByRole('button', { name: 'Send test event' }).click();
  await page.locator('tr[data-status="delivered"]').getByText('webhook.test').waitFor({ timeout: 15_000 });
  const hit = await eventually(() => hits.find((h) => h.body.includes('webhook.test')), 5000, 'the test event');
  const payload = new Webhook(secret).verify(hit.body, { 'webhook-id': String(hit.headers['webhook-id']), 'webhook-timestamp': String(hit.headers['webhook-timestamp']), 'webhook-signature': String(hit.headers['webhook-signature']) }) as { type: string };
  assert.is(payload.type, 'webhook.test');
  assert.match(await page.locator('tr[data-status="delivered"]').first().innerText(), /200/);
  await fitsPhone(page, "a webhook's page");
  await screenshots(page, 'developers-webhooks');

  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
  const rotated = (await page.getByTestId('secret').innerText()).trim();
  assert.match(rotated, /^whsec_/);
  assert.is.not(rotated, secret);
});

test('a suppression is removed, and one is added', async () => {
  assert.is((await api('/suppressions', { body: { email: 'gone@dest.test' } })).status, 201);
  await page.goto(`${s.t.url}/developers/suppressions`);
  const row = page.locator('tr[data-suppression="gone@dest.test"]');
  await row.getByText('Added by you').waitFor();
  await row.getByRole('button', { name: 'Remove' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Remove from list' }).click();
  await row.waitFor({ state: 'detached' });
  assert.is((await api('/suppressions/gone%40dest.test')).status, 404);
  await page.getByText('Nobody is suppressed').waitFor();

  await page.getByRole('button', { name: 'Add address' }).click();
  await page.getByRole('dialog').getByLabel('Address').fill('quiet@dest.test');
  await page.getByRole('dialog').getByRole('button', { name: 'Suppress' }).click();
  await page.locator('tr[data-suppression="quiet@dest.test"]').waitFor();
  assert.is((await api('/suppressions/quiet%40dest.test')).body.scope, 'all');
  await fitsPhone(page, 'the suppressions tab');
});

test("an email's event log", async () => {
  const sent = await s.send({ from: `hello@${DOMAIN}`, to: 'reader@dest.test', subject: 'Your order', text: 'Shipped.' });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  await eventually(async () => (await s.events(sent.body.id)).some((e) => e.type === 'delivered'), 10_000, 'delivery');
  await page.goto(`${s.t.url}/developers/events`);
  await page.getByRole('link', { name: 'Your order' }).click();
  await page.waitForURL(/\/developers\/events\?email=em_/);
  await page.locator('tr[data-event="sent"]').getByText('reader@dest.test').waitFor();
  await page.locator('tr[data-event="delivered"]').waitFor();
  await fitsPhone(page, 'the event log');
  // A much-opened email: its events a page of 100 at a time, oldest first.
  const { store, clock } = s.t.app;
  const workspaceId = (await store.read(value<string>('SELECT workspace_id FROM emails WHERE id = ?', sent.body.id)))!;
  await store.write(function* () {
    for (let i = 0; i < 150; i++) yield* addEvent(clock, { workspaceId, emailId: sent.body.id, type: 'opened', recipient: 'reader@dest.test', data: { ip: `192.0.2.${i}` } });
  });
  await page.reload();
  await page.getByText('1–100', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Later' }).click();
  await page.locator('tr[data-event="opened"]').getByText('ip: 192.0.2.149').waitFor();
  assert.is(await page.getByRole('button', { name: 'Later' }).isDisabled(), true);
  await page.getByRole('button', { name: 'Earlier' }).click();
  await page.getByText('1–100', { exact: true }).waitFor();
  await page.locator('tr[data-event="sent"]').waitFor();
});

test('no page errors', () => {
  assert.equal(errors.map(String), []);
});

test.run();
