// Domain Connect for a domain: whether its DNS provider supports this box's template, and the signed
// consent link (synchronous flow) that sends the owner to the provider to approve the records. The box
// never holds DNS credentials. The signing key lives in the data directory (domain-connect.key); its
// public half is published by the operator at _dck1.<provider id> (`doctor` prints the record).
import type { App } from '../context.ts';
import { ApiError } from '../errors.ts';
import { consentUrl, discoverSettings, DomainConnectError, supportsTemplate, templateVariables, type ServiceIdentity } from '../dns/domain-connect.ts';
import { loadOrCreateSigningKey } from '../dns/domain-connect-keys.ts';
import { FetchFailed, FetchRefused, type FetchPolicy } from '../dns/safe-fetch.ts';
import { checkDmarc } from '../dns/verify.ts';
import { DnsLookupError, findZone, relativeHost } from '../dns/zone.ts';
import { activeDkimKey } from './dkim-keys.ts';
import type { DomainRow } from './domains.ts';

export const KEY_HOST = '_dck1';

const fetchPolicy = (app: App): FetchPolicy => ({ resolver: app.dns, allowPrivate: app.config.allowPrivateFetch, ca: app.fetchCa });

export async function serviceIdentity(app: App): Promise<ServiceIdentity> {
  return {
    providerId: app.config.domainConnectProviderId,
    serviceId: app.config.domainConnectServiceId,
    keyHost: KEY_HOST,
    privateKey: await loadOrCreateSigningKey(app.config.dataDir),
  };
}

/** For provider detection: never throws, a provider that cannot be asked is simply not available. */
export async function domainConnectAvailability(app: App, zone: string): Promise<{ available: boolean; providerName: string | null }> {
  try {
    const settings = await discoverSettings(zone, { resolver: app.dns, fetch: fetchPolicy(app) });
    if (!settings) return { available: false, providerName: null };
    const available = await supportsTemplate(settings, await serviceIdentity(app), fetchPolicy(app));
    return { available, providerName: settings.providerDisplayName ?? settings.providerName };
  } catch (err) {
    app.log.info('domain connect discovery failed', { zone, err });
    return { available: false, providerName: null };
  }
}

const unsupported = (message: string) => new ApiError(409, 'domain_connect_unsupported', message);

export async function connectLink(app: App, row: DomainRow, redirectUri: string): Promise<{ url: string; providerName: string }> {
  try {
    const zone = await findZone(app.dns, row.name);
    if (!zone) throw unsupported(`No DNS zone was found for ${row.name}`);
    const settings = await discoverSettings(zone.zone, { resolver: app.dns, fetch: fetchPolicy(app) });
    if (!settings) throw unsupported(`The DNS provider of ${zone.zone} does not offer Domain Connect (no _domainconnect.${zone.zone} record)`);
    const identity = await serviceIdentity(app);
    const providerName = settings.providerDisplayName ?? settings.providerName;
    if (!(await supportsTemplate(settings, identity, fetchPolicy(app)))) {
      throw unsupported(`${providerName} offers Domain Connect but not this box's template (${identity.providerId}/${identity.serviceId}); publish the records by hand`);
    }
    const key = (await app.store.read(activeDkimKey(row.workspace_id, row.id)))!;
    const host = relativeHost(row.name, zone.zone);
    // The template's DMARC record would replace whatever policy the domain has (it may be stricter): offer it
    // only when there is none.
    const hasDmarc = (await checkDmarc(app.dns, row.name)).state !== 'failed';
    const url = consentUrl(settings, identity, {
      zone: zone.zone,
      host: host === '@' ? '' : host,
      variables: templateVariables({ dkimSelector: key.selector, dkimPublicKey: key.publicKey, mailHost: app.config.hostname }),
      groupIds: ['dkim', 'returnpath', ...(hasDmarc ? [] : ['dmarc'])],
      redirectUri,
      state: row.id,
    });
    return { url, providerName };
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // What the provider (or its DNS) told us is not something the box will follow.
    if (err instanceof FetchRefused || (err instanceof DomainConnectError && err.code === 'bad_settings')) throw unsupported(`Domain Connect refused: ${err.message}`);
    if (err instanceof FetchFailed || (err instanceof DomainConnectError && err.code === 'provider_error')) {
      throw new ApiError(502, 'dns_provider_unreachable', `The DNS provider's Domain Connect service did not answer usably: ${err.message}`);
    }
    if (err instanceof DnsLookupError || (err instanceof DomainConnectError && err.code === 'dns_error')) throw new ApiError(503, 'dns_unavailable', `${err.message}; try again shortly`);
    throw err;
  }
}
