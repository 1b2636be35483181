// Provider detection: the NS-name table on realistic nameserver sets, and detectProvider end to end through
// Node's real c-ares Resolver against the test kit's authoritative server on loopback.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Resolver } from 'node:dns/promises';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { createResolver } from './resolver.ts';
import { PROVIDERS, detectProvider, recogniseProvider } from './providers.ts';

let server: DnsServer;
let resolver: Resolver;

test.before(async () => {
  server = await startDnsServer();
  resolver = createResolver([server.address], { timeoutMs: 500, tries: 1 });
});
test.after(async () => {
  await server.close();
});
test.before.each(() => {
  server.clear().unfail().resetQueries();
});

const publishZone = (zone: string, ns: string[]) => server.addZone(zone, ns);

// Real-world shaped sets, as each provider hands them out.
const REQUIRED: Array<[key: string, name: string, nameservers: string[]]> = [
  ['cloudflare', 'Cloudflare', ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com']],
  ['route53', 'Amazon Route 53', ['ns-123.awsdns-45.org', 'ns-1536.awsdns-00.co.uk', 'ns-512.awsdns-00.net', 'ns-0.awsdns-00.com']],
  ['google-cloud-dns', 'Google Cloud DNS', ['ns-cloud-c1.googledomains.com', 'ns-cloud-c2.googledomains.com', 'ns-cloud-c3.googledomains.com', 'ns-cloud-c4.googledomains.com']],
  ['azure', 'Azure DNS', ['ns1-05.azure-dns.com', 'ns2-05.azure-dns.net', 'ns3-05.azure-dns.org', 'ns4-05.azure-dns.info']],
  ['godaddy', 'GoDaddy', ['ns17.domaincontrol.com', 'ns18.domaincontrol.com']],
  ['namecheap', 'Namecheap', ['dns1.registrar-servers.com', 'dns2.registrar-servers.com']],
  ['digitalocean', 'DigitalOcean', ['ns1.digitalocean.com', 'ns2.digitalocean.com', 'ns3.digitalocean.com']],
  ['hetzner', 'Hetzner', ['hydrogen.ns.hetzner.com', 'oxygen.ns.hetzner.com', 'helium.ns.hetzner.de']],
  ['hetzner', 'Hetzner', ['ns1.your-server.de', 'ns.second-ns.com', 'ns3.second-ns.de']],
  ['ovh', 'OVHcloud', ['dns10.ovh.net', 'ns10.ovh.net']],
  ['ovh', 'OVHcloud', ['dns200.anycast.me', 'ns200.anycast.me']],
  ['ovh', 'OVHcloud', ['dns21.ovh.ca', 'ns21.ovh.ca']],
  ['gandi', 'Gandi', ['ns-229-a.gandi.net', 'ns-154-b.gandi.net', 'ns-75-c.gandi.net']],
  ['gandi', 'Gandi', ['ns-1.gandi.net', 'dns1.gandi.net']],
  ['porkbun', 'Porkbun', ['curitiba.ns.porkbun.com', 'fortaleza.ns.porkbun.com', 'maceio.ns.porkbun.com', 'salvador.ns.porkbun.com']],
  ['vercel', 'Vercel', ['ns1.vercel-dns.com', 'ns2.vercel-dns.com']],
  ['ns1', 'NS1 (Netlify, IBM NS1 Connect)', ['dns1.p05.nsone.net', 'dns2.p05.nsone.net', 'dns3.p05.nsone.net', 'dns4.p05.nsone.net']],
  ['linode', 'Linode (Akamai Cloud)', ['ns1.linode.com', 'ns2.linode.com', 'ns3.linode.com', 'ns4.linode.com', 'ns5.linode.com']],
  ['akamai', 'Akamai Edge DNS', ['a1-64.akam.net', 'a2-65.akam.net', 'a7-66.akam.net', 'a9-67.akam.net']],
  ['ionos', 'IONOS', ['ns1045.ui-dns.com', 'ns1045.ui-dns.org', 'ns1045.ui-dns.de', 'ns1045.ui-dns.biz']],
  ['squarespace', 'Squarespace', ['ns1.squarespacedns.com', 'ns2.squarespacedns.com', 'ns3.squarespacedns.com', 'ns4.squarespacedns.com']],
];

const SOME_OTHERS: Array<[key: string, nameservers: string[]]> = [
  ['name-com', ['ns1kzx.name.com', 'ns2dky.name.com', 'ns3ghv.name.com', 'ns4qxx.name.com']],
  ['dnsimple', ['ns1.dnsimple.com', 'ns2.dnsimple-edge.net', 'ns3.dnsimple.com', 'ns4.dnsimple-edge.org']],
  ['desec', ['ns1.desec.io', 'ns2.desec.org']],
  ['bunny', ['kiki.bunny.net', 'coco.bunny.net']],
  ['fastmail', ['ns1.messagingengine.com', 'ns2.messagingengine.com']],
  ['wix', ['ns2.wixdns.net', 'ns3.wixdns.net']],
  ['dynadot', ['ns1.dyna-ns.net', 'ns2.dyna-ns.net']],
  ['hostinger', ['ns1.dns-parking.com', 'ns2.dns-parking.com']],
  ['scaleway', ['ns0.dom.scw.cloud', 'ns1.dom.scw.cloud']],
  ['njalla', ['1-you.njalla.no', '2-can.njalla.in', '3-get.njalla.fo']],
  ['he', ['ns1.he.net', 'ns2.he.net', 'ns3.he.net', 'ns4.he.net', 'ns5.he.net']],
];

for (const [key, name, nameservers] of REQUIRED) {
  test(`recogniseProvider: ${name} from ${nameservers[0]}...`, () => {
    assert.equal(recogniseProvider(nameservers), { name, key });
  });
}

test('recogniseProvider: a sample of the other providers in the table', () => {
  for (const [key, nameservers] of SOME_OTHERS) {
    assert.is(recogniseProvider(nameservers)?.key, key, nameservers.join(', '));
  }
});

test('the table: at least 25 providers, unique keys and names, every pattern anchored at the end', () => {
  assert.ok(PROVIDERS.length >= 25, `${PROVIDERS.length} providers`);
  assert.is(new Set(PROVIDERS.map((p) => p.key)).size, PROVIDERS.length);
  assert.is(new Set(PROVIDERS.map((p) => p.name)).size, PROVIDERS.length);
  for (const p of PROVIDERS) {
    for (const re of p.patterns) assert.ok(re.source.endsWith('$'), `${p.key}: ${re.source}`);
  }
});

test('the table: no two providers claim the same realistic nameserver', () => {
  for (const [, , nameservers] of REQUIRED) {
    for (const ns of nameservers) {
      const claimants = PROVIDERS.filter((p) => p.patterns.some((re) => re.test(ns))).map((p) => p.key);
      assert.is(claimants.length, 1, `${ns}: ${claimants.join(', ')}`);
    }
  }
});

test('recogniseProvider: case and trailing dots are ignored', () => {
  assert.equal(recogniseProvider(['ADA.NS.CloudFlare.COM.', 'Bob.Ns.Cloudflare.Com.']), { name: 'Cloudflare', key: 'cloudflare' });
  assert.is(recogniseProvider(['NS-123.AWSDNS-45.ORG.', 'ns-512.awsdns-00.NET'])?.key, 'route53');
});

test('recogniseProvider: a clear majority wins, a split set (mid-migration) is null', () => {
  const cf = ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com'];
  const r53 = ['ns-1.awsdns-01.com', 'ns-2.awsdns-02.net'];
  assert.is(recogniseProvider([...cf, 'ns-1.awsdns-01.com'])?.key, 'cloudflare', '2 of 3');
  assert.is(recogniseProvider([...cf, ...r53]), null, '2 and 2: no majority');
  assert.is(recogniseProvider(['ada.ns.cloudflare.com', 'ns1.unknown.example']), null, 'exactly half is not a majority');
  assert.is(recogniseProvider(['ada.ns.cloudflare.com', 'ns17.domaincontrol.com', 'dns1.registrar-servers.com']), null);
});

test('recogniseProvider: a duplicate nameserver counts once', () => {
  assert.is(recogniseProvider(['ada.ns.cloudflare.com', 'ADA.ns.cloudflare.com.', 'ns1.unknown.example']), null);
});

test('recogniseProvider: unknown, lookalike and empty sets are null', () => {
  assert.is(recogniseProvider(['ns1.example.net', 'ns2.example.net']), null);
  assert.is(recogniseProvider(['ns1.evilcloudflare.com', 'ns2.evilcloudflare.com']), null, 'not a label boundary');
  assert.is(recogniseProvider(['ada.ns.cloudflare.com.evil.example', 'bob.ns.cloudflare.com.evil.example']), null, 'anchored at the end');
  assert.is(recogniseProvider(['ns1.gandi.net.example', 'ns-1.awsdns-01.com.example']), null);
  assert.is(recogniseProvider([]), null);
});

test('detectProvider: the apex of a Cloudflare zone', async () => {
  publishZone('example.test', ['bob.ns.cloudflare.com', 'ada.ns.cloudflare.com']);
  assert.equal(await detectProvider(resolver, 'example.test'), {
    detectionStatus: 'detected',
    detected: 'Cloudflare',
    zone: 'example.test',
    nameservers: ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com'],
  });
});

test("detectProvider: a subdomain reports its parent zone's provider and nameservers", async () => {
  publishZone('example.test', ['ns-123.awsdns-45.org', 'NS-1536.awsdns-00.co.uk.', 'ns-512.awsdns-00.net', 'ns-0.awsdns-00.com']);
  server.add('mail.example.test', 'A', '192.0.2.1');
  assert.equal(await detectProvider(resolver, 'Mail.Example.Test.'), {
    detectionStatus: 'detected',
    detected: 'Amazon Route 53',
    zone: 'example.test',
    nameservers: ['ns-0.awsdns-00.com', 'ns-123.awsdns-45.org', 'ns-1536.awsdns-00.co.uk', 'ns-512.awsdns-00.net'],
  });
  assert.ok(server.queries.some((q) => q.name === 'example.test' && q.type === 'NS'), "the parent's NS were asked");
  assert.not.ok(server.queries.some((q) => q.name === 'mail.example.test' && q.type === 'NS'));
});

test('detectProvider: a delegated sub-zone is judged by its own nameservers, not its parent', async () => {
  publishZone('example.test', ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com']);
  publishZone('sub.example.test', ['hydrogen.ns.hetzner.com', 'oxygen.ns.hetzner.com', 'helium.ns.hetzner.de']);
  const detection = await detectProvider(resolver, 'deep.sub.example.test');
  assert.equal([detection.detectionStatus, detection.detected, detection.zone], ['detected', 'Hetzner', 'sub.example.test']);
});

test('detectProvider: more providers end to end', async () => {
  const cases: Array<[string, string[], string]> = [
    ['godaddy.test', ['ns17.domaincontrol.com', 'ns18.domaincontrol.com'], 'GoDaddy'],
    ['netlify.test', ['dns1.p05.nsone.net', 'dns2.p05.nsone.net', 'dns3.p05.nsone.net', 'dns4.p05.nsone.net'], 'NS1 (Netlify, IBM NS1 Connect)'],
    ['ionos.test', ['ns1045.ui-dns.com', 'ns1045.ui-dns.org', 'ns1045.ui-dns.de', 'ns1045.ui-dns.biz'], 'IONOS'],
  ];
  for (const [zone, ns] of cases) publishZone(zone, ns);
  for (const [zone, ns, name] of cases) {
    const detection = await detectProvider(resolver, `www.${zone}`);
    assert.equal(detection, { detectionStatus: 'detected', detected: name, zone, nameservers: [...ns].sort() }, zone);
  }
});

test('detectProvider: nameservers of no known provider are unknown, and still reported', async () => {
  publishZone('example.test', ['ns2.selfhosted.example', 'ns1.selfhosted.example']);
  assert.equal(await detectProvider(resolver, 'example.test'), {
    detectionStatus: 'unknown',
    detected: 'unknown',
    zone: 'example.test',
    nameservers: ['ns1.selfhosted.example', 'ns2.selfhosted.example'],
  });
});

test('detectProvider: a zone without NS records is no_nameservers', async () => {
  publishZone('example.test', []);
  assert.equal(await detectProvider(resolver, 'example.test'), {
    detectionStatus: 'no_nameservers',
    detected: 'unknown',
    zone: 'example.test',
    nameservers: [],
  });
});

test('detectProvider: no SOA anywhere up the tree is no_nameservers with no zone', async () => {
  server.add('host.nosoa.test', 'A', '192.0.2.3');
  assert.equal(await detectProvider(resolver, 'host.nosoa.test'), {
    detectionStatus: 'no_nameservers',
    detected: 'unknown',
    zone: '',
    nameservers: [],
  });
});

test('detectProvider: a domain not delegated below a TLD is no_nameservers, not the registry', async () => {
  publishZone('test', ['a.nic.test', 'b.nic.test']);
  assert.equal(await detectProvider(resolver, 'unregistered.test'), {
    detectionStatus: 'no_nameservers',
    detected: 'unknown',
    zone: '',
    nameservers: [],
  });
  // The TLD itself is still a zone like any other.
  assert.equal((await detectProvider(resolver, 'test')).zone, 'test');
});

test('detectProvider: SERVFAIL while finding the zone is status error, not a throw', async () => {
  publishZone('example.test', ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com']);
  server.fail('example.test', 'SOA', 'SERVFAIL');
  assert.equal(await detectProvider(resolver, 'example.test'), {
    detectionStatus: 'error',
    detected: 'unknown',
    zone: '',
    nameservers: [],
    error: 'DNS lookup of example.test failed: ESERVFAIL',
  });
});

test('detectProvider: SERVFAIL on the NS lookup keeps the zone it found', async () => {
  publishZone('example.test', ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com']);
  server.fail('example.test', 'NS', 'SERVFAIL');
  assert.equal(await detectProvider(resolver, 'mail.example.test'), {
    detectionStatus: 'error',
    detected: 'unknown',
    zone: 'example.test',
    nameservers: [],
    error: 'DNS lookup of example.test failed: ESERVFAIL',
  });
});

test('detectProvider: a timeout is status error', async () => {
  publishZone('example.test', ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com']);
  server.fail('mail.example.test', '*', 'timeout');
  const detection = await detectProvider(resolver, 'mail.example.test');
  assert.equal([detection.detectionStatus, detection.error], ['error', 'DNS lookup of mail.example.test failed: ETIMEOUT']);
});

test.run();
