// Open and click tracking end to end: off by default (the HTML arrives as sent, one copy for all), and with a
// domain's switches on, a copy per recipient whose pixel and links lead through the box's public URL, the
// `opened` / `clicked` events they record for the right recipient, the 302 to the message's own link, and the
// refusal of any redirect that is not one of them. Then the HTML rewriting itself on awkward markup.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { request } from '../testkit/app.ts';
import { readBoxSecret } from '../db/box-secret.ts';
import { linkToken } from './link-token.ts';
import { findLinks, rewriteHtml } from './tracking.ts';
import { signedCopy } from '../emails/outgoing.ts';

let s: OutboundScene;
let domainId: string;
let base: string;

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  domainId = (await s.verifiedDomain('track.test')).id;
  s.routeTo('dest.test');
  base = s.t.app.config.publicUrl.replace(/\/+$/, '');
});
test.after(() => s.stop());

const HTML = `<!doctype html>
<html><body>
<p>Hello, see <a href="https://shop.test/a?x=1&amp;y=2">the shop</a> and <A class="x" HREF='http://blog.test/post'>the blog</A>.</p>
<p><a href="mailto:hi@track.test">Write</a> <a href="#top">Top</a> <a href="/relative">Here</a></p>
<!-- <a href="https://hidden.test/">not a link</a> -->
</body></html>
`;

const tracking = async (body: { open_tracking?: boolean; click_tracking?: boolean }) =>
  assert.is((await request(`${s.t.api}/domains/${domainId}`, { method: 'PATCH', body, key: s.key })).status, 200);
const events = async (id: string) => (await request(`${s.t.api}/emails/${id}/events`, { key: s.key })).body.data as Array<{ type: string; recipient: string; data: Record<string, unknown> }>;
const messagesOf = (subject: string) => s.sink.messages.filter((m) => m.raw.toString('latin1').includes(`\r\nSubject: ${subject}\r\n`));
const settle = () => new Promise((r) => setTimeout(r, 400));
const escaped = (str: string) => str.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
// Links in mail name the public URL (here the default); the test reaches the same app on its own port.
const local = (url: string) => s.t.url + url.slice(base.length);

/** Sends HTML to the recipients and waits for every copy; `of` finds a recipient's parsed copy. */
async function sendHtml(subject: string, to: string[], html = HTML) {
  const res = await s.send({ from: 'news@track.test', to, subject, html });
  assert.is(res.status, 200, JSON.stringify(res.body));
  await eventually(() => messagesOf(subject).flatMap((m) => m.rcptTo).length >= to.length, 10_000, `${subject} delivered`);
  await settle();
  const copies = await Promise.all(messagesOf(subject).map(async (m) => ({ m, parsed: await simpleParser(m.raw) })));
  return { id: res.body.id as string, copies, of: (r: string) => copies.find((c) => c.m.rcptTo.includes(r))! };
}

test('tracking is off by default: the HTML arrives as sent, in one copy for all recipients', async () => {
  const sent = await sendHtml('Untracked', ['ann@dest.test', 'bob@dest.test']);
  assert.is(sent.copies.length, 1);
  assert.equal(sent.copies[0].m.rcptTo.sort(), ['ann@dest.test', 'bob@dest.test']);
  assert.is(String(sent.copies[0].parsed.html).replace(/\r\n/g, '\n'), HTML);
  assert.not.match(sent.copies[0].m.raw.toString('latin1'), /\/(open|click)\//);
  assert.ok((await signedCopy(s.t.app.store, sent.id))!.equals(sent.copies[0].m.raw));
});

test('open tracking: each copy has its own pixel; a GET records `opened` for that recipient, HEAD and forged tokens do not', async () => {
  await tracking({ open_tracking: true });
  const sent = await sendHtml('Opens', ['ann@dest.test', 'bob@dest.test']);
  assert.is(sent.copies.length, 2, 'a copy per recipient');
  const pixelOf = (r: string) => {
    const html = String(sent.of(r).parsed.html);
    const m = new RegExp(`<img src="(${escaped(base)}/open/[0-9a-z-]+)" width="1" height="1" alt=""[^>]*>\\s*</body>`).exec(html);
    assert.ok(m, `the pixel is the last thing in the body: ${html}`);
    assert.ok(html.includes('href="https://shop.test/a?x=1&amp;y=2"'), 'links untouched without click tracking');
    assert.not.match(sent.of(r).parsed.text ?? '', /\/open\//);
    return m![1];
  };
  const ann = pixelOf('ann@dest.test');
  const bob = pixelOf('bob@dest.test');
  assert.is.not(ann, bob);
  for (const c of sent.copies) assert.is((await s.dkim(c.m.raw)).status, 'pass');

  const res = await fetch(local(ann), { headers: { 'user-agent': 'TestMail/1.0' } });
  assert.is(res.status, 200);
  assert.is(res.headers.get('content-type'), 'image/gif');
  assert.match(res.headers.get('cache-control') ?? '', /no-store/);
  assert.is(res.headers.get('cross-origin-resource-policy'), 'cross-origin');
  assert.equal([...Buffer.from(await res.arrayBuffer()).subarray(0, 6)], [...Buffer.from('GIF89a')]);
  assert.is((await fetch(local(bob), { method: 'HEAD' })).status, 200);
  assert.is((await fetch(local(ann).replace(/.$/, (c) => (c === '0' ? '1' : '0')))).status, 200, 'a forged token still gets the image');
  await settle();
  const opened = (await events(sent.id)).filter((e) => e.type === 'opened');
  assert.equal(opened.map((e) => [e.recipient, e.data.userAgent, e.data.ip]), [['ann@dest.test', 'TestMail/1.0', '127.0.0.1']]);
  await tracking({ open_tracking: false });
});

let clicks: Awaited<ReturnType<typeof sendHtml>>;
const linksOf = (r: string) => [...String(clicks.of(r).parsed.html).matchAll(/href=(["'])(.*?)\1/gi)].map((m) => m[2]);

test('click tracking: http(s) links lead through the box; a click records `clicked` for that recipient and redirects (302) to the original URL', async () => {
  await tracking({ click_tracking: true });
  clicks = await sendHtml('Clicks', ['ann@dest.test', 'bob@dest.test']);
  assert.is(clicks.copies.length, 2);
  const clickUrl = new RegExp(`^${escaped(base)}/click/[0-9a-z]{26}-\\d+-\\d+-[0-9a-f]{20}$`);
  for (const r of ['ann@dest.test', 'bob@dest.test']) {
    const [shop, blog, ...rest] = linksOf(r);
    assert.match(shop, clickUrl);
    assert.match(blog, clickUrl);
    assert.equal(rest, ['mailto:hi@track.test', '#top', '/relative', 'https://hidden.test/'], 'other links and the comment untouched');
    assert.not.ok(String(clicks.of(r).parsed.html).includes('<img'), 'no pixel without open tracking');
    // The text part is derived from the original HTML: the real URLs, no redirects.
    const text = clicks.of(r).parsed.text ?? '';
    assert.ok(text.includes('https://shop.test/a?x=1&y=2'), text);
    assert.not.match(text, /\/click\//);
    assert.is((await s.dkim(clicks.of(r).m.raw)).status, 'pass');
  }
  assert.is.not(linksOf('ann@dest.test')[0], linksOf('bob@dest.test')[0]);

  const annShop = await request(local(linksOf('ann@dest.test')[0]), { headers: { 'user-agent': 'Browser/2' } });
  assert.is(annShop.status, 302);
  assert.is(annShop.headers.get('location'), 'https://shop.test/a?x=1&y=2');
  const bobBlog = await request(local(linksOf('bob@dest.test')[1]), { headers: { 'user-agent': 'Phone/3' } });
  assert.equal([bobBlog.status, bobBlog.headers.get('location')], [302, 'http://blog.test/post']);
  const head = await request(local(linksOf('bob@dest.test')[0]), { method: 'HEAD' });
  assert.equal([head.status, head.headers.get('location')], [302, 'https://shop.test/a?x=1&y=2']);
  await settle();
  const clicked = (await events(clicks.id)).filter((e) => e.type === 'clicked');
  assert.equal(
    clicked.map((e) => [e.recipient, e.data.url, e.data.userAgent, e.data.ip]),
    [
      ['ann@dest.test', 'https://shop.test/a?x=1&y=2', 'Browser/2', '127.0.0.1'],
      ['bob@dest.test', 'http://blog.test/post', 'Phone/3', '127.0.0.1'],
    ],
  );
});

test('a click redirects only to links of the message: altered, foreign or out-of-range tokens get a 404 page, never a Location', async () => {
  const before = (await events(clicks.id)).length;
  const good = linksOf('ann@dest.test')[0];
  const [emailPart, index, link, mac] = good.slice(good.lastIndexOf('/') + 1).split('-');
  const emailId = `em_${emailPart.toUpperCase()}`;
  const secret = await s.t.app.store.read(readBoxSecret());
  const refused = [
    `${emailPart}-${index}-${link}-${mac.replace(/.$/, (c) => (c === '0' ? '1' : '0'))}`,
    `${emailPart}-${index}-1-${mac}`, // the other link, with the first one's MAC
    linkToken(secret, 'click', { emailId, recipient: 'ann@dest.test', index: Number(index), link: 99 }), // signed, but the message has no link 99
    linkToken(secret, 'unsubscribe', { emailId, recipient: 'ann@dest.test', index: Number(index) }),
    'https%3A%2F%2Fevil.test%2F',
  ];
  for (const token of refused) {
    const res = await request(`${s.t.url}/click/${token}`);
    assert.is(res.status, 404, token);
    assert.is(res.headers.get('location'), null);
    assert.match(res.body, /not valid/);
  }
  // A URL in the query is no redirect target: the token alone decides.
  const named = await request(`${local(good)}?url=https%3A%2F%2Fevil.test%2F&to=https://evil.test/`);
  assert.equal([named.status, named.headers.get('location')], [302, 'https://shop.test/a?x=1&y=2']);
  await settle();
  // The valid one is ann's second click of that link within the hour: counted on her first, no event of its own.
  assert.is((await events(clicks.id)).length, before, 'no event for the refused tokens nor for the repeat');
  const annsClick = async () => (await events(clicks.id)).find((e) => e.type === 'clicked' && e.recipient === 'ann@dest.test')!;
  await eventually(async () => (await annsClick()).data.repeats === 1, 15_000, 'the repeat counted on the first click');
  assert.is((await annsClick()).data.url, 'https://shop.test/a?x=1&y=2');
  await tracking({ click_tracking: false });
});

test('findLinks and rewriteHtml: only <a href> with a URL a browser would open exactly; everything else byte for byte', () => {
  const html = [
    '<a title="a > b" href=https://one.test/x>1</a>',
    '<a\nhref = " https://two.test/?a=1&b=2&amp;c=3 " href="https://ignored.test/">2</a>',
    '<abbr href="https://not-a-link.test/">3</abbr>',
    '<script>var s = "<a href=\'https://in-script.test/\'>";</script>',
    '<style>a[href="https://in-style.test/"]{}</style>',
    '<a href="HTTPS://Three.TEST/P%20Q">4</a>',
    '<a href="javascript:alert(1)">5</a>',
    '<a href="https://four.test/?x=1&copy;">6</a>',
    '<a href="https://five.test/?x=1&not_y=2">7</a>',
    '<a href="https://six.test/&#x3F;q=&#49;">8</a>',
    '<a href="https://seven.test/&constructor;">9</a>',
    '<a href>10</a>',
    '<a HREF href="https://after-empty.test/">11</a>',
  ].join('\n');
  assert.equal(findLinks(html), ['https://one.test/x', 'https://two.test/?a=1&b=2&c=3', 'https://three.test/P%20Q', 'https://six.test/?q=1']);
  const out = rewriteHtml(html, { links: ['https://box.test/c/0', 'https://box.test/c/1', 'https://box.test/c/2', 'https://box.test/c/3'], pixel: null });
  assert.is(
    out,
    html
      .replace('href=https://one.test/x', 'href="https://box.test/c/0"')
      .replace('href = " https://two.test/?a=1&b=2&amp;c=3 "', 'href = "https://box.test/c/1"')
      .replace('href="HTTPS://Three.TEST/P%20Q"', 'href="https://box.test/c/2"')
      .replace('href="https://six.test/&#x3F;q=&#49;"', 'href="https://box.test/c/3"'),
  );
  assert.is(rewriteHtml('<p>x</p></BODY></html>', { links: null, pixel: 'https://box.test/o/1' }), '<p>x</p><img src="https://box.test/o/1" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0"></BODY></html>');
  assert.ok(rewriteHtml('<p>x</p>', { links: null, pixel: 'https://box.test/o/1' }).startsWith('<p>x</p><img src="https://box.test/o/1"'));
  // Unfinished markup ends the scan instead of guessing.
  assert.equal(findLinks('<a href="https://ok.test/">a</a><a href="https://cut.test/'), ['https://ok.test/']);
});

test.run();
