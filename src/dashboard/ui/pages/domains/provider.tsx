// Who hosts a domain's DNS (looked up live), and, where the provider offers Domain Connect, the link that adds
// the records there after the user signs in.
import { api, qs } from '../../api.ts';
import { useLoad, type Load } from '../../components/load.ts';
import type { Domain, Provider } from './model.ts';

export function ProviderCard({ domain, provider }: { domain: Domain; provider: Load<Provider> }) {
  const dc = provider.data?.providers.domainConnect;
  // The provider sends the browser back to `next`, which must be on the box's public URL.
  const connect = useLoad(async () => {
    if (!dc?.available) return null;
    const account = await api<{ infrastructure: { publicUrl: string } }>('/account');
    const next = `${account.infrastructure.publicUrl.replace(/\/$/, '')}/domains/${domain.id}`;
    return api<{ url: string; providerName: string }>(`/dns/domain-connect/connect?${qs({ domain_id: domain.id, next })}`);
  }, [dc?.available]);
  const p = provider.data;
  return (
    <div class="card" data-testid="provider-card">
      <h3 style={{ marginTop: 0 }}>DNS provider</h3>
      {provider.error ? (
        <p class="muted">Could not look it up: {provider.error}</p>
      ) : !p ? (
        <p class="muted">
          <span class="spinner" aria-hidden="true" /> Looking up who hosts your DNS…
        </p>
      ) : (
        <>
          <p style={{ margin: '0 0 6px' }}>
            {p.detectionStatus === 'detected' ? (
              <>
                Your DNS is at <strong>{p.detected}</strong>.
              </>
            ) : p.detectionStatus === 'unknown' ? (
              'We could not tell who hosts your DNS: add the records wherever you manage it.'
            ) : p.detectionStatus === 'no_nameservers' ? (
              `No nameservers answer for ${domain.name}: is the domain registered?`
            ) : (
              `The lookup failed${p.error ? `: ${p.error}` : ''}. Add the records wherever you manage DNS.`
            )}
          </p>
          {p.zone && (
            <p class="muted" style={{ margin: '0 0 10px', fontSize: '13px' }}>
              Zone {p.zone}
              {p.nameservers.length > 0 && ` · ${p.nameservers.join(', ')}`}
            </p>
          )}
          {connect.data ? (
            <>
              <a class="button primary" href={connect.data.url} rel="noopener">
                Set up with {connect.data.providerName}
              </a>
              <p class="muted" style={{ margin: '6px 0 0', fontSize: '13px' }}>
                Adds the records for you after you sign in at {connect.data.providerName} (Domain Connect).
              </p>
            </>
          ) : dc?.available && connect.loading ? (
            <p class="muted">Preparing the Domain Connect link…</p>
          ) : connect.error ? (
            <p class="muted" style={{ fontSize: '13px' }}>
              Domain Connect is not possible here: {connect.error}
            </p>
          ) : null}
        </>
      )}
    </div>
  );
}
