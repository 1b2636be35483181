// What `mailwright doctor` says of outbound transport security: whether the configured resolver validates
// DNSSEC (DANE is checked only then, RFC 7672), how many recipient domains' MTA-STS policies are cached, and
// whether daily TLS reports can be signed (RFC 8460 3). Notes, not problems: none of these stops mail.
import type { Config } from '../config/config.ts';
import { get, value, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import { resolverValidates } from '../dns/dnssec.ts';
import type { Check } from './health.ts';

/** The cached recipient policies, counted, and the verified domain the hostname belongs to (its DKIM key signs reports). */
function* transportState(now: number, host: string): Query<{ cache: { policies: number; enforce: number; expired: number }; signer: string | undefined }> {
  const cache = (yield* get<{ policies: number; enforce: number; expired: number }>('SELECT count(*) AS policies, count(*) FILTER (WHERE mode = \'enforce\') AS enforce, count(*) FILTER (WHERE expires_at <= ?) AS expired FROM mta_sts_policies', now))!;
  const signer = yield* value<string>("SELECT name FROM domains WHERE status = 'verified' AND (name = ? OR ? LIKE '%.' || name) ORDER BY length(name) DESC LIMIT 1", host, host);
  return { cache, signer };
}

export async function outboundTlsChecks(config: Config, store: Pick<Store, 'read'>, now: number): Promise<Check[]> {
  const checks: Check[] = [];
  const dnssec = await resolverValidates(config.dnsServers);
  checks.push(
    dnssec.validates
      ? { ok: true, text: `the resolver validates DNSSEC (${dnssec.detail}): DANE is checked for MX hosts that publish TLSA records` }
      : { ok: true, skipped: true, text: `the resolver does not validate DNSSEC (${dnssec.detail}): DANE is not checked; point dns_servers at a validating resolver (unbound on 127.0.0.1) to check it` },
  );
  const host = config.hostname.toLowerCase();
  const { cache, signer } = await store.read(transportState(now, host));
  checks.push({ ok: true, skipped: cache.policies === 0, text: `MTA-STS: ${cache.policies} recipient domain polic${cache.policies === 1 ? 'y' : 'ies'} cached (${cache.enforce} enforce, ${cache.expired} expired)` });
  checks.push(
    signer
      ? { ok: true, text: `TLS reports are mailed signed with ${signer}'s DKIM key (the domain the hostname ${host} belongs to)` }
      : { ok: true, skipped: true, text: `TLS reports are only posted to https: addresses: no verified domain on the box covers the hostname ${host}, so there is no DKIM key to sign mailed ones (RFC 8460 3)` },
  );
  return checks;
}
