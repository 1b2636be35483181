// MTA-STS on a receiving domain's page: the mode of the policy the box serves (RFC 8461), whether senders can
// fetch it, and the switch between testing and enforce, asked first before enforce since a sender that honours
// the policy then refuses to deliver when TLS to the box fails. The records themselves are in records.tsx.
import { api } from '../../api.ts';
import { useAction } from '../../components/action.ts';
import { Badge, toast } from '../../components/feedback.tsx';
import { ConfirmButton } from '../../components/modal.tsx';
import { RECORD_STATUS, type Domain, type MtaSts } from './model.ts';

const MODE: Record<MtaSts['mode'], [('good' | 'warn'), string, string]> = {
  testing: ['warn', 'Testing', 'Senders that honour MTA-STS report TLS failures to this box but still deliver.'],
  enforce: ['good', 'Enforce', 'Senders that honour MTA-STS deliver only over TLS with a valid certificate for this box.'],
};

export function MtaStsSection({ domain, onChange }: { domain: Domain; onChange: () => void }) {
  const { busy, run } = useAction();
  const policy = domain.mtaSts!;
  const switchTo = (mode: MtaSts['mode']) =>
    api<Domain>(`/domains/${domain.id}`, { method: 'PATCH', body: { mta_sts_mode: mode } }).then((d) => {
      toast(`MTA-STS is now ${mode}: publish the new MTA-STS record (id ${d.mtaSts?.policyId}) so senders fetch the policy again`);
      onChange();
    });
  const [tone, label, meaning] = MODE[policy.mode];
  return (
    <>
      <h2 style={{ marginTop: '28px' }}>Transport security (MTA-STS)</h2>
      <div class="card" data-testid="mta-sts" style={{ display: 'grid', gap: '10px' }}>
        <div class="row">
          <Badge tone={tone}>{label}</Badge>
          <Badge tone={RECORD_STATUS[policy.status][0]}>{policy.status === 'verified' ? 'Policy reachable' : policy.status === 'failed' ? 'Policy not reachable' : 'Policy not checked'}</Badge>
          <span class="grow" />
          {policy.mode === 'testing' ? (
            <ConfirmButton label="Switch to enforce" title="Enforce MTA-STS?" confirm="Enforce" danger={false} action={() => switchTo('enforce')}>
              Senders that honour MTA-STS will refuse to deliver if TLS to this box fails. Switch once the checks pass and the TLS reports show no failures; then publish the new MTA-STS record shown above.
            </ConfirmButton>
          ) : (
            <button class="button small" disabled={busy} onClick={() => run(() => switchTo('testing'))}>
              {busy ? 'Switching…' : 'Back to testing'}
            </button>
          )}
        </div>
        <p class="muted" style={{ margin: 0 }}>
          {meaning} {policy.served ? (
            <>
              The policy is at <a href={policy.policyUrl} rel="noreferrer" target="_blank" class="mono">{policy.policyUrl}</a> (id <span class="mono">{policy.policyId}</span>, kept by senders for {Math.round(policy.maxAge / 86400)} days).
            </>
          ) : (
            'The box serves the policy once the MX record above reaches it.'
          )}
        </p>
      </div>
    </>
  );
}
