// DNS hosting provider detection: which provider serves a domain's zone, judged from its NS host names.
// It only names the provider (so the dashboard can say where to add records); it never changes DNS, never
// throws for DNS problems (they become detectionStatus 'error'), and does no lookups beyond zone.ts.
import type { Resolver } from 'node:dns/promises';
import { DnsLookupError, findZone, nameserversOf } from './zone.ts';

export interface Provider {
  key: string;
  name: string;
  /** Matched against NS names that are already lower case and without a trailing dot. */
  patterns: RegExp[];
}

export interface Detection {
  detectionStatus: 'detected' | 'unknown' | 'no_nameservers' | 'error';
  /** The provider's display name, or 'unknown'. */
  detected: string;
  /** The zone apex; '' when none was found. */
  zone: string;
  nameservers: string[];
  error?: string;
}

// Each pattern is anchored at a label boundary so `evilcloudflare.com` lookalikes cannot match. Only
// nameserver names the providers document or hand out by default; a wrong guess here would send an owner
// to the wrong control panel, so a provider we are unsure of is better left to 'unknown'.
export const PROVIDERS: readonly Provider[] = [
  { key: 'cloudflare', name: 'Cloudflare', patterns: [/\.ns\.cloudflare\.com$/] },
  { key: 'route53', name: 'Amazon Route 53', patterns: [/^ns-\d+\.awsdns-\d+\.(com|net|org|co\.uk)$/] },
  { key: 'google-cloud-dns', name: 'Google Cloud DNS', patterns: [/^ns-cloud-[a-z]\d+\.googledomains\.com$/] },
  // Google Domains' own default set; its domains moved to Squarespace, which kept serving them from here.
  { key: 'google-domains', name: 'Google Domains (Squarespace)', patterns: [/^ns\d+\.googledomains\.com$/] },
  { key: 'azure', name: 'Azure DNS', patterns: [/^ns\d+-\d+\.azure-dns\.(com|net|org|info)$/] },
  { key: 'godaddy', name: 'GoDaddy', patterns: [/\.domaincontrol\.com$/, /^ns\d+\.secureserver\.net$/] },
  { key: 'namecheap', name: 'Namecheap', patterns: [/\.registrar-servers\.com$/, /\.namecheaphosting\.com$/] },
  { key: 'digitalocean', name: 'DigitalOcean', patterns: [/^ns[1-3]\.digitalocean\.com$/] },
  {
    key: 'hetzner',
    name: 'Hetzner',
    // DNS Console, konsoleH and Robot respectively.
    patterns: [/\.ns\.hetzner\.(com|de)$/, /\.your-server\.de$/, /\.first-ns\.de$/, /\.second-ns\.(com|de)$/],
  },
  { key: 'ovh', name: 'OVHcloud', patterns: [/\.ovh\.(net|ca)$/, /\.anycast\.me$/] },
  { key: 'gandi', name: 'Gandi', patterns: [/\.gandi\.net$/] },
  { key: 'porkbun', name: 'Porkbun', patterns: [/\.porkbun\.com$/] },
  { key: 'vercel', name: 'Vercel', patterns: [/\.vercel-dns\.com$/] },
  // Netlify DNS is served by NS1 (dnsN.pNN.nsone.net); the set alone cannot tell Netlify from other NS1 users.
  { key: 'ns1', name: 'NS1 (Netlify, IBM NS1 Connect)', patterns: [/\.nsone\.net$/, /\.netlify\.com$/] },
  { key: 'linode', name: 'Linode (Akamai Cloud)', patterns: [/^ns\d+\.linode\.com$/] },
  { key: 'akamai', name: 'Akamai Edge DNS', patterns: [/\.akam\.net$/] },
  { key: 'ionos', name: 'IONOS', patterns: [/\.ui-dns\.(com|org|de|biz)$/] },
  { key: 'squarespace', name: 'Squarespace', patterns: [/\.squarespacedns\.com$/] },
  { key: 'name-com', name: 'Name.com', patterns: [/\.name\.com$/] },
  { key: 'dnsimple', name: 'DNSimple', patterns: [/\.dnsimple\.com$/, /\.dnsimple-edge\.(net|org)$/] },
  { key: 'hover', name: 'Hover', patterns: [/\.hover\.com$/] },
  { key: 'wix', name: 'Wix', patterns: [/\.wixdns\.net$/] },
  { key: 'dynadot', name: 'Dynadot', patterns: [/\.dyna-ns\.net$/] },
  { key: 'hostinger', name: 'Hostinger', patterns: [/\.dns-parking\.com$/, /\.hostinger\.com$/] },
  { key: 'vultr', name: 'Vultr', patterns: [/^ns\d+\.vultr\.com$/] },
  { key: 'scaleway', name: 'Scaleway', patterns: [/\.dom\.scw\.cloud$/] },
  { key: 'desec', name: 'deSEC', patterns: [/^ns\d+\.desec\.(io|org)$/] },
  { key: 'bunny', name: 'Bunny DNS', patterns: [/\.bunny\.net$/] },
  { key: 'alibaba', name: 'Alibaba Cloud DNS', patterns: [/\.alidns\.com$/, /\.hichina\.com$/] },
  { key: 'dnspod', name: 'DNSPod (Tencent Cloud)', patterns: [/\.dnspod\.(net|com)$/, /\.dnsv\d\.com$/] },
  { key: 'yandex', name: 'Yandex', patterns: [/^dns\d+\.yandex\.net$/] },
  { key: 'yandex-cloud', name: 'Yandex Cloud DNS', patterns: [/\.yandexcloud\.net$/] },
  { key: 'njalla', name: 'Njalla', patterns: [/\.njalla\.(no|in|fo)$/] },
  { key: 'fastmail', name: 'Fastmail', patterns: [/\.messagingengine\.com$/] },
  { key: 'infomaniak', name: 'Infomaniak', patterns: [/\.infomaniak\.ch$/] },
  { key: 'constellix', name: 'Constellix', patterns: [/\.constellix\.(com|net)$/] },
  { key: 'dnsmadeeasy', name: 'DNS Made Easy', patterns: [/\.dnsmadeeasy\.com$/] },
  { key: 'easydns', name: 'easyDNS', patterns: [/\.easydns\.(com|net|org|info)$/] },
  { key: 'no-ip', name: 'No-IP', patterns: [/\.no-ip\.com$/] },
  { key: 'afraid', name: 'FreeDNS (afraid.org)', patterns: [/^ns\d+\.afraid\.org$/] },
  { key: 'he', name: 'Hurricane Electric', patterns: [/^ns\d+\.he\.net$/] },
  { key: 'rackspace', name: 'Rackspace', patterns: [/\.stabletransit\.com$/] },
  { key: 'dyn', name: 'Dyn (Oracle)', patterns: [/\.dynect\.net$/] },
  { key: 'oracle', name: 'Oracle Cloud DNS', patterns: [/\.dns\.oraclecloud\.net$/] },
  { key: 'ultradns', name: 'UltraDNS', patterns: [/\.ultradns\.(com|net|org|info|biz|co\.uk)$/] },
  { key: 'cloudns', name: 'ClouDNS', patterns: [/\.cloudns\.net$/] },
  { key: 'namesilo', name: 'NameSilo', patterns: [/\.dnsowl\.com$/] },
  { key: 'network-solutions', name: 'Network Solutions', patterns: [/\.worldnic\.com$/] },
  { key: 'enom', name: 'Enom', patterns: [/\.name-services\.com$/] },
  { key: 'bluehost', name: 'Bluehost', patterns: [/\.bluehost\.com$/] },
  { key: 'hostgator', name: 'HostGator', patterns: [/\.hostgator\.com$/] },
  { key: 'dreamhost', name: 'DreamHost', patterns: [/^ns\d+\.dreamhost\.com$/] },
  { key: 'siteground', name: 'SiteGround', patterns: [/\.siteground\.net$/] },
  { key: 'wordpress-com', name: 'WordPress.com', patterns: [/^ns\d+\.wordpress\.com$/] },
  { key: 'microsoft-365', name: 'Microsoft 365', patterns: [/\.bdm\.microsoftonline\.com$/] },
  { key: 'strato', name: 'STRATO', patterns: [/\.rzone\.de$/] },
  { key: 'netcup', name: 'netcup', patterns: [/\.netcup\.net$/] },
  { key: 'transip', name: 'TransIP', patterns: [/\.transip\.(net|nl|eu)$/] },
  { key: 'one-com', name: 'one.com', patterns: [/^ns\d+\.one\.com$/] },
  { key: 'loopia', name: 'Loopia', patterns: [/\.loopia\.se$/] },
  { key: 'inwx', name: 'INWX', patterns: [/\.inwx\.(de|eu|com|net)$/] },
  { key: 'spaceship', name: 'Spaceship', patterns: [/\.spaceship\.net$/] },
  { key: 'mythic-beasts', name: 'Mythic Beasts', patterns: [/\.mythic-beasts\.com$/] },
];

/**
 * The provider serving more than half of the nameservers (case and trailing dots ignored, duplicates
 * counted once); null when none does, e.g. for an unknown set or one split between providers mid-migration.
 */
export function recogniseProvider(nameservers: string[]): { name: string; key: string } | null {
  const names = [...new Set(nameservers.map((ns) => ns.trim().toLowerCase().replace(/\.+$/, '')))].filter((ns) => ns !== '');
  if (names.length === 0) return null;
  for (const provider of PROVIDERS) {
    const served = names.filter((ns) => provider.patterns.some((p) => p.test(ns))).length;
    if (served * 2 > names.length) return { name: provider.name, key: provider.key };
  }
  return null;
}

/** Finds the zone serving `domain`, its nameservers and their provider; DNS failures become status 'error'. */
export async function detectProvider(resolver: Resolver, domain: string): Promise<Detection> {
  const name = domain.trim().toLowerCase().replace(/\.+$/, '');
  let zone = '';
  try {
    const found = await findZone(resolver, name);
    // A TLD above the domain owning the closest SOA means the domain is not delegated (unregistered or a
    // typo): its "nameservers" would be the registry's, and hosts relative to it would be nonsense.
    if (!found || (found.zone !== name && !found.zone.includes('.'))) return noNameservers('');
    zone = found.zone;
    const nameservers = await nameserversOf(resolver, zone);
    if (nameservers.length === 0) return noNameservers(zone);
    const provider = recogniseProvider(nameservers);
    if (!provider) return { detectionStatus: 'unknown', detected: 'unknown', zone, nameservers };
    return { detectionStatus: 'detected', detected: provider.name, zone, nameservers };
  } catch (err) {
    if (!(err instanceof DnsLookupError)) throw err;
    return { detectionStatus: 'error', detected: 'unknown', zone, nameservers: [], error: err.message };
  }
}

function noNameservers(zone: string): Detection {
  return { detectionStatus: 'no_nameservers', detected: 'unknown', zone, nameservers: [] };
}
