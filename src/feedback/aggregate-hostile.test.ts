// Hostile reports at a domain's report addresses, over real SMTP: an XML external entity (served by a test HTTP
// server that must never be asked), a zip bomb, a zip of several files, a 50 MB XML, malformed dates and a
// report about another workspace's domain. Each is acknowledged and kept aside with its reason; nothing else
// changes and the box stays up.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { zipSync } from 'fflate';
import { request, seedWorkspace } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { googleMessage, googleXml, gzipped, multipartMessage, tlsReportJson, zipped, type Row } from '../testkit/aggregate-reports.ts';

let s: InboundScene;
let shop: { id: string };
let server: Server;
let asked: string[] = [];
const DMARC = 'dmarc-reports@bounces.shop.example';
const BEGIN = 1764201600;
const END = BEGIN + 86399;
const row: Row = { ip: '203.0.113.25', count: 5, dkim: 'pass', spf: 'pass' };

test.before(async () => {
  s = await startInboundScene();
  shop = await s.verifiedDomain('shop.example');
  server = createServer((req, res) => {
    asked.push(req.url ?? '');
    res.end('<secret>root:x:0:0</secret>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
test.after(async () => {
  server.close();
  await s.stop();
});

const api = (path: string, key = s.key) => request(`${s.t.api}${path}`, { key });

async function keptAside(raw: string, to = DMARC): Promise<{ id: string; reason: string; format: string; bytes: number }> {
  const reply = await s.deliver(raw, { from: 'reports@receiver.example', to: [to], helo: 'mail.receiver.example' });
  assert.is(reply.code, 250, `acknowledged: it was delivered, we could not read it (${reply.text})`);
  const id = /queued as (rrej_\w+)/.exec(reply.text)?.[1];
  assert.ok(id, reply.text);
  const list = await api(`/domains/${shop.id}/rejected-reports`);
  const found = list.body.data.find((r: { id: string }) => r.id === id);
  assert.ok(found, 'listed among the rejected reports');
  return found;
}

const xmlMessage = (xml: string, file = 'report.xml') => multipartMessage({ from: 'dmarc@receiver.example', to: DMARC, subject: 'Report Domain: shop.example', file, contentType: 'text/xml', content: Buffer.from(xml) });
const zipMessage = (zip: Buffer) => googleMessage(DMARC, `google.com!shop.example!${BEGIN}!${END}.zip`, zip, 'shop.example', '1');

test('an external entity is never fetched or expanded: the report is kept aside, the test server never asked', async () => {
  const { port } = server.address() as AddressInfo;
  const xml = googleXml({ domain: 'shop.example', reportId: 'xxe-1', begin: BEGIN, end: END, rows: [row] })
    .replace('<?xml version="1.0" encoding="UTF-8" ?>', `<?xml version="1.0" encoding="UTF-8" ?>\n<!DOCTYPE feedback [<!ENTITY xxe SYSTEM "http://127.0.0.1:${port}/etc/passwd">]>`)
    .replace('<org_name>google.com</org_name>', '<org_name>&xxe;</org_name>');
  const kept = await keptAside(xmlMessage(xml));
  assert.is(kept.reason, 'the XML declares a DOCTYPE or entities, which reports never do (refused unread: XXE)');
  assert.is(kept.format, 'dmarc');
  // Billion laughs: the same refusal, nothing expanded.
  const laughs = `<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>\n<feedback><report_metadata><org_name>&lol2;</org_name></report_metadata></feedback>`;
  assert.match((await keptAside(xmlMessage(laughs))).reason, /DOCTYPE/);
  assert.equal(asked, [], 'nothing asked the entity server');
  assert.is((await api(`/domains/${shop.id}/dmarc-reports`)).body.count, 0);
});

test('a zip bomb is stopped at the ratio cap; a zip of several files is refused', async () => {
  const bomb = zipped(`google.com!shop.example!${BEGIN}!${END}.xml`, Buffer.alloc(32 * 1024 * 1024, 0x20));
  assert.ok(bomb.length < 50 * 1024, `the bomb is small (${bomb.length} bytes)`);
  const kept = await keptAside(zipMessage(bomb));
  assert.match(kept.reason, /^the report decompresses past 100 times its compressed size \(\d+ bytes\): a compression bomb$/);
  assert.is(kept.bytes, bomb.length);

  const two = Buffer.from(zipSync({ 'a.xml': Buffer.from(googleXml({ domain: 'shop.example', reportId: 'a', begin: BEGIN, end: END, rows: [row] })), 'b.xml': Buffer.from('<feedback/>') }));
  assert.is((await keptAside(zipMessage(two))).reason, 'the zip file holds more than one file');
  const broken = Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(64, 7)]);
  assert.match((await keptAside(zipMessage(broken))).reason, /zip/);
});

test('a 50 MB XML (gzipped small enough to pass SMTP) is refused past the 5 MB cap', async () => {
  const rows: string[] = [];
  let size = 0;
  for (let i = 0; size < 50 * 1024 * 1024; i++) {
    const r = `<record><row><source_ip>10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}</source_ip><count>${(i * 7919) % 1000}</count><policy_evaluated><disposition>none</disposition><dkim>pass</dkim><spf>fail</spf></policy_evaluated></row><identifiers><header_from>shop.example</header_from></identifiers><auth_results><spf><domain>h${i}.example</domain><result>fail</result></spf></auth_results></record>\n`;
    rows.push(r);
    size += r.length;
  }
  const xml = googleXml({ domain: 'shop.example', reportId: 'huge', begin: BEGIN, end: END, rows: [] }).replace('</feedback>', `${rows.join('')}</feedback>`);
  const gz = gzipped(xml);
  assert.ok(gz.length < 20 * 1024 * 1024 / 1.4, `the gzip fits the message limit (${gz.length} bytes)`);
  const kept = await keptAside(multipartMessage({ from: 'dmarc@receiver.example', to: DMARC, subject: 'big', file: 'big.xml.gz', contentType: 'application/gzip', content: gz }));
  assert.is(kept.reason, 'the report is larger than 5 MB decompressed');
});

test('malformed dates are refused with the field named', async () => {
  const xml = googleXml({ domain: 'shop.example', reportId: 'dates', begin: 'yesterday', end: END, rows: [row] });
  assert.is((await keptAside(xmlMessage(xml))).reason, 'malformed date_range.begin: "yesterday" is not a time in seconds');
  const reversed = googleXml({ domain: 'shop.example', reportId: 'dates-2', begin: END, end: BEGIN, rows: [row] });
  assert.is((await keptAside(xmlMessage(reversed))).reason, 'malformed date_range: begin is after end');
  const far = googleXml({ domain: 'shop.example', reportId: 'dates-3', begin: 99999999999, end: 99999999999, rows: [row] });
  assert.match((await keptAside(xmlMessage(far))).reason, /not a plausible time/);
  const tls = tlsReportJson('shop.example', 'bad-date').replace('2026-11-27T00:00:00Z', '27/11/2026');
  const kept = await keptAside(multipartMessage({ from: 'tlsrpt@x.example', to: 'tls-reports@bounces.shop.example', subject: 'tls', file: 'r.json.gz', contentType: 'application/tlsrpt+gzip', content: gzipped(tls) }), 'tls-reports@bounces.shop.example');
  assert.equal([kept.format, kept.reason], ['tls', 'malformed start-datetime: "27/11/2026" is not an RFC 3339 time']);
  assert.is((await api(`/domains/${shop.id}/tls-reports`)).body.count, 0);
});

test("a report about another workspace's domain is kept aside, and that workspace sees nothing", async () => {
  const other = await seedWorkspace(s.t, { workspace: 'neighbour' });
  const created = await request(`${s.t.api}/domains`, { body: { name: 'neighbour.example' }, key: other.key });
  assert.is(created.status, 201, JSON.stringify(created.body));
  const xml = googleXml({ domain: 'neighbour.example', reportId: 'cross', begin: BEGIN, end: END, rows: [row] });
  assert.is((await keptAside(xmlMessage(xml))).reason, 'the report is about neighbour.example, not shop.example');
  assert.is((await api(`/domains/${created.body.id}/dmarc-reports`, other.key)).body.count, 0);
  assert.is((await api(`/domains/${created.body.id}/rejected-reports`, other.key)).body.count, 0);

  // Sent to its own report address, the same report is the neighbour's (a pending domain takes reports too).
  const theirs = 'dmarc-reports@bounces.neighbour.example';
  const reply = await s.deliver(googleMessage(theirs, 'n.zip', zipped('n.xml', xml), 'neighbour.example', 'cross'), { from: 'noreply-dmarc-support@google.com', to: [theirs] });
  assert.is(reply.code, 250, reply.text);
  const listed = await api(`/domains/${created.body.id}/dmarc-reports`, other.key);
  assert.equal(listed.body.data.map((r: { reportId: string }) => r.reportId), ['cross']);
  assert.is((await api(`/domains/${shop.id}/dmarc-reports`)).body.count, 0, 'not the shop');
  assert.is((await api(`/domains/${shop.id}/dmarc-reports/${listed.body.data[0].id}`)).status, 404, "another domain's report by id is a 404");
});

test('after all that the box is up and a good report is still read', async () => {
  const health = await request(`${s.t.url}/healthz`);
  assert.is(health.status, 200);
  const file = `google.com!shop.example!${BEGIN}!${END}.zip`;
  const reply = await s.deliver(googleMessage(DMARC, file, zipped('r.xml', googleXml({ domain: 'shop.example', reportId: 'good', begin: BEGIN, end: END, rows: [row] })), 'shop.example', 'good'), { from: 'noreply-dmarc-support@google.com', to: [DMARC] });
  assert.is(reply.code, 250, reply.text);
  assert.is((await api(`/domains/${shop.id}/dmarc-reports`)).body.count, 1);
});

test.run();
