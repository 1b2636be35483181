// What `mailwright doctor` says of outbound transport security: whether the configured resolver validates
// DNSSEC (DANE is checked only then, RFC 7672), how many recipient domains' MTA-STS policies are cached, and
// whether daily TLS reports can be signed (RFC 8460 3). Notes, not problems: none of these stops mail.
import type { Config } from '../config/config.ts';
import type { Db } from '../db/open.ts';
import { resolverValidates } from '../dns/dnssec.ts';
import type { Check } from './health.ts';

export async function outboundTlsChecks(config: Config, db: Db, now: number): Promise<Check[]> {
  const checks: Check[] = [];
  const dnssec = await resolverValidates(config.dnsServers);
  checks.push(
    dnssec.validates
      ? { ok: true, text: `the resolver validates DNSSEC (${dnssec.detail}): DANE is checked for MX hosts that publish TLSA records` }
      : { ok: true, skipped: true, text: `the resolver does not validate DNSSEC (${dnssec.detail}): DANE is not checked; point dns_servers at a validating resolver (unbound on 127.0.0.1) to check it` },
  );
  const cache = db.prepare('SELECT count(*) AS policies, coalesce(sum(mode = \'enforce\'), 0) AS enforce, coalesce(sum(expires_at <= ?), 0) AS expired FROM mta_sts_policies').get(now) as { policies: number; enforce: number; expired: number };
  checks.push({ ok: true, skipped: cache.policies === 0, text: `MTA-STS: ${cache.policies} recipient domain polic${cache.policies === 1 ? 'y' : 'ies'} cached (${cache.enforce} enforce, ${cache.expired} expired)` });
  const host = config.hostname.toLowerCase();
  const signer = db.prepare("SELECT name FROM domains WHERE status = 'verified' AND (name = ? OR ? LIKE '%.' || name) ORDER BY length(name) DESC LIMIT 1").pluck().get(host, host) as string | undefined;
  checks.push(
    signer
      ? { ok: true, text: `TLS reports are mailed signed with ${signer}'s DKIM key (the domain the hostname ${host} belongs to)` }
      : { ok: true, skipped: true, text: `TLS reports are only posted to https: addresses: no verified domain on the box covers the hostname ${host}, so there is no DKIM key to sign mailed ones (RFC 8460 3)` },
  );
  return checks;
}
