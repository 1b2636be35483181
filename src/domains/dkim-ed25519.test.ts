// dkim_ed25519, end to end (RFC 8463): a domain gets an ed25519 key beside its RSA key and a second DKIM record
// to publish, which never decides whether the domain verifies; mail carries only the RSA signature until the
// re-check finds that record in DNS, then both, each verified by mailauth against the test DNS as a receiver
// would. Off (the default), no ed25519 key or record exists, until the box is started with it on.
import { dkimVerify } from 'mailauth';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';
import { request, runCli, seedWorkspace, startTestApp, TEST_STORE } from '../testkit/app.ts';
import { run, value } from '../db/query.ts';
import { createResolver } from '../dns/resolver.ts';
import { loadConfig } from '../config/config.ts';
import { startApp } from '../app.ts';
import { createLog } from '../log.ts';
import { recheckDueDomains } from './verification.ts';

type DnsRecord = { record: string; type: string; name: string; value: string; status: string };

let s: OutboundScene;
let domainId: string;
let ed: DnsRecord;
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const arrived = (to: string) => eventually(() => s.sink.messages.find((m) => m.rcptTo.includes(to)), 15_000, `a message for ${to}`);
const send = (to: string, extra: Record<string, unknown> = {}) => s.send({ from: 'app@ed.test', to: [to], subject: `for ${to}`, text: 'x', ...extra });
/** The a=, s= and h= of each DKIM-Signature field, in order. */
const signatures = (raw: Buffer) =>
  [...raw.toString('latin1').matchAll(/^DKIM-Signature:((?:.*\r\n[ \t].*)*.*)\r\n/gim)].map((m) => {
    const value = m[1]!.replace(/\s+/g, '');
    return { a: /(?:^|;)a=([^;]+)/.exec(value)?.[1], s: /(?:^|;)s=([^;]+)/.exec(value)?.[1], h: /(?:^|;)h=([^;]+)/.exec(value)?.[1] };
  });
/** mailauth's verdict on every signature, through the test DNS. */
async function verdicts(raw: Buffer) {
  const resolver = createResolver([s.dns.address]);
  const { results } = await dkimVerify(raw, { resolver: (name: string, type: string) => resolver.resolve(name, type) as Promise<string[][]> });
  return results.map((r) => ({ selector: r.selector, result: r.status.result }));
}

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_DKIM_ED25519: 'true' } });
  s.routeTo('dest.test');
});
test.after(() => s.stop());

test('a new domain lists the ed25519 DKIM record and verifies without it', async () => {
  const created = await api('/domains', { method: 'POST', body: { name: 'ed.test' } });
  assert.is(created.status, 201, JSON.stringify(created.body));
  domainId = created.body.id;
  const dkim = (created.body.records as DnsRecord[]).filter((r) => r.record === 'DKIM');
  assert.is(dkim.length, 2, 'an RSA and an ed25519 DKIM record');
  assert.match(dkim[0]!.value, /^v=DKIM1; k=rsa; p=/);
  ed = dkim[1]!;
  const selector = ed.name.split('.')[0]!;
  assert.match(selector, /^mwe[a-z0-9]{8}$/);
  assert.is(ed.name, `${selector}._domainkey.ed.test`);
  assert.not.equal(selector, dkim[0]!.name.split('.')[0]);
  assert.is(ed.type, 'TXT');
  assert.is(ed.status, 'pending');
  const p = /^v=DKIM1; k=ed25519; p=([A-Za-z0-9+/]+=*)$/.exec(ed.value)?.[1];
  assert.ok(p, ed.value);
  assert.is(Buffer.from(p!, 'base64').length, 32, 'p= is the raw 32-byte key (RFC 8463 4), not SPKI DER');

  // Everything but the ed25519 record: the domain verifies, and that record is reported missing.
  s.dns.publish((created.body.records as DnsRecord[]).filter((r) => r !== ed));
  const verified = await api(`/domains/${domainId}/verify`, { method: 'POST' });
  assert.is(verified.body.status, 'verified', JSON.stringify(verified.body.dns_issues));
  assert.is(verified.body.setup_status, 'complete');
  assert.is(verified.body.checks.dkim, true);
  const shown = (verified.body.records as DnsRecord[]).filter((r) => r.record === 'DKIM').map((r) => [r.name, r.status]);
  assert.equal(shown, [
    [dkim[0]!.name, 'verified'],
    [ed.name, 'failed'],
  ]);
  const issue = (verified.body.dns_issues as Array<{ name: string; expected: string; message: string }>).find((i) => i.name === ed.name);
  assert.ok(issue && issue.expected === ed.value && /recommended/.test(issue.message), JSON.stringify(verified.body.dns_issues));
  assert.equal((await api(`/domains/${domainId}`)).body.dkimEd25519, { selector, signing: false });

  // doctor lists it among the domain's records, with the exact record to publish (doctor opens the data
  // directory's SQLite database: on PostgreSQL it has no store to read yet).
  if (TEST_STORE === 'sqlite') {
    const doctor = await runCli(['doctor'], s.t.env);
    assert.ok(doctor.stdout.includes(`✓ DKIM  ${dkim[0]!.name} TXT`), doctor.stdout);
    assert.ok(doctor.stdout.includes(`✗ DKIM  ${ed.name} TXT: No ed25519 DKIM record`), doctor.stdout);
    assert.ok(doctor.stdout.includes(`fix: publish ${ed.name} TXT ${JSON.stringify(ed.value)}`), doctor.stdout);
  }
});

test('until DNS serves the ed25519 record, mail is signed with RSA only', async () => {
  // A verify that still finds no record changes nothing.
  await api(`/domains/${domainId}/verify`, { method: 'POST' });
  const sent = await send('before@dest.test');
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const msg = await arrived('before@dest.test');
  const sigs = signatures(msg.raw);
  assert.equal(
    sigs.map((x) => x.a),
    ['rsa-sha256'],
  );
  assert.equal(await verdicts(msg.raw), [{ selector: sigs[0]!.s, result: 'pass' }]);
});

test('once the re-check finds it published, mail carries rsa-sha256 and ed25519-sha256, both verifying', async () => {
  s.dns.publish([ed]);
  // The periodic re-check, for this domain now due (the app's own minute tick may be the one that takes it).
  await s.t.app.store.write(() => run('UPDATE domains SET checked_at = 0 WHERE id = ?', domainId));
  await recheckDueDomains(s.t.app);
  const shown = await eventually(async () => {
    const body = (await api(`/domains/${domainId}`)).body;
    return body.dkimEd25519.signing === true && body;
  }, 10_000, 'the ed25519 key signing');
  assert.is((shown.records as DnsRecord[]).find((r) => r.name === ed.name)!.status, 'verified');
  assert.is(shown.status, 'verified');
  assert.ok(s.t.logs.some((l) => l.includes('ed25519 signature beside the RSA one')));
  if (TEST_STORE === 'sqlite') assert.ok((await runCli(['doctor'], s.t.env)).stdout.includes(`✓ DKIM  ${ed.name} TXT`), 'doctor (SQLite only) sees it');

  assert.is((await send('after@dest.test')).status, 200);
  const msg = await arrived('after@dest.test');
  const sigs = signatures(msg.raw);
  assert.equal(
    sigs.map((x) => [x.a, x.s]),
    [
      ['rsa-sha256', shown.dkimSelector],
      ['ed25519-sha256', shown.dkimEd25519.selector],
    ],
  );
  assert.is(sigs[1]!.h, sigs[0]!.h, 'the same h= list');
  assert.equal(await verdicts(msg.raw), [
    { selector: shown.dkimSelector, result: 'pass' },
    { selector: shown.dkimEd25519.selector, result: 'pass' },
  ]);

  // A per-recipient copy (open tracking makes one) is signed twice as well.
  assert.is((await api(`/domains/${domainId}`, { method: 'PATCH', body: { open_tracking: true } })).status, 200);
  assert.is((await send('tracked@dest.test', { html: '<p>hello</p>' })).status, 200);
  const tracked = await arrived('tracked@dest.test');
  assert.match(tracked.raw.toString('latin1').replace(/=\r\n/g, ''), /\/open\//, 'a tracked, personal copy');
  assert.equal(
    (await verdicts(tracked.raw)).map((v) => v.result),
    ['pass', 'pass'],
  );
});

const edKeys = () => value<number>("SELECT count(*) FROM dkim_keys WHERE algorithm = 'ed25519'");

test('off (the default): no ed25519 key or record; turned on, an existing domain gets one at the re-check', async () => {
  const t = await startTestApp();
  let key = '';
  let id = '';
  try {
    key = (await seedWorkspace(t)).key;
    const created = await request(`${t.api}/domains`, { method: 'POST', key, body: { name: 'plain.test' } });
    assert.is(created.status, 201);
    id = created.body.id;
    assert.equal(
      (created.body.records as DnsRecord[]).map((r) => r.record),
      ['DKIM', 'MX', 'SPF', 'DMARC'],
    );
    assert.match(created.body.records[0].value, /k=rsa/);
    assert.is((await request(`${t.api}/domains/${id}`, { key })).body.dkimEd25519, null);
    await recheckDueDomains(t.app);
    assert.is(await t.app.store.read(edKeys()), 0);
  } finally {
    await t.running.stop();
  }
  // The same data directory, started again with dkim_ed25519 on.
  const running = await startApp(loadConfig({ ...t.env, MAILWRIGHT_DKIM_ED25519: 'true' }), { log: createLog({ level: 'error', write: () => {} }) });
  try {
    await recheckDueDomains(running.app);
    const shown = (await request(`http://127.0.0.1:${running.http.port}/api/v1/domains/${id}`, { key })).body;
    const dkim = (shown.records as DnsRecord[]).filter((r) => r.record === 'DKIM');
    assert.is(dkim.length, 2);
    assert.match(dkim[1]!.value, /^v=DKIM1; k=ed25519; p=/);
    assert.is(dkim[1]!.status, 'pending');
    assert.equal(shown.dkimEd25519, { selector: dkim[1]!.name.split('.')[0], signing: false });
    assert.is(await recheckDueDomains(running.app).then(() => running.app.store.read(edKeys())), 1, 'one key per domain');
  } finally {
    await running.stop();
    await t.stop(); // the first app is stopped already: this removes its data directory (and database)
  }
});

test.run();
