// DMARC aggregate reports and TLS reports delivered over real SMTP to a domain's report addresses, in the
// shapes Google, Microsoft and Yahoo send them and RFC 8460's example, then read back through the API: the
// reports, their filters, the "who sends as you" summary with PTR names, deduplication, and who may read them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, seedWorkspace } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import fc from 'fast-check';
import { value } from '../db/query.ts';
import { pruneReceivedReports, REPORT_RETENTION_DAYS } from './aggregate-reports.ts';
import { googleMessage, googleXml, gzipped, microsoftXml, multipartMessage, tlsReportJson, yahooXml, zipped, type Row } from '../testkit/aggregate-reports.ts';

let s: InboundScene;
let shop: { id: string };
const DMARC = 'dmarc-reports@bounces.shop.example';
const TLS = 'tls-reports@bounces.shop.example';
const BEGIN = 1764201600; // 2025-11-27T00:00:00Z
const END = BEGIN + 86399;

test.before(async () => {
  s = await startInboundScene();
  // A sending-only domain: its return path takes reports all the same.
  shop = await s.verifiedDomain('shop.example');
  s.dns.set('7.100.51.198.in-addr.arpa', 'PTR', ['host7.spoofer.example.net']);
  s.dns.set('25.113.0.203.in-addr.arpa', 'PTR', ['mx.mailwright.test']);
});
test.after(() => s.stop());

const api = (path: string, key = s.key) => request(`${s.t.api}${path}`, { key });
const ours: Row = { ip: '203.0.113.25', count: 120, dkim: 'pass', spf: 'pass', envelopeFrom: 'bounces.shop.example' };
const spoof: Row = { ip: '198.51.100.7', count: 42, dkim: 'fail', spf: 'fail', envelopeFrom: 'spoofer.example' };
const forwarded: Row = { ip: '192.0.2.44', count: 3, dkim: 'pass', spf: 'fail', disposition: 'none', envelopeFrom: 'lists.example' };

async function deliverReport(raw: string, to = DMARC, from = 'reports@receiver.example') {
  const reply = await s.deliver(raw, { from, to: [to], helo: 'mail.receiver.example' });
  assert.is(reply.code, 250, reply.text);
  return /queued as (\S+)/.exec(reply.text)![1];
}

function google(reportId: string, rows: Row[]) {
  const file = `google.com!shop.example!${BEGIN}!${END}.zip`;
  return googleMessage(DMARC, file, zipped(file.replace(/\.zip$/, '.xml'), googleXml({ domain: 'shop.example', reportId, begin: BEGIN, end: END, rows })), 'shop.example', reportId);
}

test('Google, Microsoft and Yahoo aggregate reports are kept per domain and read back with their rows', async () => {
  const g = await deliverReport(google('5717107811868587391', [ours, spoof]));
  assert.match(g, /^dmarc_/);
  const msFile = `enterprise.protection.outlook.com!shop.example!${BEGIN}!${END + 1}.xml.gz`;
  const ms = await deliverReport(
    multipartMessage({ from: 'DMARC Aggregate Report <dmarcreport@microsoft.com>', to: DMARC, subject: `Report Domain: shop.example Submitter: enterprise.protection.outlook.com Report-ID: a1b2c3d4`, file: msFile, contentType: 'application/gzip', content: gzipped(microsoftXml({ domain: 'shop.example', reportId: 'a1b2c3d4e5f64a5b9c8d7e6f5a4b3c2d', begin: BEGIN, end: END + 1, rows: [ours, forwarded] })) }),
  );
  const yFile = `yahoo.com!shop.example!${BEGIN}!${END}.xml.gz`;
  const y = await deliverReport(
    multipartMessage({ from: 'Yahoo! Inc. <dmarchelp@yahooinc.com>', to: DMARC, subject: 'Report Domain: shop.example Submitter: yahoo.com Report-ID: <1764288000.298374>', file: yFile, contentType: 'application/gzip', content: gzipped(yahooXml({ domain: 'shop.example', reportId: '1764288000.298374', begin: BEGIN, end: END, rows: [{ ...ours, count: 7 }] })) }),
  );

  const list = await api(`/domains/${shop.id}/dmarc-reports`);
  assert.is(list.status, 200, JSON.stringify(list.body));
  assert.is(list.body.count, 3);
  assert.is(list.body.hasMore, false);
  const byOrg = Object.fromEntries(list.body.data.map((r: { orgName: string }) => [r.orgName, r]));
  assert.equal(Object.keys(byOrg).sort(), ['Enterprise Outlook', 'Yahoo', 'google.com']);
  const gr = byOrg['google.com'];
  assert.is(gr.id, g);
  assert.is(gr.email, 'noreply-dmarc-support@google.com');
  assert.is(gr.reportId, '5717107811868587391', 'a long numeric report id is kept as written');
  assert.is(gr.begin, '2025-11-27T00:00:00.000Z');
  assert.is(gr.end, '2025-11-27T23:59:59.000Z');
  assert.equal(gr.policy, { domain: 'shop.example', adkim: 'r', aspf: 'r', p: 'none', sp: 'none', pct: 100 });
  assert.is(gr.messages, 162);
  assert.is(gr.failed, 42);
  const spoofRow = gr.rows.find((r: { sourceIp: string }) => r.sourceIp === '198.51.100.7');
  assert.equal({ ...spoofRow, authResults: undefined }, { sourceIp: '198.51.100.7', count: 42, disposition: 'none', dkim: 'fail', spf: 'fail', aligned: false, headerFrom: 'shop.example', envelopeFrom: 'spoofer.example', authResults: undefined, reasons: [] });
  assert.equal(spoofRow.authResults.dkim, [{ domain: 'spoofer.example', selector: 'mw1', result: 'fail' }]);
  assert.equal(byOrg['Enterprise Outlook'].rows.find((r: { sourceIp: string }) => r.sourceIp === '203.0.113.25').authResults.spf, [{ domain: 'bounces.shop.example', scope: 'mfrom', result: 'pass' }]);
  assert.is(byOrg['Enterprise Outlook'].id, ms);
  assert.is(byOrg.Yahoo.id, y);
  assert.is(byOrg.Yahoo.messages, 7);

  // Filters: rows failing alignment, a source, a disposition, a window.
  const failing = await api(`/domains/${shop.id}/dmarc-reports?aligned=false`);
  assert.equal(failing.body.data.map((r: { id: string }) => r.id), [g]);
  assert.equal(failing.body.data[0].rows.map((r: { sourceIp: string }) => r.sourceIp), ['198.51.100.7'], 'only the failing rows');
  const bySource = await api(`/domains/${shop.id}/dmarc-reports?source_ip=192.0.2.44`);
  assert.equal(bySource.body.data.map((r: { id: string }) => r.id), [ms]);
  assert.is((await api(`/domains/${shop.id}/dmarc-reports?disposition=reject`)).body.count, 0);
  assert.is((await api(`/domains/${shop.id}/dmarc-reports?after=2025-12-01`)).body.count, 0);
  assert.is((await api(`/domains/${shop.id}/dmarc-reports?before=2025-11-28T00:00:00Z&after=2025-11-27`)).body.count, 3);
  const paged = await api(`/domains/${shop.id}/dmarc-reports?limit=2`);
  assert.equal([paged.body.count, paged.body.hasMore], [2, true]);

  const one = await api(`/domains/${shop.id}/dmarc-reports/${g}`);
  assert.is(one.status, 200);
  assert.is(one.body.rows.length, 2);
});

test('the summary tells who sends as the domain: sources with PTR names, volumes, alignment and dispositions', async () => {
  const r = await api(`/domains/${shop.id}/dmarc-reports/summary?after=2025-11-01&before=2025-12-01`);
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is(r.body.domain, 'shop.example');
  assert.equal(r.body.totals, { reports: 3, messages: 292, passed: 250, sources: 3, failed: 42, after: '2025-11-01T00:00:00.000Z', before: '2025-12-01T00:00:00.000Z' });
  assert.equal(r.body.data.map((x: { sourceIp: string }) => x.sourceIp), ['203.0.113.25', '198.51.100.7', '192.0.2.44'], 'most messages first');
  const [box, spoofer, fwd] = r.body.data;
  assert.equal({ ip: box.sourceIp, ptr: box.ptr, messages: box.messages, dkim: box.dkimAligned, spf: box.spfAligned, reporters: box.reporters.sort() }, { ip: '203.0.113.25', ptr: 'mx.mailwright.test', messages: 247, dkim: 1, spf: 1, reporters: ['Enterprise Outlook', 'Yahoo', 'google.com'] });
  assert.equal({ ptr: spoofer.ptr, failed: spoofer.failed, dkim: spoofer.dkimAligned, dispositions: spoofer.dispositions }, { ptr: 'host7.spoofer.example.net', failed: 42, dkim: 0, dispositions: { none: 42, quarantine: 0, reject: 0 } });
  assert.equal({ ptr: fwd.ptr, dkim: fwd.dkimAligned, spf: fwd.spfAligned, passed: fwd.passed }, { ptr: null, dkim: 1, spf: 0, passed: 3 });
});

test('the same report sent twice is kept once', async () => {
  const again = await deliverReport(google('5717107811868587391', [ours, spoof]));
  const list = await api(`/domains/${shop.id}/dmarc-reports`);
  assert.is(list.body.count, 3);
  assert.ok(list.body.data.some((r: { id: string }) => r.id === again), 'the reply names the report kept before');
});

test('a TLS report (application/tlsrpt+gzip) is kept with its policies, session counts and failure types', async () => {
  const id = await deliverReport(
    multipartMessage({ from: 'tlsrpt@company-x.example', to: TLS, subject: 'Report Domain: shop.example Submitter: company-x.example Report-ID: <2026.11.27T00.00.00Z+shop.example@company-x.example>', file: 'company-x.example!shop.example!1764201600!1764287999!001.json.gz', contentType: 'application/tlsrpt+gzip', content: gzipped(tlsReportJson('shop.example', '2026-11-27T00:00:00Z_shop.example')) }),
    TLS,
  );
  assert.match(id, /^tlsr_/);
  const r = await api(`/domains/${shop.id}/tls-reports`);
  assert.is(r.status, 200);
  assert.is(r.body.count, 1);
  const [report] = r.body.data;
  assert.equal([report.orgName, report.contact, report.successful, report.failed, report.begin], ['Company-X', 'sts-reporting@company-x.example', 5326, 303, '2026-11-27T00:00:00.000Z']);
  assert.equal(report.policies[0].type, 'sts');
  assert.equal(report.policies[0].mxHost, ['*.mail.shop.example']);
  assert.equal(report.policies[0].failures.map((f: { resultType: string; failedSessions: number }) => [f.resultType, f.failedSessions]), [['certificate-expired', 100], ['starttls-not-supported', 200], ['validation-failure', 3]]);

  assert.is(report.authenticated, false, 'an unsigned report from an address without SPF for it');

  // A JSON report (application/tlsrpt+json), signed by its sender whose DMARC passes: marked authenticated.
  const signer = s.senderDomain('company-y.example');
  const json = tlsReportJson('shop.example', 'second-report').replace('Company-X', 'Company-Y');
  const signed = await signer.sign(multipartMessage({ from: 'tlsrpt@company-y.example', to: TLS, subject: 'Report Domain: shop.example', file: 'report.json', contentType: 'application/tlsrpt+json', content: Buffer.from(json) }));
  const reply = await s.deliver(signed, { from: 'tlsrpt@company-y.example', to: [TLS] });
  assert.is(reply.code, 250, reply.text);
  const both = (await api(`/domains/${shop.id}/tls-reports`)).body;
  assert.is(both.count, 2);
  assert.equal(both.data.map((r: { orgName: string; authenticated: boolean }) => [r.orgName, r.authenticated]).sort(), [['Company-X', false], ['Company-Y', true]]);
});

test('report addresses: an unknown local part or domain is refused at RCPT, mail with no report at DATA', async () => {
  const unknown = await s.deliver('Subject: x\r\n\r\nx\r\n', { to: ['postmaster-reports@bounces.shop.example'] });
  assert.equal([unknown.code, unknown.text], [550, '5.1.1 <postmaster-reports@bounces.shop.example>: No such bounce address']);
  const notOurs = await s.deliver('Subject: x\r\n\r\nx\r\n', { to: ['dmarc-reports@bounces.elsewhere.example'] });
  assert.is(notOurs.code, 554);
  const plain = await s.deliver('From: someone@spam.example\r\nTo: dmarc-reports@bounces.shop.example\r\nSubject: Cheap watches\r\n\r\nBuy now.\r\n', { to: [DMARC] });
  assert.equal([plain.code, plain.text], [550, '5.6.0 Message refused: this address takes only DMARC aggregate reports and TLS reports, and none was found']);
  assert.is((await api(`/domains/${shop.id}/rejected-reports`)).body.count, 0, 'nothing kept for mail that is not a report');
});

test("another workspace cannot read a domain's reports: 404 like an unknown domain; bad filters are 400", async () => {
  const other = await seedWorkspace(s.t, { workspace: 'other' });
  for (const path of ['dmarc-reports', 'dmarc-reports/summary', 'tls-reports', 'rejected-reports']) {
    const r = await api(`/domains/${shop.id}/${path}`, other.key);
    assert.is(r.status, 404, path);
    assert.is(r.body.error.code, 'not_found');
  }
  const bad = await api(`/domains/${shop.id}/dmarc-reports?source_ip=not-an-ip&aligned=maybe`);
  assert.is(bad.status, 400);
  assert.is(bad.body.error.code, 'validation_error');
  const badTime = await api(`/domains/${shop.id}/dmarc-reports?after=yesterday`);
  assert.is(badTime.status, 400);
  assert.match(badTime.body.error.message, /after/);
});

test('one message to a report address and an inbox: the inbox gets it, the report is read', async () => {
  const file = `google.com!shop.example!${BEGIN}!${END}.zip`;
  const raw = googleMessage(DMARC, file, zipped('r.xml', googleXml({ domain: 'shop.example', reportId: 'both', begin: BEGIN, end: END, rows: [ours] })), 'shop.example', 'both');
  const reply = await s.deliver(raw, { from: 'noreply-dmarc-support@google.com', to: [DMARC, s.inbox.address] });
  assert.is(reply.code, 250, reply.text);
  assert.match(reply.text, /queued as (?=.*dmarc_)(?=.*em_)/);
  assert.is((await api(`/domains/${shop.id}/dmarc-reports`)).body.count, 4);
});

test('any text in any filter is a 200 or a 400, never a 5xx', async () => {
  const params = fc.dictionary(
    fc.constantFrom('after', 'before', 'source_ip', 'disposition', 'aligned', 'limit', 'offset', 'other'),
    fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('2026-13-45', '-1', '::1', '1.2.3.4', 'true', 'reject', '2025-11-27T00:00:00Z', "' OR 1=1 --")),
    { maxKeys: 4 },
  );
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('dmarc-reports', 'dmarc-reports/summary', 'tls-reports', 'rejected-reports'), params, async (path, query) => {
      const r = await api(`/domains/${shop.id}/${path}?${new URLSearchParams(query as Record<string, string>)}`);
      assert.ok(r.status === 200 || (r.status === 400 && r.body.error.code === 'validation_error'), `${path} ${JSON.stringify(query)}: ${r.status} ${JSON.stringify(r.body)}`);
    }),
    { numRuns: 60 },
  );
});

test(`reports are pruned ${REPORT_RETENTION_DAYS} days after they arrived`, async () => {
  const { store } = s.t.app;
  assert.is(await store.write(() => pruneReceivedReports(Date.now())), 0, 'nothing young is pruned');
  const pruned = await store.write(() => pruneReceivedReports(Date.now() + (REPORT_RETENTION_DAYS + 1) * 86_400_000));
  assert.ok(pruned >= 6, `pruned ${pruned}`);
  assert.is((await api(`/domains/${shop.id}/dmarc-reports`)).body.count, 0);
  assert.is((await api(`/domains/${shop.id}/tls-reports`)).body.count, 0);
  assert.is(await store.read(value<number>('SELECT count(*) FROM dmarc_report_rows')), 0, 'their rows went with them');
});

test.run();
