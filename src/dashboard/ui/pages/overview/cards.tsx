// The Overview's cards of what needs attention now: sending paused (why, and Resume sending), the reputation
// behind it (bounce and complaint rates against their limits), and the outbound queue with its oldest deferral.
import { api } from '../../api.ts';
import { useAction } from '../../components/action.ts';
import { Badge, ErrorBox, Loading, toast } from '../../components/feedback.tsx';
import { FormError } from '../../components/forms.tsx';
import { when } from '../../components/format.tsx';
import type { Load } from '../../components/load.ts';
import { count, percent, type Account, type QueueState, type Reputation } from './model.ts';

export function PausedBanner({ access, reputation, onResumed }: { access: Account['access']; reputation: Reputation; onResumed: () => void }) {
  const { busy, error, run } = useAction('inline');
  const resume = () =>
    run(async () => {
      await api('/account/sending/resume', { method: 'POST', body: {} });
      toast('Sending resumed');
      onResumed();
    });
  return (
    <div class="card" role="alert" style={{ borderColor: 'var(--bad)', marginBottom: '20px' }}>
      <div class="row">
        <div style={{ flex: '1 1 280px' }}>
          <h2 style={{ color: 'var(--bad)', margin: '0 0 4px' }}>Sending is paused</h2>
          <div>Every send is refused until you resume it{access.pausedAt ? ` (paused ${when(access.pausedAt)})` : ''}.</div>
          <div>
            <span class="muted">Cause:</span> {access.pauseReason || 'bounces or complaints over the limit'}
          </div>
          <div class="muted" style={{ fontSize: '13px', marginTop: '4px' }}>
            Fix the cause first: remove the addresses that bounce, and stop mailing people who did not ask for it. Only days after the resume count toward a new pause (bounce rate pauses at {percent(reputation.thresholds.bouncePause)}).
          </div>
          <FormError error={error} />
        </div>
        <button class="button primary" onClick={resume} disabled={busy}>
          {busy ? 'Resuming…' : 'Resume sending'}
        </button>
      </div>
    </div>
  );
}

const REPUTATION: Record<Reputation['status'], { tone: 'good' | 'warn' | 'bad'; label: string }> = {
  healthy: { tone: 'good', label: 'Healthy' },
  at_risk: { tone: 'warn', label: 'At risk' },
  paused: { tone: 'bad', label: 'Paused' },
};

export function ReputationCard({ reputation: r }: { reputation: Reputation }) {
  const status = REPUTATION[r.status];
  const rate = (value: number | null, atRisk: number, pause: number) => (
    <span style={{ color: value === null ? undefined : value >= pause ? 'var(--bad)' : value >= atRisk ? 'var(--warn)' : undefined }}>{value === null ? '—' : percent(value)}</span>
  );
  return (
    <div class="card" aria-label="Reputation">
      <div class="row">
        <span class="muted grow">Reputation</span>
        <Badge tone={status.tone}>{status.label}</Badge>
      </div>
      <div class="stat">{count(r.sent)}</div>
      <div class="muted" style={{ marginBottom: '8px' }}>
        sent in {r.windowDays} days
      </div>
      {r.bounceRate === null ? (
        <div class="muted" style={{ fontSize: '13px' }}>
          Rates are judged from {count(r.thresholds.minSent)} recipients in {r.windowDays} days.
        </div>
      ) : (
        <div style={{ fontSize: '13px' }}>
          <div>
            Bounces {rate(r.bounceRate, r.thresholds.bounceAtRisk, r.thresholds.bouncePause)} <span class="muted">· pauses at {percent(r.thresholds.bouncePause)}</span>
          </div>
          <div>
            Complaints {rate(r.complaintRate, r.thresholds.complaintAtRisk, r.thresholds.complaintPause)} <span class="muted">· pauses at {percent(r.thresholds.complaintPause)}</span>
          </div>
        </div>
      )}
    </div>
  );
}

export function QueueCard({ state }: { state: Load<QueueState> }) {
  return (
    <div class="card" aria-label="Outbound queue">
      <div class="muted">Outbound queue</div>
      {state.error ? (
        <ErrorBox message={state.error} retry={state.reload} />
      ) : !state.data ? (
        <Loading />
      ) : (
        <>
          <div class="row" style={{ gap: '18px', margin: '4px 0 8px' }}>
            {(['queued', 'sending', 'deferred'] as const).map((s) => (
              <div>
                <div class="stat" style={{ color: s === 'deferred' && state.data!.counts.deferred > 0 ? 'var(--warn)' : undefined }}>{count(state.data!.counts[s])}</div>
                <div class="muted" style={{ fontSize: '12px' }}>
                  {s}
                </div>
              </div>
            ))}
          </div>
          {state.data.oldestDeferred ? (
            <div style={{ fontSize: '13px' }}>
              Oldest deferred: <a href={`/mail/sent/${state.data.oldestDeferred.emailId}`}>{state.data.oldestDeferred.recipient}</a>
              {state.data.oldestDeferred.since && <span class="muted"> since {when(state.data.oldestDeferred.since)}</span>}
              {state.data.oldestDeferred.lastResponse && (
                <div class="muted mono" style={{ wordBreak: 'break-word' }}>
                  {state.data.oldestDeferred.lastResponse}
                </div>
              )}
            </div>
          ) : (
            <div class="muted" style={{ fontSize: '13px' }}>
              {state.data.counts.queued + state.data.counts.sending === 0 ? 'Nothing waiting: every message has left the box.' : 'Nothing deferred.'}
            </div>
          )}
        </>
      )}
    </div>
  );
}
