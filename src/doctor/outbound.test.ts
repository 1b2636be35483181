// doctor's way out, against real sockets and the kit's DNS server: port 25 to the big providers' MX hosts
// open or blocked (with the [[relay]] to add), each relay answering or not, and a catch-all relay making
// port 25 moot. The providers' MX hosts are the kit's sink on loopback addresses the DNS server names.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { startSmtpSink, type SmtpSink } from '../testkit/smtp-sink.ts';
import { createResolver } from '../dns/resolver.ts';
import { loadConfig, type Config } from '../config/config.ts';
import { runCli, tempDir, testEnv } from '../testkit/app.ts';
import { outboundChecks } from './outbound.ts';
import { openStore } from '../start/store.ts';

const MX = '127.0.0.21';
const NOTHING = '127.0.0.22'; // nothing listens: a host that blocks the port answers the same way, or not at all
let dns: DnsServer;
let sink: SmtpSink;

test.before(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink({ host: MX });
});
test.after(async () => {
  await sink.close();
  await dns.close();
});

const config = (env: Record<string, string> = {}): Config => loadConfig(testEnv(tempDir(), { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_MTA_PORT: String(sink.port), ...env }));
const checks = (env: Record<string, string> = {}) => outboundChecks(config(env), createResolver([dns.address], { timeoutMs: 1000, tries: 1 }), 1500);
const providers = (ip: string) => {
  for (const domain of ['gmail.com', 'outlook.com', 'yahoo.com']) {
    dns.set(domain, 'MX', [{ preference: 5, exchange: `mx.${domain}` }]);
    dns.set(`mx.${domain}`, 'A', [ip]);
  }
};

test('no MX of the big providers resolves: a note, not a problem', async () => {
  const [c] = await checks();
  assert.equal([c!.ok, c!.skipped], [true, true]);
  assert.match(c!.text, /not tested/);
});

test('port 25 open: an MX host of a big provider greets', async () => {
  providers(MX);
  const [c] = await checks();
  assert.is(c!.ok, true);
  assert.match(c!.text, new RegExp(`outbound port ${sink.port} is open: mx\\.(gmail|outlook|yahoo)\\.com \\[${MX.replace(/\./g, '\\.')}\\] answered`));
});

test('port 25 blocked: the problem and the exact [[relay]] to add', async () => {
  providers(NOTHING);
  const [c] = await checks();
  assert.is(c!.ok, false);
  assert.match(c!.text, /looks blocked/);
  assert.match(c!.fix!, /\[\[relay\]\]\n\s*match = "\*"\n\s*url = "smtps:\/\/USER:PASSWORD@/);
  assert.match(c!.fix!, /systemctl reload mailwright/);
});

test('a catch-all relay that answers: port 25 not needed; a relay that does not answer is named with its setting', async () => {
  providers(NOTHING);
  const relays = JSON.stringify([
    { match: 'sender:shop.test', url: `smtp://${NOTHING}:${sink.port}` },
    { match: '*', url: `smtp://mx.gmail.com:1` },
    { match: '*', url: `smtp://${MX}:${sink.port}` },
  ]);
  const got = await checks({ MAILWRIGHT_RELAY: relays });
  const byId = (id: string) => got.find((c) => c.text.startsWith(id))!;
  assert.is(byId('relay[0]').ok, false);
  assert.match(byId('relay[0]').fix!, /the url of relay\[0\] \(the 1st \[\[relay\]\]\)/);
  assert.is(byId('relay[1]').ok, false, 'resolved through DNS, refused');
  assert.is(byId('relay[2]').ok, true);
  assert.match(byId('relay[2]').text, /answers$/);
  const last = got.at(-1)!;
  assert.equal([last.ok, /every message goes through a relay \(relay\[1\] takes what no other matches\)/.test(last.text)], [true, true]);
  assert.not.ok(got.some((c) => /outbound port/.test(c.text)), 'no port 25 probe');
});

test('relay_url with a [[relay]] for one sender: relays checked, and port 25 not needed', async () => {
  providers(NOTHING);
  const got = await checks({ MAILWRIGHT_RELAY_URL: `smtp://u:p@${MX}:${sink.port}`, MAILWRIGHT_RELAY: JSON.stringify([{ match: 'sender:shop.test', url: `smtp://${MX}:${sink.port}` }]) });
  assert.equal(got.map((c) => [c.ok, c.text.split(' ')[0]]), [[true, 'relay[0]'], [true, 'relay_url'], [true, 'outbound:']]);
  assert.not.ok(got.some((c) => c.text.includes('u:p')), 'credentials are never printed');
});

test('mailwright doctor prints the blocked port with its fix and exits non-zero', async () => {
  providers(NOTHING);
  const env = testEnv(tempDir(), { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_MTA_PORT: String(sink.port) });
  openStore(loadConfig(env)).close(); // doctor reads a box: it refuses a data directory without one
  const res = await runCli(['doctor'], env);
  assert.is(res.code, 1, res.stderr);
  assert.match(res.stdout, /✗ outbound port \d+ looks blocked/);
  assert.match(res.stdout, /fix: ask your provider to open outbound port \d+, or send through a relay/);
});

test.run();
