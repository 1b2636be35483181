// Receiving mail on a domain: the card that sets inbound up (or says what waits for it), and the MX record to
// publish with its check, saying what DNS answered while it is not there yet.
import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { useAction } from '../../components/action.ts';
import { Badge, toast } from '../../components/feedback.tsx';
import { CopyButton } from '../../components/forms.tsx';
import { INBOUND, type Domain } from './model.ts';

export function InboundCard({ domain, onChange }: { domain: Domain; onChange: () => void }) {
  const { busy, run } = useAction();
  const s = domain.inbound.status;
  const setup = () =>
    run(async () => {
      await api(`/domains/${domain.id}/inbound/setup`, { method: 'POST', body: {} });
      toast('Publish the MX record below to receive mail');
      onChange();
    });
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

type Check = { status: string; message?: string; found?: string[] };

export function Inbound({ domain, onChange }: { domain: Domain; onChange: () => void }) {
  const { busy, run } = useAction();
  const [result, setResult] = useState<Check | null>(null);
  const record = domain.inbound.record!;
  const [priority, ...rest] = record.value.split(' ');
  const server = rest.join(' ');
  const issue = result ? (result.message ? { message: result.message, found: result.found ?? [] } : null) : domain.inbound.issue;
  const check = () =>
    run(async () => {
      const r = await api<Check>(`/domains/${domain.id}/inbound/verify`, { method: 'POST', body: {} });
      setResult(r);
      toast(r.status === 'ready' ? `Mail to @${domain.name} now arrives here` : 'The MX record is not there yet');
      onChange();
    });
  const copyable = (text: string) => (
    <div class="row" style={{ flexWrap: 'nowrap' }}>
      <span class="mono grow" style={{ wordBreak: 'break-all' }}>
        {text}
      </span>
      <CopyButton text={text} />
    </div>
  );
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
            {copyable(record.name)}
          </div>
          <div>
            <small class="muted">Mail server · priority {priority}</small>
            {copyable(server)}
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
