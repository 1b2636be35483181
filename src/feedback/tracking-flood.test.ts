// Floods of tracking links (RES-16) on the running app, over real sockets: 2,000 fetches of one open pixel from
// one address and 2,000 of one click link from eight write one event each (with one webhook each), every fetch
// still gets its image or its redirect, and the repeats are counted on the first event. Past an address's
// budget nothing more is counted, while other recipients' first opens through one shared address (an image
// proxy) are all recorded, and analytics count each recipient's open once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import { Agent, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { request } from '../testkit/app.ts';
import { readBoxSecret } from '../db/box-secret.ts';
import { column, value } from '../db/query.ts';
import { openHolder } from './tracking.ts';
import { LinkVisits } from './visits.ts';
import { VISITS_PER_ADDRESS } from './link-routes.ts';

let s: OutboundScene;
let receiver: Server;
const hooks: Array<{ type: string; data: { event: { recipient: string } } }> = [];
let base: string;
const RECIPIENTS = Array.from({ length: 10 }, (_, i) => `r${i}@dest.test`);
let emailId: string;
const pixel: Record<string, string> = {};
let click = '';
// The app's time, held still while a test needs an address's budget not to refill.
let frozen: number | null = null;
const clock = { now: () => frozen ?? Date.now() };

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true' }, clock });
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c)).on('end', () => {
      hooks.push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = await request(`${s.t.api}/webhooks`, { key: s.key, body: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['email.opened', 'email.clicked'] } });
  assert.is(hook.status, 201, JSON.stringify(hook.body));
  const domain = await s.verifiedDomain('track.test');
  assert.is((await request(`${s.t.api}/domains/${domain.id}`, { method: 'PATCH', key: s.key, body: { open_tracking: true, click_tracking: true } })).status, 200);
  s.routeTo('dest.test');
  base = s.t.app.config.publicUrl.replace(/\/+$/, '');

  const sent = await s.send({ from: 'news@track.test', to: RECIPIENTS, subject: 'Flood', html: '<p>Read <a href="https://shop.test/sale">the sale</a>.</p>' });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  emailId = sent.body.id;
  await eventually(() => s.sink.messages.flatMap((m) => m.rcptTo).length >= RECIPIENTS.length, 15_000, 'every copy delivered');
  // Each delivery's event is written after the sink's 250: only then does the email's row count stand still.
  await eventually(async () => (await s.events(emailId)).filter((e) => e.type === 'delivered').length === RECIPIENTS.length, 15_000, 'every delivery recorded');
  for (const m of s.sink.messages) {
    const html = String((await simpleParser(m.raw)).html);
    const local = (url: string) => s.t.url + url.slice(base.length);
    pixel[m.rcptTo[0]] = local(/<img src="([^"]+\/open\/[^"]+)"/.exec(html)![1]);
    if (m.rcptTo[0] === 'r0@dest.test') click = local(/href="([^"]+\/click\/[^"]+)"/.exec(html)![1]);
  }
});

test.after(async () => {
  await s.stop();
  receiver.close();
});

interface Hit {
  status: number;
  type: string | undefined;
  location: string | undefined;
}

/** `n` GETs of `url`, `parallel` at a time, spread over the client addresses given; every answer. */
async function flood(url: string, n: number, from: string[], parallel = 16): Promise<Hit[]> {
  const agents = from.map((localAddress) => new Agent({ keepAlive: true, maxSockets: parallel, localAddress } as ConstructorParameters<typeof Agent>[0]));
  const hits: Hit[] = [];
  let next = 0;
  const one = (i: number) =>
    new Promise<Hit>((resolve, reject) => {
      get(url, { agent: agents[i % agents.length], headers: { 'user-agent': 'Flood/1' } }, (res) => {
        res.resume().on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], location: res.headers.location }));
      }).on('error', reject);
    });
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n) hits.push(await one(next++));
    }),
  );
  for (const a of agents) a.destroy();
  return hits;
}

const eventsOf = async (type: string, recipient?: string) =>
  (await s.t.app.store.read(column<string>(`SELECT data FROM events WHERE email_id = ? AND type = ?${recipient ? ' AND recipient = ?' : ''} ORDER BY seq`, emailId, type, ...(recipient ? [recipient] : []))))
    .map((d) => JSON.parse(d) as { repeats?: number; lastRepeatAt?: string; url?: string; ip: string });
const rowsOfEmail = async () => Number(await s.t.app.store.read(value<number>('SELECT count(*) FROM events WHERE email_id = ?', emailId)));

test('2,000 fetches of one pixel from one address: every one gets the image, one `opened` event and one webhook; repeats counted within the budget', async () => {
  const before = await rowsOfEmail();
  const hits = await flood(pixel['r0@dest.test'], 2000, ['127.0.0.1']);
  assert.is(hits.length, 2000);
  assert.ok(hits.every((h) => h.status === 200 && h.type === 'image/gif'), 'the image, every time');
  assert.is(await rowsOfEmail(), before + 1, 'one row written');
  const [open] = await eventsOf('opened', 'r0@dest.test');
  assert.is(open.ip, '127.0.0.1');
  // The first counts the event; past the address's burst, the steady rate lets some more be counted.
  await eventually(async () => ((await eventsOf('opened', 'r0@dest.test'))[0].repeats ?? 0) >= VISITS_PER_ADDRESS.burst - 1, 15_000, 'the repeats written');
  const repeats = (await eventsOf('opened', 'r0@dest.test'))[0].repeats!;
  assert.ok(repeats <= 1999, `${repeats} repeats`);
  assert.ok((await eventsOf('opened', 'r0@dest.test'))[0].lastRepeatAt);
  await eventually(() => hooks.some((h) => h.type === 'email.opened'), 15_000, 'the webhook');
  const shown = (await request(`${s.t.api}/emails/${emailId}/events`, { key: s.key })).body.data.filter((e: { type: string }) => e.type === 'opened');
  assert.is(shown.length, 1);
  assert.is(shown[0].data.repeats, (await eventsOf('opened', 'r0@dest.test'))[0].repeats, 'the API shows the count');
});

test('2,000 clicks of one link from eight addresses: every one redirects to the link, one `clicked` event and webhook, 1,999 repeats', async () => {
  const before = await rowsOfEmail();
  const from = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 2}`);
  const hits = await flood(click, 2000, from);
  assert.ok(hits.every((h) => h.status === 302 && h.location === 'https://shop.test/sale'), 'every click redirected');
  assert.is(await rowsOfEmail(), before + 1, 'one row written');
  // 250 from each address, within each one's budget: every visit counted.
  await eventually(async () => (await eventsOf('clicked', 'r0@dest.test'))[0].repeats === 1999, 15_000, 'all 1,999 repeats written');
  assert.is((await eventsOf('clicked')).length, 1);
  assert.is((await eventsOf('clicked'))[0].url, 'https://shop.test/sale');
  await eventually(() => hooks.some((h) => h.type === 'email.clicked'), 15_000, 'the webhook');
});

test('first opens of other recipients through one shared address (an image proxy) are each recorded; past its budget an address records nothing, yet gets the image', async () => {
  const proxy = ['127.0.0.20'];
  const others = RECIPIENTS.slice(1, -1);
  for (const r of others) assert.is((await flood(pixel[r], 1, proxy, 1))[0].status, 200);
  assert.equal(
    await Promise.all(others.map(async (r) => (await eventsOf('opened', r)).length)),
    others.map(() => 1),
    'one open per recipient',
  );
  // With the clock held, 127.0.0.30's budget does not refill: it spends it on r1's pixel (each fetch a repeat,
  // counted), and r9's pixel, never opened, is still served to it while nothing is written.
  frozen = Date.now();
  try {
    const spent = await flood(pixel['r1@dest.test'], VISITS_PER_ADDRESS.burst + 200, ['127.0.0.30']);
    assert.ok(spent.every((h) => h.status === 200));
    const rows = await rowsOfEmail();
    const over = await flood(pixel['r9@dest.test'], 5, ['127.0.0.30'], 1);
    assert.ok(over.every((h) => h.status === 200 && h.type === 'image/gif'));
    assert.is(await rowsOfEmail(), rows, 'nothing written past the budget');
    assert.is((await eventsOf('opened', 'r9@dest.test')).length, 0);
  } finally {
    frozen = null;
  }
  await eventually(async () => (await eventsOf('opened', 'r1@dest.test'))[0].repeats === VISITS_PER_ADDRESS.burst, 15_000, 'exactly the budget counted');
  // The proxy's first fetch of r9's pixel counts.
  await flood(pixel['r9@dest.test'], 1, proxy, 1);
  assert.is((await eventsOf('opened', 'r9@dest.test')).length, 1);
});

test('after a restart (a fresh tally), a visit within the hour is found in the database: a repeat, no new event', async () => {
  const fresh = new LinkVisits(s.t.app);
  const token = pixel['r3@dest.test'].split('/').pop()!;
  const rows = await rowsOfEmail();
  const outcome = await fresh.visit({ holder: (await s.t.app.store.read(openHolder(await s.t.app.store.read(readBoxSecret()), token)))!, type: 'opened', url: null, visit: { userAgent: null, ip: '127.0.0.1' } });
  assert.is(outcome, 'repeat');
  await fresh.stop();
  assert.is(await rowsOfEmail(), rows);
  assert.is((await eventsOf('opened', 'r3@dest.test'))[0].repeats, 1);
});

test('analytics and webhooks count each recipient once: ten opens, one click', async () => {
  const a = await request(`${s.t.api}/analytics?days=7`, { key: s.key });
  assert.is(a.status, 200, JSON.stringify(a.body));
  assert.equal([a.body.metrics.opened, a.body.metrics.clicks], [10, 1]);
  await eventually(() => hooks.filter((h) => h.type === 'email.opened').length === 10, 15_000, 'a webhook per first open');
  assert.equal(hooks.filter((h) => h.type === 'email.clicked').length, 1);
  assert.equal(new Set(hooks.filter((h) => h.type === 'email.opened').map((h) => h.data.event.recipient)).size, 10);
});

test.run();
