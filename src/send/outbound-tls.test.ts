// Outbound MTA-STS (RFC 8461) and DANE (RFC 7672) end to end: the real app sends through POST /emails to
// smtp-server peers on loopback holding certificates from a test CA, the policies served by a real HTTPS server,
// the records (TLSA, the AD bit) by the kit's DNS server. Asserts what an operator checks: what the peers
// received and over what, the reason in the email's events, the sessions counted for the TLS report.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import https from 'node:https';
import { createHash, X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';
import { createTestCa, type TestCa } from '../testkit/test-ca.ts';
import { all, get, value } from '../db/query.ts';

// Peers share the scene's MTA port, each on its own address in 127.0.78.0/24, a block no other test file uses.
const POLICY_HOST = '127.0.78.1';
const GOOD = '127.0.78.2';
const WRONG = '127.0.78.3';
const EXPIRED = '127.0.78.4';
const PLAIN = '127.0.78.5';
const DANE = '127.0.78.6';
const OUTSIDER = '127.0.78.7';
const DANE_TA = '127.0.78.8';

interface Peer {
  received: Array<{ rcptTo: string[]; secure: boolean }>;
  /** MAIL FROM commands seen: any at all on a session that failed its check would mean mail went out. */
  mailFroms: number;
  connections: number;
}

let ca: TestCa;
let s: OutboundScene;
let offset = 0;
const clock = { now: () => Date.now() + offset };
const policies = new Map<string, string>();
const fetches: string[] = [];
/** The media type each policy host serves its policy as (text/plain unless set). */
const mediaTypes = new Map<string, string>();
const posted: Array<{ type: string; body: Buffer }> = [];
const peers: Record<string, Peer> = {};
const closers: Array<() => Promise<void>> = [];
let daneSpki: Buffer;

async function startPeer(host: string, port: number, tls: { key: string; cert: string } | null): Promise<Peer> {
  const peer: Peer = { received: [], mailFroms: 0, connections: 0 };
  const server = new SMTPServer({
    logger: false,
    disableReverseLookup: true,
    authOptional: true,
    closeTimeout: 200,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(tls ?? {}),
    onConnect: (_session, cb) => {
      peer.connections++;
      cb();
    },
    onMailFrom: (_address, _session, cb) => {
      peer.mailFroms++;
      cb();
    },
    onData: (stream, session, cb) => {
      stream.resume();
      stream.on('end', () => {
        peer.received.push({ rcptTo: session.envelope.rcptTo.map((r) => r.address), secure: session.secure });
        cb(null, 'Queued');
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return peer;
}

/** A domain with one MX host on `ip`, and (when given) an MTA-STS record and policy. */
function domain(name: string, mx: Array<[string, string]>, policy?: { id: string; text: string }) {
  s.dns.set(name, 'MX', mx.map(([host], i) => ({ preference: 10 * (i + 1), exchange: host })));
  for (const [host, ip] of mx) s.dns.set(host, 'A', [ip]);
  if (policy) {
    s.dns.set(`_mta-sts.${name}`, 'TXT', [`v=STSv1; id=${policy.id};`]);
    s.dns.set(`mta-sts.${name}`, 'A', [POLICY_HOST]);
    policies.set(`mta-sts.${name}`, policy.text);
  }
}

const enforce = (...mx: string[]) => ['version: STSv1', 'mode: enforce', ...mx.map((m) => `mx: ${m}`), 'max_age: 86400', ''].join('\r\n');
const testing = (...mx: string[]) => ['version: STSv1', 'mode: testing', ...mx.map((m) => `mx: ${m}`), 'max_age: 86400', ''].join('\r\n');

async function send(to: string): Promise<string> {
  const res = await s.send({ from: 'app@mailwright.test', to: [to], subject: `to ${to}`, text: 'hello' });
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.id as string;
}

/** The email's first delivered or delivery_delayed event. */
const outcome = (id: string) =>
  eventually(async () => (await s.events(id)).find((e) => e.type === 'delivered' || e.type === 'delivery_delayed'), 15_000, `an outcome for ${id}`);

const counts = (domainName: string) =>
  s.t.app.store.read(all<{ policy_type: string; result_type: string; receiving_mx: string; count: number }>('SELECT policy_type, result_type, receiving_mx, count FROM tls_rpt_counts WHERE policy_domain = ? ORDER BY result_type', domainName));
const policyId = (domainName: string) => s.t.app.store.read(value<string>('SELECT policy_id FROM mta_sts_policies WHERE domain = ?', domainName));

test.before(async () => {
  ca = await createTestCa();
  const policyCert = await ca.issue([...['enforce-ok', 'enforce-wrong', 'enforce-expired', 'enforce-plain', 'testing-wrong', 'notlisted', 'changes', 'nofetch', 'html'].map((d) => `mta-sts.${d}.test`), 'rua.reports.test']);
  const policyServer = https.createServer({ key: policyCert.key, cert: policyCert.cert }, (req, res) => {
    const host = String(req.headers.host ?? '').replace(/:\d+$/, '');
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        posted.push({ type: String(req.headers['content-type']), body: Buffer.concat(chunks) });
        res.writeHead(201).end();
      });
      return;
    }
    fetches.push(host);
    const text = req.url === '/.well-known/mta-sts.txt' ? policies.get(host) : undefined;
    if (text === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': mediaTypes.get(host) ?? 'text/plain' }).end(text);
  });
  await new Promise<void>((resolve) => policyServer.listen(0, POLICY_HOST, () => resolve()));
  closers.push(() => new Promise<void>((resolve) => policyServer.close(() => resolve())));

  s = await startOutboundScene({
    clock,
    env: {
      MAILWRIGHT_TLS_CA_FILE: ca.certFile,
      MAILWRIGHT_MTA_STS_PORT: String((policyServer.address() as AddressInfo).port),
      MAILWRIGHT_RETRY_SCHEDULE: '1h',
    },
  });
  await s.verifiedDomain('mailwright.test');
  const port = s.sink.port;
  peers.good = await startPeer(GOOD, port, await ca.issue(['mx.good.test']));
  peers.wrong = await startPeer(WRONG, port, await ca.issue(['somewhere-else.test']));
  peers.expired = await startPeer(EXPIRED, port, await ca.issue(['mx.expired.test'], { expired: true }));
  peers.plain = await startPeer(PLAIN, port, null);
  const daneCert = await ca.issue(['not-the-mx-name.test']);
  daneSpki = new X509Certificate(daneCert.cert).publicKey.export({ type: 'spki', format: 'der' });
  peers.dane = await startPeer(DANE, port, daneCert);
  peers.outsider = await startPeer(OUTSIDER, port, await ca.issue(['mx.outsider.test']));
  // DANE-TA needs the anchor in the chain the server sends (RFC 7672 3.1.2): leaf and CA together.
  const taLeaf = await ca.issue(['mx.dane-ta.test']);
  peers.daneTa = await startPeer(DANE_TA, port, { key: taLeaf.key, cert: taLeaf.cert + ca.cert });
});

test.after(async () => {
  await s.stop();
  for (const close of closers) await close();
  await ca.close();
});

test('enforce: a host with a valid certificate for its name gets the mail over TLS', async () => {
  domain('enforce-ok.test', [['mx.good.test', GOOD]], { id: 'one', text: enforce('mx.good.test') });
  const id = await send('a@enforce-ok.test');
  const event = await outcome(id);
  assert.is(event.type, 'delivered', JSON.stringify(event.data));
  assert.equal([event.data.tls, event.data.tlsVerified, event.data.tlsPolicy], [true, true, 'mta-sts']);
  assert.equal(peers.good!.received.map((r) => [r.rcptTo, r.secure]), [[['a@enforce-ok.test'], true]]);
  assert.equal(await counts('enforce-ok.test'), [{ policy_type: 'sts', result_type: '', receiving_mx: '', count: 1 }]);
  const cached = await s.t.app.store.read(get('SELECT policy_id, mode, mx FROM mta_sts_policies WHERE domain = ?', 'enforce-ok.test'));
  assert.equal(cached, { policy_id: 'one', mode: 'enforce', mx: '["mx.good.test"]' });
});

test('enforce: a certificate for another name defers with the reason, and nothing is sent', async () => {
  domain('enforce-wrong.test', [['mx.wrong.test', WRONG]], { id: 'one', text: enforce('mx.wrong.test') });
  const event = await outcome(await send('b@enforce-wrong.test'));
  assert.is(event.type, 'delivery_delayed');
  assert.match(String(event.data.response), /^MTA-STS: certificate not valid for mx\.wrong\.test: /);
  assert.is(event.data.enhancedCode, '4.7.5');
  assert.is(event.data.tlsPolicy, 'mta-sts');
  assert.is(peers.wrong!.mailFroms, 0, 'no MAIL FROM on the failed session');
  assert.equal((await counts('enforce-wrong.test')).map((c) => [c.result_type, c.receiving_mx]), [['certificate-host-mismatch', 'mx.wrong.test']]);
});

test('enforce: an expired certificate defers', async () => {
  domain('enforce-expired.test', [['mx.expired.test', EXPIRED]], { id: 'one', text: enforce('mx.expired.test') });
  const event = await outcome(await send('c@enforce-expired.test'));
  assert.is(event.type, 'delivery_delayed');
  assert.match(String(event.data.response), /^MTA-STS: certificate not valid for mx\.expired\.test: CERT_HAS_EXPIRED/);
  assert.is(peers.expired!.mailFroms, 0);
  assert.equal((await counts('enforce-expired.test')).map((c) => c.result_type), ['certificate-expired']);
});

test('enforce: a host without STARTTLS defers, never plaintext', async () => {
  domain('enforce-plain.test', [['mx.plain.test', PLAIN]], { id: 'one', text: enforce('mx.plain.test') });
  const event = await outcome(await send('d@enforce-plain.test'));
  assert.is(event.type, 'delivery_delayed');
  assert.is(event.data.response, 'MTA-STS: mx.plain.test did not offer STARTTLS');
  assert.is(event.data.enhancedCode, '4.7.10');
  assert.is(peers.plain!.mailFroms, 0, 'nothing was sent in plaintext');
  assert.equal((await counts('enforce-plain.test')).map((c) => c.result_type), ['starttls-not-supported']);
});

test('testing: a wrong name still delivers, and the failure is counted', async () => {
  domain('testing-wrong.test', [['mx.twrong.test', WRONG]], { id: 'one', text: testing('mx.twrong.test') });
  const before = peers.wrong!.received.length;
  const event = await outcome(await send('e@testing-wrong.test'));
  assert.is(event.type, 'delivered', JSON.stringify(event.data));
  assert.equal([event.data.tlsVerified, event.data.tlsPolicy], [false, 'mta-sts-testing']);
  assert.is(peers.wrong!.received.length, before + 1);
  assert.equal((await counts('testing-wrong.test')).map((c) => [c.policy_type, c.result_type, c.count]), [['sts', 'certificate-host-mismatch', 1]]);
});

test('enforce: an MX host the policy does not name is never tried; the next one is', async () => {
  domain('notlisted.test', [['mx.outsider.test', OUTSIDER], ['mx.good.test', GOOD]], { id: 'one', text: enforce('*.good.test') });
  const event = await outcome(await send('f@notlisted.test'));
  assert.is(event.type, 'delivered');
  assert.is(event.data.mx, 'mx.good.test');
  assert.is(peers.outsider!.connections, 0, 'the host outside the policy saw no connection');
});

test('a policy announced but not served: delivery goes on as without one, and the fetch error is counted', async () => {
  domain('nofetch.test', [['mx.good.test', GOOD]], { id: 'one', text: enforce('mx.good.test') });
  policies.delete('mta-sts.nofetch.test');
  const event = await outcome(await send('p@nofetch.test'));
  assert.is(event.type, 'delivered', JSON.stringify(event.data));
  assert.is(event.data.tlsPolicy, 'none');
  assert.equal((await counts('nofetch.test')).map((c) => [c.policy_type, c.result_type]), [['sts', 'sts-policy-fetch-error']]);
});

test('a policy served as another media type than text/plain is no policy (RFC 8461 3.2), and counted as invalid', async () => {
  // An MX name of its own: a session pooled for another domain's mail would carry this one uncounted.
  domain('html.test', [['mx.html.test', GOOD]], { id: 'one', text: enforce('mx.elsewhere.test') });
  mediaTypes.set('mta-sts.html.test', 'text/html');
  const event = await outcome(await send('q@html.test'));
  assert.is(event.type, 'delivered', JSON.stringify(event.data));
  assert.is(event.data.tlsPolicy, 'none');
  assert.equal((await counts('html.test')).map((c) => [c.policy_type, c.result_type]), [['sts', 'sts-policy-invalid']]);
});

test('a policy is fetched once per id; a new id fetches it again', async () => {
  domain('changes.test', [['mx.good.test', GOOD]], { id: 'first', text: enforce('mx.good.test') });
  assert.is((await outcome(await send('g@changes.test'))).type, 'delivered');
  assert.is((await outcome(await send('h@changes.test'))).type, 'delivered');
  assert.is(fetches.filter((h) => h === 'mta-sts.changes.test').length, 1, 'the cached policy served the second send');

  // The new policy names another host; the box must see it (past the minute it trusts a TXT answer for).
  domain('changes.test', [['mx.good.test', GOOD]], { id: 'second', text: enforce('mx.elsewhere.test') });
  offset += 2 * 60_000;
  const event = await outcome(await send('i@changes.test'));
  assert.is(event.type, 'delivery_delayed');
  assert.is(event.data.response, 'MTA-STS: no MX host of changes.test matches the policy (mx: mx.elsewhere.test)');
  assert.is(fetches.filter((h) => h === 'mta-sts.changes.test').length, 2);
  assert.is(await policyId('changes.test'), 'second');

  // RFC 8461 5.1: a refresh that fails (the policy host answers 404) keeps the cached, unexpired policy.
  domain('changes.test', [['mx.good.test', GOOD]], { id: 'third', text: enforce('mx.good.test') });
  policies.delete('mta-sts.changes.test');
  offset += 2 * 60_000;
  const kept = await outcome(await send('j2@changes.test'));
  assert.is(kept.type, 'delivery_delayed');
  assert.is(kept.data.response, 'MTA-STS: no MX host of changes.test matches the policy (mx: mx.elsewhere.test)');
  assert.is(fetches.filter((h) => h === 'mta-sts.changes.test').length, 3);
  assert.is(await policyId('changes.test'), 'second');
});

test('DANE 3 1 1: a matching key delivers whatever the name; a mismatch defers; without AD the records are ignored', async () => {
  const sha = createHash('sha256').update(daneSpki).digest();
  const wrongSha = createHash('sha256').update('some other key').digest();
  domain('dane-ok.test', [['mx.dane-ok.test', DANE]]);
  s.dns.set('_25._tcp.mx.dane-ok.test', 'TLSA', [{ usage: 3, selector: 1, matchingType: 1, certificate: sha }]);
  s.dns.authenticate('mx.dane-ok.test');
  domain('dane-bad.test', [['mx.dane-bad.test', DANE]]);
  s.dns.set('_25._tcp.mx.dane-bad.test', 'TLSA', [{ usage: 3, selector: 1, matchingType: 1, certificate: wrongSha }]);
  s.dns.authenticate('mx.dane-bad.test');
  domain('dane-unsigned.test', [['mx.dane-unsigned.test', DANE]]);
  s.dns.set('_25._tcp.mx.dane-unsigned.test', 'TLSA', [{ usage: 3, selector: 1, matchingType: 1, certificate: wrongSha }]);

  const ok = await outcome(await send('j@dane-ok.test'));
  assert.is(ok.type, 'delivered', JSON.stringify(ok.data));
  assert.is(ok.data.tlsPolicy, 'dane');
  assert.equal((await counts('dane-ok.test')).map((c) => [c.policy_type, c.result_type]), [['tlsa', '']]);

  const mailsBefore = peers.dane!.mailFroms;
  const bad = await outcome(await send('k@dane-bad.test'));
  assert.is(bad.type, 'delivery_delayed');
  assert.is(bad.data.response, 'DANE: the certificate of mx.dane-bad.test matches none of its TLSA records');
  assert.is(peers.dane!.mailFroms, mailsBefore, 'no MAIL FROM on the failed session');
  assert.equal((await counts('dane-bad.test')).map((c) => [c.policy_type, c.result_type]), [['tlsa', 'validation-failure']]);

  const unsigned = await outcome(await send('l@dane-unsigned.test'));
  assert.is(unsigned.type, 'delivered', 'TLSA records without the AD bit are not used');
  assert.is(unsigned.data.tlsPolicy, 'none');
  assert.equal((await counts('dane-unsigned.test')).map((c) => c.policy_type), ['no-policy-found']);
});

test('DANE: a failed TLSA lookup for a signed host defers without connecting (RFC 7672 2.2)', async () => {
  domain('dane-fail.test', [['mx.dane-fail.test', DANE]]);
  s.dns.authenticate('mx.dane-fail.test');
  s.dns.fail('_25._tcp.mx.dane-fail.test', 'TLSA', 'SERVFAIL');
  const connections = peers.dane!.connections;
  const event = await outcome(await send('o@dane-fail.test'));
  assert.is(event.type, 'delivery_delayed');
  assert.is(event.data.response, 'DANE: TLSA lookup for _25._tcp.mx.dane-fail.test failed (SERVFAIL)');
  assert.is(peers.dane!.connections, connections, 'the host was not tried');
  assert.equal((await counts('dane-fail.test')).map((c) => [c.policy_type, c.result_type]), [['tlsa', 'dnssec-invalid']]);
});

test('DANE 2 1 1: a chain to the named trust anchor delivers when the certificate names the MX host, and defers when it does not', async () => {
  const anchor = createHash('sha256').update(new X509Certificate(ca.cert).publicKey.export({ type: 'spki', format: 'der' })).digest();
  for (const [name, host] of [['dane-ta.test', 'mx.dane-ta.test'], ['dane-ta-name.test', 'mx.dane-ta-name.test']] as const) {
    domain(name, [[host, DANE_TA]]);
    s.dns.set(`_25._tcp.${host}`, 'TLSA', [{ usage: 2, selector: 1, matchingType: 1, certificate: anchor }]);
    s.dns.authenticate(host);
  }
  const ok = await outcome(await send('m@dane-ta.test'));
  assert.is(ok.type, 'delivered', JSON.stringify(ok.data));
  assert.equal(peers.daneTa!.received.map((r) => r.secure), [true]);
  const misnamed = await outcome(await send('n@dane-ta-name.test'));
  assert.is(misnamed.type, 'delivery_delayed');
  assert.match(String(misnamed.data.response), /^DANE: certificate not valid for mx\.dane-ta-name\.test: /);
  assert.is(peers.daneTa!.received.length, 1, 'nothing went to the misnamed host');
});

test('the daily TLS report reaches the rua by mail, DKIM-signed, and by HTTPS POST; no workspace sends it', async () => {
  const port = Number(s.t.env.MAILWRIGHT_MTA_STS_PORT);
  s.dns.set('_smtp._tls.enforce-wrong.test', 'TXT', [`v=TLSRPTv1; rua=mailto:tlsrpt@reports.test,https://rua.reports.test:${port}/tlsrpt`]);
  s.dns.set('rua.reports.test', 'A', [POLICY_HOST]);
  s.routeTo('reports.test');
  const emails = () => s.t.app.store.read(value<number>('SELECT count(*) FROM emails'));
  const emailsBefore = await emails();

  const run = await s.t.app.tlsReports!.run(clock.now() + 86_400_000);
  assert.equal(run.sent.filter((r) => r.domain === 'enforce-wrong.test').map((r) => r.rua.split(':')[0]), ['mailto', 'https']);
  const mail = await eventually(() => s.sink.messages.find((m) => m.rcptTo.includes('tlsrpt@reports.test')), 10_000, 'the report mail');
  assert.is(mail.mailFrom, '', 'sent with the null sender');
  const parsed = await simpleParser(mail.raw);
  assert.is(parsed.headers.get('tls-report-domain'), 'enforce-wrong.test');
  assert.is(parsed.headers.get('tls-report-submitter'), 'mailwright.test');
  assert.match(parsed.subject ?? '', /^Report Domain: enforce-wrong\.test Submitter: mailwright\.test Report-ID: <.+@mx\.mailwright\.test>$/);
  assert.match(mail.raw.toString('latin1'), /Content-Type: multipart\/report; report-type="tlsrpt";/);
  const dkim = await s.dkim(mail.raw);
  assert.equal([dkim.status, dkim.signingDomain], ['pass', 'mailwright.test']);
  const attachment = parsed.attachments.find((a) => a.contentType === 'application/tlsrpt+gzip');
  assert.ok(attachment, 'the gzipped report is attached');
  assert.match(attachment!.filename ?? '', /^mailwright\.test!enforce-wrong\.test!\d+!\d+!\w+\.json\.gz$/);
  const report = JSON.parse(gunzipSync(attachment!.content).toString('utf8'));
  assert.is(report['organization-name'], 'mx.mailwright.test');
  assert.match(report['date-range']['start-datetime'], /^\d{4}-\d\d-\d\dT00:00:00Z$/);
  assert.equal(report.policies.length, 1);
  const [policy] = report.policies;
  assert.equal(policy.policy, { 'policy-type': 'sts', 'policy-string': ['version: STSv1', 'mode: enforce', 'mx: mx.wrong.test', 'max_age: 86400'], 'policy-domain': 'enforce-wrong.test', 'mx-host': ['mx.wrong.test'] });
  assert.equal(policy.summary, { 'total-successful-session-count': 0, 'total-failure-session-count': 1 });
  assert.equal(policy['failure-details'].map((f: Record<string, unknown>) => [f['result-type'], f['receiving-mx-hostname'], f['receiving-ip'], f['failed-session-count']]), [['certificate-host-mismatch', 'mx.wrong.test', WRONG, 1]]);

  const post = posted.at(-1)!;
  assert.is(post.type, 'application/tlsrpt+gzip');
  assert.equal(JSON.parse(gunzipSync(post.body).toString('utf8')), report);
  assert.equal(await counts('enforce-wrong.test'), [], 'the reported day is forgotten');
  assert.is(await emails(), emailsBefore, 'the report is no email of any workspace');
  // A domain that asks for no report has its counts dropped all the same.
  assert.equal(await counts('enforce-ok.test'), []);
  assert.ok(run.skipped.some((r) => r.domain === 'enforce-ok.test' && r.reason === 'the domain publishes no TLS-RPT record'));
});

test.run();
