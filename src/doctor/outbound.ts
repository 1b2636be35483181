// What `mailwright doctor` checks of the way out: whether this host lets mail leave on port 25 to
// MX hosts (many VPS providers block it), with the exact [[relay]] setting to add when it does not, and
// whether each configured relay answers. Read-only: it connects, reads a greeting and says QUIT.
import net from 'node:net';
import type { Resolver } from 'node:dns/promises';
import type { Config } from '../config/config.ts';
import { lookupHost, resolveMxRoute } from '../dns/mx.ts';
import { relaysFrom, type Relay } from '../send/relays.ts';
import { smtpGreeting, type Check } from './health.ts';

/** Big mailbox providers whose MX hosts always answer on port 25: if none does, the port is closed on the way out. */
const PROBE_DOMAINS = ['gmail.com', 'outlook.com', 'yahoo.com'];

// Continuation lines line up under the text after doctor's `      fix: `.
const relayFix = (port: number) => [
  `ask your provider to open outbound port ${port}, or send through a relay (your provider's or a sending service's):`,
  '           add this at the end of the config file (/etc/mailwright/mailwright.toml under systemd), then',
  '           systemctl reload mailwright; smtp://...:587 works too, with STARTTLS required',
  '             [[relay]]',
  '             match = "*"',
  '             url = "smtps://USER:PASSWORD@smtp.relay.example:465"',
].join('\n');

export async function outboundChecks(config: Config, resolver: Resolver, waitMs?: number): Promise<Check[]> {
  const relays = relaysFrom(config.relayUrl, config.relays);
  const all = [...relays.rules.map((r) => r.relay), ...(relays.fallback ? [relays.fallback] : [])];
  const checks = await Promise.all(all.map((relay) => relayCheck(relay, resolver, waitMs)));
  const catchAll = relays.rules.find((r) => r.match.some((m) => m.on === 'any'))?.relay ?? relays.fallback;
  const others = all.length > 1 ? ` (${catchAll?.id} takes what no other matches)` : '';
  if (catchAll) checks.push({ ok: true, text: `outbound: every message goes through a relay${others}, so port 25 to MX hosts is not needed` });
  else checks.push(await port25Check(config.mtaPort, resolver, waitMs));
  return checks;
}

async function relayCheck(relay: Relay, resolver: Resolver, waitMs?: number): Promise<Check> {
  const where = `${relay.id} (${relay.host}:${relay.port}${relay.secure ? ', implicit TLS' : ''})`;
  const setting = relay.id === 'relay_url' ? 'relay_url' : `the url of ${relay.id} (the ${ordinal(Number(relay.id.slice(6, -1)) + 1)} [[relay]])`;
  const addresses = net.isIP(relay.host) ? [relay.host] : (await lookupHost(resolver, relay.host)).addresses;
  if (addresses.length === 0) return { ok: false, text: `${where}: the host name does not resolve`, fix: `check the host in ${setting}` };
  const greeting = await smtpGreeting(addresses[0]!, relay.port, waitMs, { tls: relay.secure });
  if (greeting.ok) return { ok: true, text: `${where} answers` };
  return { ok: false, text: `${where}: ${greeting.text}`, fix: `check the host and port in ${setting}, and that this host may connect out to port ${relay.port}` };
}

async function port25Check(port: number, resolver: Resolver, waitMs?: number): Promise<Check> {
  // In parallel: a port that is filtered costs one wait, not one per provider.
  const tries = await Promise.all(
    PROBE_DOMAINS.map(async (domain) => {
      const route = await resolveMxRoute(resolver, domain, { allowPrivate: true });
      const host = route.kind === 'hosts' ? route.hosts[0] : undefined;
      if (!host) return null;
      return { host: host.host, address: host.addresses[0]!, greeting: await smtpGreeting(host.addresses[0]!, port, waitMs) };
    }),
  );
  const probed = tries.filter((t) => t !== null);
  if (probed.length === 0) return { ok: true, skipped: true, text: `outbound port ${port}: not tested, no MX host of ${PROBE_DOMAINS.join(', ')} resolves through dns_servers` };
  // An answer of any kind, even a refusal in the greeting, means the port lets connections out.
  const open = probed.find((t) => t.greeting.ok || t.greeting.why === 'no-220');
  if (open) return { ok: true, text: `outbound port ${port} is open: ${open.host} [${open.address}] answered` };
  const first = probed[0]!;
  const why = first.greeting.ok ? '' : first.greeting.text;
  return { ok: false, text: `outbound port ${port} looks blocked: no MX host answered (${first.host} [${first.address}]: ${why}); mail straight to MX hosts cannot leave this box`, fix: relayFix(port) };
}

const ordinal = (n: number) => `${n}${n % 10 === 1 && n % 100 !== 11 ? 'st' : n % 10 === 2 && n % 100 !== 12 ? 'nd' : n % 10 === 3 && n % 100 !== 13 ? 'rd' : 'th'}`;
