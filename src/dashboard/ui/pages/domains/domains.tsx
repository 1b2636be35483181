// Domains: the list, adding one, and a domain's page (records to publish with their live status, Verify and
// what DNS said, the DNS provider and its Domain Connect link, inbound MX setup, marketing and tracking
// switches, delete).
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Me } from '../../session.ts';
import { api, qs, type List } from '../../api.ts';
import { Badge, Empty, ErrorBox, Loaded, Loading, toast } from '../../components/feedback.tsx';
import { CopyButton, Field, Form } from '../../components/forms.tsx';
import { At } from '../../components/format.tsx';
import { GONE, messageOf, orGone, useLoad } from '../../components/load.ts';
import { ConfirmButton, Modal } from '../../components/modal.tsx';
import { BackLink, Page, useNarrow } from '../../components/page.tsx';
import { navigate, useLocation } from '../../router.ts';
import { DkimRotation, type Rotation } from './dkim-rotation.tsx';
import { HostnameBanner, type HostnameProblem } from './hostname-banner.tsx';
import { Icon } from '../../icons.tsx';

type CheckState = 'pending' | 'verified' | 'failed';
type Tone = 'neutral' | 'good' | 'bad' | 'warn' | 'info';
interface Checks {
  dkim: boolean;
  spf: boolean;
  returnPath: boolean;
  dmarc: boolean;
  mx: boolean;
}
export interface DomainSummary {
  id: string;
  name: string;
  status: 'pending' | 'verified' | 'failed';
  setup_status: 'checking' | 'action_required' | 'complete';
  checks: Checks;
  createdAt: string;
  checkedAt: string | null;
  /** A local domain of `mailwright try`: no DNS records, never checked. */
  local?: boolean;
}
interface DnsRecord {
  record: 'DKIM' | 'SPF' | 'MX' | 'DMARC';
  type: 'TXT' | 'MX';
  name: string;
  value: string;
  priority?: number;
  status: CheckState;
}
interface DnsIssue {
  record: string;
  type: string;
  name: string;
  expected: string;
  found: string[];
  message: string;
}
export interface Domain extends DomainSummary {
  records: DnsRecord[];
  dns_issues: DnsIssue[];
  returnPath: string;
  marketing: boolean;
  open_tracking: boolean;
  click_tracking: boolean;
  inbound: { status: 'not_configured' | 'dns_pending' | 'ready'; record: { type: 'MX'; name: string; value: string } | null; issue: DnsIssue | null; checkedAt: string | null };
  verifiedAt: string | null;
  dkimSelector: string;
  dkimRotation: Rotation;
  /** Set while the box's hostname cannot be right: `records` then leaves out the MX and SPF that would name it. */
  hostnameProblem: HostnameProblem | null;
}
interface Provider {
  detectionStatus: 'detected' | 'unknown' | 'no_nameservers' | 'error';
  detected: string;
  zone: string;
  nameservers: string[];
  error?: string;
  recordHosts: { dkim: string; returnPathMx: string; returnPathSpf: string; dmarc: string; inboundMx: string };
  providers: { domainConnect: { available: boolean; providerName: string | null } };
}

/** An on/off setting with what it does; the change is saved at once. */
function Switch({ label, hint, checked, disabled, onChange }: { label: string; hint: ComponentChildren; checked: boolean; disabled?: boolean; onChange: (on: boolean) => void }) {
  return (
    <label class="row" style={{ alignItems: 'flex-start', flexWrap: 'nowrap', gap: '12px', padding: '12px 0', borderTop: '1px solid var(--line)', cursor: disabled ? 'default' : 'pointer' }}>
      <input type="checkbox" role="switch" aria-checked={checked} checked={checked} disabled={disabled} onChange={(e) => onChange((e.currentTarget as HTMLInputElement).checked)} style={{ marginTop: '4px', width: '18px', height: '18px', accentColor: 'var(--accent)' }} />
      <span class="grow">
        <strong>{label}</strong>
        <br />
        <small class="muted">{hint}</small>
      </span>
      <Badge tone={checked ? 'good' : 'neutral'}>{checked ? 'On' : 'Off'}</Badge>
    </label>
  );
}

// ---- Domains ----

const STATUS: Record<Domain['status'], [Tone, string]> = { verified: ['good', 'Verified'], pending: ['warn', 'Not verified yet'], failed: ['bad', 'Records missing or wrong'] };
const RECORD_STATUS: Record<CheckState, [Tone, string]> = { verified: ['good', 'Found'], pending: ['neutral', 'Not checked'], failed: ['bad', 'Not right yet'] };
const RECORD_LABEL: Record<DnsRecord['record'], [string, string]> = {
  DKIM: ['DKIM', 'Signs your mail'],
  SPF: ['SPF', 'Return path: allows this box'],
  MX: ['MX', 'Return path: bounces come back'],
  DMARC: ['DMARC', 'Recommended'],
};
const INBOUND: Record<Domain['inbound']['status'], [Tone, string]> = { not_configured: ['neutral', 'Not set up'], dns_pending: ['warn', 'Waiting for the MX record'], ready: ['good', 'Receiving mail'] };

export function Domains(_: { me: Me }) {
  const { path } = useLocation();
  const id = path.split('/')[2];
  return id ? <DomainPage key={id} id={id} /> : <DomainList />;
}

function DomainList() {
  const list = useLoad(() => api<List<DomainSummary>>('/domains?limit=100'));
  const [adding, setAdding] = useState(false);
  const add = (
    <button class="button primary" onClick={() => setAdding(true)}>
      Add domain
    </button>
  );
  return (
    <Page title="Domains" actions={add}>
      <p class="muted" style={{ marginTop: '-8px' }}>
        The domains you send from and receive at. Each needs a few DNS records before mail goes out.
      </p>
      <Loaded state={list}>
        {(l) =>
          l.data.length === 0 ? (
            <div class="card">
              <Empty title="No domains yet">
                <p style={{ margin: '0 0 12px' }}>Add a domain you own, such as example.com, and publish the records it shows at your DNS provider.</p>
                {add}
              </Empty>
            </div>
          ) : (
            <table class="table">
              <thead>
                <tr>
                  <th>Domain</th>
                  <th>Status</th>
                  <th>DNS</th>
                  <th>Checks</th>
                  <th>Last checked</th>
                </tr>
              </thead>
              <tbody>
                {l.data.map((d) => (
                  <tr data-domain={d.name}>
                    <td style={{ overflowWrap: 'anywhere' }}>
                      <a href={`/domains/${d.id}`}>
                        <strong>{d.name}</strong>
                      </a>
                    </td>
                    <td>
                      <Badge tone={STATUS[d.status][0]}>{STATUS[d.status][1]}</Badge>
                    </td>
                    <td>{d.setup_status === 'complete' ? <span class="muted">Complete</span> : d.setup_status === 'checking' ? <span class="muted">Checking…</span> : <a href={`/domains/${d.id}`}>Records to publish</a>}</td>
                    <td>{d.local ? <span class="muted">Local to this machine: no DNS</span> : <CheckChips checks={d.checks} />}</td>
                    <td>
                      <At iso={d.checkedAt} never="Never" />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {adding && <AddDomain onClose={() => setAdding(false)} />}
    </Page>
  );
}

function CheckChips({ checks }: { checks: Checks }) {
  const chip = (ok: boolean, label: string) => <Badge tone={ok ? 'good' : 'neutral'}>
      {ok ? <Icon name="check" /> : '·'} {label}
    </Badge>;
  return (
    <span class="row" style={{ gap: '4px' }}>
      {chip(checks.dkim, 'DKIM')}
      {chip(checks.spf, 'SPF')}
      {chip(checks.returnPath, 'Return path')}
      {chip(checks.dmarc, 'DMARC')}
    </span>
  );
}

function AddDomain({ onClose }: { onClose: () => void }) {
  return (
    <Modal title="Add a domain" onClose={onClose}>
      <Form
        submit="Add domain"
        action={async (f) => {
          const d = await api<{ id: string; name: string }>('/domains', { body: { name: String(f.get('name') ?? '').trim() } });
          toast(`${d.name} added: publish its records next`);
          navigate(`/domains/${d.id}`);
        }}
      >
        <Field label="Domain name" hint="The domain of your From addresses, such as example.com or mail.example.com. Its bounce subdomain is set up for you.">
          <input name="name" placeholder="example.com" required autoFocus autoComplete="off" spellcheck={false} />
        </Field>
      </Form>
    </Modal>
  );
}

function DomainPage({ id }: { id: string }) {
  const domain = useLoad(() => orGone(api<Domain>(`/domains/${id}`)), [id]);
  // Slow (live DNS lookups), so it loads beside the domain rather than before it.
  const provider = useLoad(() => api<Provider>(`/dns/provider?${qs({ domain_id: id })}`), [id]);
  const [verifying, setVerifying] = useState(false);
  if (domain.error)
    return (
      <Page title="Domain">
        <BackLink href="/domains">All domains</BackLink>
        <ErrorBox message={domain.error} retry={domain.reload} />
      </Page>
    );
  if (!domain.data)
    return (
      <Page title="Domain">
        <BackLink href="/domains">All domains</BackLink>
        <Loading label="Loading the domain" />
      </Page>
    );
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
  const verify = async () => {
    setVerifying(true);
    try {
      const v = await api<{ status: Domain['status']; setup_status: Domain['setup_status']; dns_issues: DnsIssue[] }>(`/domains/${id}/verify`, { method: 'POST', body: {} });
      toast(v.status === 'verified' ? `${d.name} is verified: you can send from it` : v.setup_status === 'checking' ? 'DNS did not answer: try again in a minute' : `${v.dns_issues.length} ${v.dns_issues.length === 1 ? 'record needs' : 'records need'} attention`);
      domain.reload();
    } catch (err) {
      toast(messageOf(err));
    } finally {
      setVerifying(false);
    }
  };
  return (
    <Page
      title={d.name}
      actions={
        !d.local && (
          <button class="button primary" onClick={verify} disabled={verifying}>
            {verifying ? 'Checking DNS…' : d.status === 'verified' ? 'Check again' : 'Verify DNS'}
          </button>
        )
      }
    >
      <BackLink href="/domains">All domains</BackLink>
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
      </div>
      {d.setup_status === 'checking' && (
        <p class="card" role="status" style={{ marginTop: 0 }}>
          A DNS lookup failed for a moment, so the status is unchanged. Try again in a minute.
        </p>
      )}
      {d.dns_issues.length > 0 && <Issues issues={d.dns_issues} />}
      {!d.local && <Records domain={d} hosts={provider.data?.zone ? provider.data.recordHosts : undefined} />}
      {!d.local && d.inbound.status !== 'not_configured' && d.inbound.record && <Inbound domain={d} onChange={domain.reload} />}
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

function ProviderCard({ domain, provider }: { domain: Domain; provider: ReturnType<typeof useLoad<Provider>> }) {
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

/** The second DKIM record of a domain that also signs with ed25519 (dkim_ed25519, RFC 8463). */
const isEd25519 = (r: DnsRecord) => r.record === 'DKIM' && /\bk=ed25519\b/.test(r.value);

function hostFor(r: DnsRecord, domain: Domain, hosts: Provider['recordHosts'] | undefined) {
  if (!hosts) return null;
  if (isEd25519(r)) {
    // The provider's host names the RSA selector: the same host with the ed25519 record's selector.
    const rsa = domain.records.find((x) => x.record === 'DKIM' && !isEd25519(x));
    return rsa && hosts.dkim ? hosts.dkim.replace(rsa.name.split('.')[0], r.name.split('.')[0]) : null;
  }
  return { DKIM: hosts.dkim, SPF: hosts.returnPathSpf, MX: hosts.returnPathMx, DMARC: hosts.dmarc }[r.record];
}

/** `hosts`: what to type in the provider's form (relative to the zone), shown under the full name. */
function Records({ domain, hosts }: { domain: Domain; hosts: Provider['recordHosts'] | undefined }) {
  const narrow = useNarrow();
  const recordCell = (r: DnsRecord) => (
    <>
      <strong>{isEd25519(r) ? 'DKIM (ed25519)' : RECORD_LABEL[r.record][0]}</strong>
      <div class="muted" style={{ fontSize: '12px' }}>
        {isEd25519(r) ? 'Second signature, recommended' : RECORD_LABEL[r.record][1]}
      </div>
    </>
  );
  const status = (r: DnsRecord) => <Badge tone={RECORD_STATUS[r.status][0]}>{RECORD_STATUS[r.status][1]}</Badge>;
  const host = (r: DnsRecord) => {
    const h = hostFor(r, domain, hosts);
    return h && h !== r.name ? <div class="muted" style={{ fontSize: '12px' }}>{`Host in your DNS panel: ${h}`}</div> : null;
  };
  const copyable = (text: string) => (
    <div class="row" style={{ flexWrap: 'nowrap', alignItems: 'flex-start' }}>
      <span class="mono grow" style={{ wordBreak: 'break-all' }}>
        {text}
      </span>
      <CopyButton text={text} />
    </div>
  );
  return (
    <>
      <h2 style={{ marginTop: '8px' }}>DNS records</h2>
      <p class="muted" style={{ marginTop: '-6px' }}>
        Add these at your DNS provider. New records are usually visible within minutes, sometimes up to an hour.
      </p>
      {narrow ? (
        <div style={{ display: 'grid', gap: '10px' }} aria-label="DNS records">
          {domain.records.map((r) => (
            <div class="card" data-record={r.record} style={{ padding: '14px', display: 'grid', gap: '8px' }}>
              <div class="row">
                <span class="grow">{recordCell(r)}</span>
                <Badge tone="info">{r.type}</Badge>
                {status(r)}
              </div>
              <div>
                <small class="muted">Name</small>
                {copyable(r.name)}
                {host(r)}
              </div>
              <div>
                <small class="muted">Value{r.priority !== undefined ? ` · priority ${r.priority}` : ''}</small>
                {copyable(r.value)}
              </div>
            </div>
          ))}
        </div>
      ) : (
        <table class="table" aria-label="DNS records">
          <thead>
            <tr>
              <th>Record</th>
              <th>Type</th>
              <th>Name</th>
              <th style={{ width: '40%' }}>Value</th>
              <th>Priority</th>
              <th>Status</th>
            </tr>
          </thead>
          <tbody>
            {domain.records.map((r) => (
              <tr data-record={r.record}>
                <td>{recordCell(r)}</td>
                <td>
                  <Badge tone="info">{r.type}</Badge>
                </td>
                <td>
                  {copyable(r.name)}
                  {host(r)}
                </td>
                <td>{copyable(r.value)}</td>
                <td>{r.priority ?? <span class="muted">—</span>}</td>
                <td style={{ whiteSpace: 'nowrap' }}>{status(r)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function InboundCard({ domain, onChange }: { domain: Domain; onChange: () => void }) {
  const [busy, setBusy] = useState(false);
  const s = domain.inbound.status;
  const setup = async () => {
    setBusy(true);
    try {
      await api(`/domains/${domain.id}/inbound/setup`, { method: 'POST', body: {} });
      toast('Publish the MX record below to receive mail');
      onChange();
    } catch (err) {
      toast(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="card" data-testid="inbound-card">
      <h3 style={{ marginTop: 0 }}>Receiving</h3>
      <Badge tone={INBOUND[s][0]}>{INBOUND[s][1]}</Badge>
      <p class="muted">
        {s === 'not_configured'
          ? `Receive mail at addresses @${domain.name} in this box.`
          : s === 'ready'
            ? `Mail to @${domain.name} arrives here.`
            : domain.hostnameProblem
              ? "The MX record to publish is shown once the box's hostname is set (above)."
              : 'Publish the MX record below, then check it.'}
      </p>
      {s === 'not_configured' && domain.hostnameProblem ? (
        <p class="muted" style={{ margin: 0 }}>
          Set the box's hostname first (above): the MX record to publish names it.
        </p>
      ) : s === 'not_configured' ? (
        <button class="button" onClick={setup} disabled={busy}>
          {busy ? 'Setting up…' : 'Set up inbound'}
        </button>
      ) : (
        <a href="/inboxes">Manage inboxes →</a>
      )}
    </div>
  );
}

function Inbound({ domain, onChange }: { domain: Domain; onChange: () => void }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ status: string; message?: string; found?: string[] } | null>(null);
  const record = domain.inbound.record!;
  const [priority, ...rest] = record.value.split(' ');
  const server = rest.join(' ');
  const issue = result ? (result.message ? { message: result.message, found: result.found ?? [] } : null) : domain.inbound.issue;
  const check = async () => {
    setBusy(true);
    try {
      const r = await api<{ status: string; message?: string; found?: string[] }>(`/domains/${domain.id}/inbound/verify`, { method: 'POST', body: {} });
      setResult(r);
      toast(r.status === 'ready' ? `Mail to @${domain.name} now arrives here` : 'The MX record is not there yet');
      onChange();
    } catch (err) {
      toast(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <h2 style={{ marginTop: '28px' }}>Receiving mail</h2>
      <p class="muted" style={{ marginTop: '-6px' }}>
        Point the domain's MX at this box. If {domain.name} already receives mail elsewhere, this moves all of it here.
      </p>
      <div class="card" data-testid="inbound-mx" style={{ display: 'grid', gap: '12px' }}>
        <div class="row">
          <Badge tone="info">MX</Badge>
          <Badge tone={INBOUND[domain.inbound.status][0]}>{INBOUND[domain.inbound.status][1]}</Badge>
          <span class="grow" />
          <button class="button small" onClick={check} disabled={busy}>
            {busy ? 'Checking…' : 'Check MX'}
          </button>
        </div>
        <div class="split">
          <div>
            <small class="muted">Name</small>
            <div class="row" style={{ flexWrap: 'nowrap' }}>
              <span class="mono grow" style={{ wordBreak: 'break-all' }}>
                {record.name}
              </span>
              <CopyButton text={record.name} />
            </div>
          </div>
          <div>
            <small class="muted">Mail server · priority {priority}</small>
            <div class="row" style={{ flexWrap: 'nowrap' }}>
              <span class="mono grow" style={{ wordBreak: 'break-all' }}>
                {server}
              </span>
              <CopyButton text={server} />
            </div>
          </div>
        </div>
        {issue && domain.inbound.status !== 'ready' && (
          <p class="muted" role="status" style={{ margin: 0 }}>
            {issue.message}
            {issue.found.length > 0 && (
              <>
                {' '}
                Found: <span class="mono">{issue.found.join(', ')}</span>
              </>
            )}
          </p>
        )}
      </div>
    </>
  );
}

type SwitchField = 'marketing' | 'open_tracking' | 'click_tracking';

function Options({ domain, onChange }: { domain: Domain; onChange: () => void }) {
  // A controlled checkbox snaps back to its prop on re-render, so the new value is shown until the box confirms it.
  const [shown, setShown] = useState<Partial<Record<SwitchField, boolean>>>({});
  const [saving, setSaving] = useState<SwitchField | null>(null);
  useEffect(() => setShown({}), [domain]);
  const value = (field: SwitchField) => shown[field] ?? domain[field];
  const set = async (field: SwitchField, on: boolean) => {
    setSaving(field);
    setShown((v) => ({ ...v, [field]: on }));
    try {
      await api(`/domains/${domain.id}`, { method: 'PATCH', body: { [field]: on } });
      toast('Saved');
      onChange();
    } catch (err) {
      setShown((v) => ({ ...v, [field]: !on }));
      toast(messageOf(err));
    } finally {
      setSaving(null);
    }
  };
  return (
    <>
      <h2 style={{ marginTop: '28px' }}>Sending options</h2>
      <div class="card" style={{ paddingTop: '6px', paddingBottom: '6px' }}>
        <Switch
          label="Marketing mail"
          checked={value('marketing')}
          disabled={saving !== null || (!value('marketing') && domain.status !== 'verified')}
          onChange={(on) => set('marketing', on)}
          hint={domain.status === 'verified' || domain.marketing ? 'Allows message_class "marketing": each recipient gets one-click unsubscribe headers and links.' : 'Needs a verified domain first.'}
        />
        <Switch label="Open tracking" checked={value('open_tracking')} disabled={saving !== null} onChange={(on) => set('open_tracking', on)} hint="Adds an invisible image to HTML mail and records an opened event when it loads. Image proxies make this a signal, not proof." />
        <Switch label="Click tracking" checked={value('click_tracking')} disabled={saving !== null} onChange={(on) => set('click_tracking', on)} hint="Sends links in HTML mail through this box to record a clicked event. The text part is never changed." />
      </div>
    </>
  );
}
