// A domain's page: how sending stands, its DNS provider and receiving cards, what DNS answered, the records to
// publish (records.tsx), inbound MX (inbound.tsx), MTA-STS (mta-sts.tsx), the received DMARC and TLS reports
// (reports-card.tsx), the sending options (options.tsx), DKIM key rotation, delete.
import { api, qs } from '../../api.ts';
import { useAction } from '../../components/action.ts';
import { Badge, Empty, toast } from '../../components/feedback.tsx';
import { At } from '../../components/format.tsx';
import { GONE, orGone, useLoad } from '../../components/load.ts';
import { ConfirmButton } from '../../components/modal.tsx';
import { BackLink, Page, Pending } from '../../components/page.tsx';
import { navigate } from '../../router.ts';
import { DkimRotation } from './dkim-rotation.tsx';
import { HostnameBanner } from './hostname-banner.tsx';
import { Inbound, InboundCard } from './inbound.tsx';
import { MtaStsSection } from './mta-sts.tsx';
import { STATUS, type DnsIssue, type Domain, type Provider } from './model.ts';
import { Options } from './options.tsx';
import { ProviderCard } from './provider.tsx';
import { Records } from './records.tsx';
import { DmarcCard, TlsCard } from './reports-card.tsx';

export function DomainPage({ id }: { id: string }) {
  const domain = useLoad(() => orGone(api<Domain>(`/domains/${id}`)), [id]);
  // Slow (live DNS lookups), so it loads beside the domain rather than before it.
  const provider = useLoad(() => api<Provider>(`/dns/provider?${qs({ domain_id: id })}`), [id]);
  const verifying = useAction();
  const back = <BackLink href="/domains">All domains</BackLink>;
  if (domain.data === null) return <Pending title="Domain" state={domain} back={back} label="Loading the domain" />;
  if (domain.data === GONE)
    return (
      <Page title="Domain not found">
        <div class="card">
          <Empty title="This domain is not in your workspace">
            It may have been deleted. <a href="/domains">See all domains</a>
          </Empty>
        </div>
      </Page>
    );
  const d = domain.data;
  const verify = () =>
    verifying.run(async () => {
      const v = await api<{ status: Domain['status']; setup_status: Domain['setup_status']; dns_issues: DnsIssue[] }>(`/domains/${id}/verify`, { method: 'POST', body: {} });
      toast(v.status === 'verified' ? `${d.name} is verified: you can send from it` : v.setup_status === 'checking' ? 'DNS did not answer: try again in a minute' : `${v.dns_issues.length} ${v.dns_issues.length === 1 ? 'record needs' : 'records need'} attention`);
      domain.reload();
    });
  return (
    <Page
      title={d.name}
      actions={
        !d.local && (
          <button class="button primary" onClick={verify} disabled={verifying.busy}>
            {verifying.busy ? 'Checking DNS…' : d.status === 'verified' ? 'Check again' : 'Verify DNS'}
          </button>
        )
      }
    >
      {back}
      {d.hostnameProblem && <HostnameBanner problem={d.hostnameProblem} />}
      <div class="cards">
        <div class="card" data-testid="sending-card">
          <h3 style={{ marginTop: 0 }}>Sending</h3>
          <Badge tone={STATUS[d.status][0]}>{STATUS[d.status][1]}</Badge>
          <p class="muted" style={{ marginBottom: 0 }}>
            {d.status === 'verified' ? `Mail from any address @${d.name} goes out signed.` : d.status === 'failed' ? 'Some records are missing or wrong: see below, fix them, then verify again.' : 'Publish the records below at your DNS provider, then press Verify DNS.'}
            {d.checkedAt && (
              <>
                {' '}
                Checked <At iso={d.checkedAt} />.
              </>
            )}
          </p>
        </div>
        {d.local ? (
          <div class="card">
            <h3 style={{ marginTop: 0 }}>No DNS</h3>
            <p class="muted" style={{ marginBottom: 0 }}>
              A local domain of mailwright try: it needs no records. Mail to it is delivered by this box; mail to other domains is kept in <a href="/mail/sent">Sent</a>, never sent.
            </p>
          </div>
        ) : (
          <ProviderCard domain={d} provider={provider} />
        )}
        <InboundCard domain={d} onChange={domain.reload} />
        {!d.local && <DmarcCard domainId={d.id} />}
        {!d.local && <TlsCard domainId={d.id} />}
      </div>
      {d.setup_status === 'checking' && (
        <p class="card" role="status" style={{ marginTop: 0 }}>
          A DNS lookup failed for a moment, so the status is unchanged. Try again in a minute.
        </p>
      )}
      {d.dns_issues.length > 0 && <Issues issues={d.dns_issues} />}
      {!d.local && <Records domain={d} hosts={provider.data?.zone ? provider.data.recordHosts : undefined} />}
      {!d.local && d.inbound.status !== 'not_configured' && d.inbound.record && <Inbound domain={d} onChange={domain.reload} />}
      {d.mtaSts && !d.hostnameProblem && <MtaStsSection domain={d} onChange={domain.reload} />}
      <Options domain={d} onChange={domain.reload} />
      <DkimRotation domainId={d.id} selector={d.dkimSelector} rotation={d.dkimRotation} onChange={domain.reload} />
      <h2 style={{ marginTop: '28px' }}>Delete</h2>
      <div class="card row">
        <span class="grow muted">Deleting {d.name} removes its DKIM key and its inboxes. Mail already received stays in your mailbox.</span>
        <ConfirmButton
          label="Delete domain"
          small={false}
          title={`Delete ${d.name}?`}
          confirm="Delete domain"
          action={async () => {
            await api(`/domains/${id}`, { method: 'DELETE' });
            toast(`${d.name} deleted`);
            navigate('/domains');
          }}
        >
          Mail can no longer be sent from {d.name}, its inboxes are removed and mail sent to them will be refused. You can add the domain again later, with a new DKIM key to publish.
        </ConfirmButton>
      </div>
    </Page>
  );
}

function Issues({ issues }: { issues: DnsIssue[] }) {
  return (
    <div class="card" role="alert" style={{ marginBottom: '20px', borderColor: 'var(--bad)' }}>
      <h3 style={{ marginTop: 0 }}>What DNS answered</h3>
      <ul class="findings">
        {issues.map((i) => (
          <li>
            <Badge tone="bad">{i.record}</Badge> {i.message}
            <div class="muted" style={{ fontSize: '13px', marginTop: '2px' }}>
              <span class="mono">
                {i.type} {i.name}
              </span>
              {i.found.length > 0 ? (
                <>
                  {' '}
                  · found <span class="mono">{i.found.join(' | ')}</span>
                </>
              ) : (
                ' · nothing found'
              )}
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}
