// The box's OutboundTlsChecks (outbound-tls.ts): MTA-STS policies from their cache in the store (mta-sts/policies.ts),
// TLSA records asked of the configured resolvers (dane.ts, remembered for a minute per host), and every session's
// result counted for the TLS report (tls-rpt/counts.ts) on the group commit. It must not deliver anything.
import tls from 'node:tls';
import type { App } from '../context.ts';
import { lookupTlsa, type DaneLookup } from './dane.ts';
import { MtaStsPolicies } from './mta-sts/policies.ts';
import type { OutboundTlsChecks } from './outbound-tls.ts';
import { countSession } from './tls-rpt/counts.ts';

const TLSA_MEMO_MS = 60_000;
const MAX_MEMO = 10_000;

export function createTlsChecks(app: App, tlsCa: string | undefined): OutboundTlsChecks {
  const { config, clock, log } = app;
  const policies = new MtaStsPolicies({
    store: app.store,
    clock,
    resolver: app.dns,
    fetch: { allowPrivate: config.allowPrivateDelivery, port: config.mtaStsPort, ca: [...tls.rootCertificates, ...(tlsCa ? [tlsCa] : [])] },
  });
  const tlsa = new Map<string, { until: number; lookup: Promise<DaneLookup> }>();
  return {
    sts: (domain) => policies.lookup(domain),
    dane(host) {
      const now = clock.now();
      const known = tlsa.get(host);
      if (known && known.until > now) return known.lookup;
      const lookup = lookupTlsa(config.dnsServers, host);
      if (tlsa.size > MAX_MEMO) tlsa.clear();
      tlsa.set(host, { until: now + TLSA_MEMO_MS, lookup });
      return lookup;
    },
    observe(session) {
      // Counting must never hold delivery up or fail it: a count lost to a full disk is logged, nothing more.
      app.store.write(() => countSession(session, clock.now()), { acknowledged: false }).catch((err: unknown) => log.warn('could not count a TLS session for the TLS report', { err }));
      if (session.failure) log.info('outbound TLS check failed', { domain: session.domain, mx: session.receivingMx, type: session.failure.type, reason: session.failure.reason });
    },
  };
}
