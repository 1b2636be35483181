// A domain's received reports in a real browser: DMARC and TLS reports delivered over SMTP show on the domain
// page's cards (who reported, sessions, failure types), and the DMARC page lists who sends as the domain, with
// PTR names, volumes, alignment and what receivers did, and the latest reports.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { TEST_PASSWORD } from '../testkit/app.ts';
import { openBrowser, signedIn } from '../testkit/browser.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { googleMessage, googleXml, gzipped, multipartMessage, tlsReportJson, zipped } from '../testkit/aggregate-reports.ts';

let browser: Browser;
let s: InboundScene;
let page: Page;
let errors: Error[];
let shop: { id: string };
const BEGIN = Math.floor(Date.now() / 1000) - 2 * 86400;
const END = BEGIN + 86399;

test.before(async () => {
  browser = await openBrowser();
  s = await startInboundScene();
  shop = await s.verifiedDomain('shop.example');
  s.dns.set('7.100.51.198.in-addr.arpa', 'PTR', ['host7.spoofer.example.net']);
  ({ page, errors } = await signedIn(browser, s.t, s.email, TEST_PASSWORD));
});
test.after(async () => {
  await browser?.close();
  await s?.stop();
});

async function deliver(raw: string, to: string) {
  const reply = await s.deliver(raw, { from: 'reports@receiver.example', to: [to] });
  assert.is(reply.code, 250, reply.text);
}

test('the domain page has a TLS reports card and a DMARC card leading to who sends as you', async () => {
  const to = 'dmarc-reports@bounces.shop.example';
  const xml = googleXml({
    domain: 'shop.example',
    reportId: '5717107811868587391',
    begin: BEGIN,
    end: END,
    rows: [
      { ip: '203.0.113.25', count: 120, dkim: 'pass', spf: 'pass' },
      { ip: '198.51.100.7', count: 42, dkim: 'fail', spf: 'fail', disposition: 'quarantine' },
    ],
  });
  await deliver(googleMessage(to, 'g.zip', zipped('g.xml', xml), 'shop.example', '1'), to);
  const tls = 'tls-reports@bounces.shop.example';
  await deliver(multipartMessage({ from: 'tlsrpt@company-x.example', to: tls, subject: 'TLS report', file: 'r.json.gz', contentType: 'application/tlsrpt+gzip', content: gzipped(tlsReportJson('shop.example', 'x-1')) }), tls);

  await page.goto(`${s.t.url}/domains/${shop.id}`);
  const card = page.getByTestId('tls-card');
  await card.getByText('303 failed sessions').waitFor();
  const text = await card.innerText();
  assert.ok(text.includes('5326 sessions succeeded in the latest 1 report, from Company-X.'), text);
  assert.ok(text.includes('starttls-not-supported: 200'), text);
  assert.ok(text.includes('certificate-expired: 100'), text);
  const dmarc = page.getByTestId('dmarc-card');
  await dmarc.getByText('42 failed').waitFor();
  assert.ok((await dmarc.innerText()).includes('162 messages from 2 sources in the last 30 days.'));

  await dmarc.getByRole('link', { name: 'Who sends as you' }).click();
  await page.getByRole('heading', { name: 'DMARC reports for shop.example' }).waitFor();
  const rows = page.getByTestId('dmarc-source');
  await rows.first().waitFor();
  assert.is(await rows.count(), 2);
  const first = await rows.nth(0).innerText();
  assert.match(first, /203\.0\.113\.25/);
  assert.match(first, /no PTR name/);
  assert.match(first, /100%/);
  const second = await rows.nth(1).innerText();
  assert.match(second, /198\.51\.100\.7/);
  assert.match(second, /host7\.spoofer\.example\.net/);
  assert.match(second, /quarantined 42/);
  assert.match(second, /fail/);
  assert.ok((await page.getByTestId('dmarc-totals').innerText()).includes('162 messages from 2 sources in 1 report'));
  const report = await page.getByTestId('dmarc-report').first().innerText();
  assert.match(report, /google\.com/);
  assert.match(report, /5717107811868587391/);
  assert.match(report, /sender unverified/, 'an unsigned report says so');
  assert.equal(errors, []);
});

test.run();
