// Overview: how the workspace stands this month and what needs attention. Usage against the held plans and
// reputation (GET /account, with "Resume sending" when paused), mail over 7/30/90 days (GET /analytics, a
// uPlot chart), the outbound queue (GET /queue) and doctor's DNS findings (GET /doctor). Each part loads alone.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import type { Me } from '../../session.ts';
import { api } from '../../api.ts';
import { Badge, Empty, ErrorBox, Loaded, Loading, toast } from '../../components/feedback.tsx';
import { bytes, when } from '../../components/format.tsx';
import { messageOf, useLoad } from '../../components/load.ts';
import { Page } from '../../components/page.tsx';
import { useLocation } from '../../router.ts';

export interface Usage {
  periodStart: string;
  periodEnd: string;
  recipients: { used: number; limit: number | null };
  attachmentBytes: { used: number; limit: number | null };
}
interface Reputation {
  windowDays: number;
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  bounceRate: number | null;
  complaintRate: number | null;
  status: 'healthy' | 'at_risk' | 'paused';
  thresholds: { minSent: number; bounceAtRisk: number; bouncePause: number; complaintAtRisk: number; complaintPause: number };
}
export interface Plan {
  key: string;
  tier: string;
  messageClass: 'transactional' | 'marketing';
  interval: 'monthly' | 'yearly';
  price: number;
  currency: string;
  limits: { recipients: number | null; attachmentBytes: number | null };
}
export interface Subscription {
  id: string | null;
  planKey: string;
  messageClass: 'transactional' | 'marketing';
  tier: string;
  state: string;
  provider: string;
  periodStart: string | null;
  periodEnd: string | null;
}
export interface Account {
  usage: Usage;
  access: { tier: string; sendingPaused: boolean; pausedAt: string | null; pauseReason: string | null };
  reputation: Reputation;
  billing: { provider: 'manual' | 'stripe'; subscriptions: Subscription[] };
  plans: Plan[];
}
interface Analytics {
  days: number;
  metrics: { sent: number; received: number; bounced: number; blocked: number; delivered: number; opened: number; clicks: number; complaints: number };
  timeline: Array<{ date: string; sent: number; received: number }>;
}
interface QueueState {
  counts: { queued: number; sending: number; deferred: number };
  oldestDeferred: { emailId: string; recipient: string; since: string | null; lastResponse: string | null } | null;
}
interface Finding {
  area: 'box' | 'domain';
  subject: string;
  check: string;
  status: 'ok' | 'problem' | 'pending';
  message: string;
  fix: string | null;
}

const WINDOWS = [7, 30, 90] as const;
const count = (n: number) => n.toLocaleString();
const percent = (rate: number) => `${(rate * 100).toFixed(rate < 0.01 ? 2 : 1)} %`;
const day = (iso: string) => new Date(iso).toLocaleDateString([], { month: 'short', day: 'numeric', timeZone: 'UTC' });

export function Overview(_: { me: Me }) {
  const { query } = useLocation();
  const days = WINDOWS.find((d) => String(d) === query.get('days')) ?? 30;
  const account = useLoad(() => api<Account>('/account'));
  const queue = useLoad(() => api<QueueState>('/queue'));
  const doctor = useLoad(() => api<{ findings: Finding[]; problems: number; checkedAt: string }>('/doctor'));
  const refresh = () => [account, queue, doctor].forEach((s) => s.reload());
  return (
    <Page
      title="Overview"
      actions={
        <button class="button" onClick={refresh}>
          Refresh
        </button>
      }
    >
      {account.data?.access.sendingPaused && <PausedBanner access={account.data.access} reputation={account.data.reputation} onResumed={account.reload} />}
      <div class="cards">
        {account.error ? (
          <div class="card" style={{ gridColumn: '1 / -1' }}>
            <ErrorBox message={account.error} retry={account.reload} />
          </div>
        ) : !account.data ? (
          <div class="card">
            <Loading label="Loading usage" />
          </div>
        ) : (
          <>
            <UsageMeter label="Recipients this month" used={account.data.usage.recipients.used} limit={account.data.usage.recipients.limit} format={count} resets={account.data.usage.periodEnd} />
            <UsageMeter label="Attachments this month" used={account.data.usage.attachmentBytes.used} limit={account.data.usage.attachmentBytes.limit} format={bytes} resets={account.data.usage.periodEnd} />
            <ReputationCard reputation={account.data.reputation} />
          </>
        )}
        <QueueCard state={queue} />
      </div>
      <Activity days={days} />
      <Doctor state={doctor} />
    </Page>
  );
}

/** One limit of the plans held: how much of it this month has used. Billing shows the same meters. */
export function UsageMeter({ label, used, limit, format, resets }: { label: string; used: number; limit: number | null; format: (n: number) => string; resets: string }) {
  const share = limit === null ? null : limit === 0 ? 1 : Math.min(1, used / limit);
  const tone = share === null || share < 0.8 ? 'var(--accent)' : share < 1 ? 'var(--warn)' : 'var(--bad)';
  return (
    <div class="card" aria-label={label}>
      <div class="muted">{label}</div>
      <div class="stat">{format(used)}</div>
      <div class="muted" style={{ marginBottom: '10px' }}>
        {limit === null ? 'Unlimited on your plan' : `of ${format(limit)} · resets ${day(resets)}`}
      </div>
      {share !== null && (
        <div class="progress" role="progressbar" aria-label={`${label}: share of the limit used`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(share * 100)}>
          <div style={{ width: `${Math.max(share * 100, used > 0 ? 2 : 0)}%`, background: tone }} />
        </div>
      )}
    </div>
  );
}

function PausedBanner({ access, reputation, onResumed }: { access: Account['access']; reputation: Reputation; onResumed: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const resume = async () => {
    setBusy(true);
    setError(null);
    try {
      await api('/account/sending/resume', { method: 'POST', body: {} });
      toast('Sending resumed');
      onResumed();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
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
          {error && (
            <p class="form-error" role="alert">
              {error}
            </p>
          )}
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

function ReputationCard({ reputation: r }: { reputation: Reputation }) {
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

function QueueCard({ state }: { state: ReturnType<typeof useLoad<QueueState>> }) {
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

function Activity({ days }: { days: number }) {
  const analytics = useLoad(() => api<Analytics>(`/analytics?days=${days}`), [days]);
  return (
    <div class="card" style={{ marginBottom: '20px' }} aria-label="Activity">
      <div class="row" style={{ justifyContent: 'space-between', marginBottom: '4px' }}>
        <h2 style={{ margin: 0 }}>Activity</h2>
        <nav class="tabs" aria-label="Window" style={{ marginBottom: 0, borderBottom: 0 }}>
          {WINDOWS.map((d) => (
            <a href={`/overview?days=${d}`} class={d === days ? 'active' : ''} aria-current={d === days ? 'page' : undefined}>
              {d} days
            </a>
          ))}
        </nav>
      </div>
      <Loaded state={analytics}>
        {(a) => {
          const m = a.metrics;
          const totals: Array<[string, number, string?]> = [
            ['Sent', m.sent],
            ['Delivered', m.delivered],
            ['Bounced', m.bounced, m.bounced > 0 ? 'var(--bad)' : undefined],
            ['Blocked', m.blocked],
            ['Received', m.received],
            ['Opened', m.opened],
            ['Clicks', m.clicks],
            ['Complaints', m.complaints, m.complaints > 0 ? 'var(--bad)' : undefined],
          ];
          const quiet = a.timeline.every((d) => d.sent === 0 && d.received === 0);
          return (
            <>
              <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(96px, 1fr))', gap: '10px', margin: '12px 0 16px' }}>
                {totals.map(([label, n, color]) => (
                  <div>
                    <div style={{ fontSize: '20px', fontWeight: 650, color }}>{count(n)}</div>
                    <div class="muted" style={{ fontSize: '12px' }}>
                      {label}
                    </div>
                  </div>
                ))}
              </div>
              {quiet ? (
                <Empty title={`No mail in the last ${a.days} days`}>
                  Send with the API or SMTP (see <a href="/developers">Developers</a>) and each day shows here.
                </Empty>
              ) : (
                <Timeline timeline={a.timeline} />
              )}
            </>
          );
        }}
      </Loaded>
    </div>
  );
}

const HEIGHT = 240;

/** Sent and received per UTC day, drawn by uPlot on a canvas that follows the card's width. */
function Timeline({ timeline }: { timeline: Analytics['timeline'] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const css = getComputedStyle(document.documentElement);
    const color = (name: string) => css.getPropertyValue(name).trim();
    const [accent, good, muted, line] = [color('--accent'), color('--good'), color('--muted'), color('--line')];
    const axis: uPlot.Axis = { stroke: muted, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 }, font: '12px system-ui, sans-serif' };
    const series = (label: string, stroke: string): uPlot.Series => ({ label, stroke, width: 2, fill: `${stroke}1f`, points: { show: timeline.length <= 31, size: 5 }, value: (_u, v) => (v === null ? '—' : count(v)) });
    const plot = new uPlot(
      {
        width: Math.max(el.clientWidth, 200),
        height: HEIGHT,
        // The days are UTC days: shown as such whatever the browser's zone.
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.15))] } },
        axes: [
          // Whole days only: uPlot would otherwise tick every few hours over a week.
          { ...axis, incrs: [1, 2, 7, 14, 28].map((n) => n * 86_400), values: (_u, splits) => splits.map((s) => day(new Date(s * 1000).toISOString())) },
          { ...axis, size: 48, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 250_000, 500_000, 1_000_000], values: (_u, splits) => splits.map(count) },
        ],
        series: [{ label: 'Day', value: (_u, v) => (v === null ? '' : day(new Date(v * 1000).toISOString())) }, series('Sent', accent), series('Received', good)],
        cursor: { drag: { x: false, y: false } },
      },
      [timeline.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000), timeline.map((d) => d.sent), timeline.map((d) => d.received)],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 200), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [timeline]);
  return <div class="chart" ref={box} role="figure" aria-label={`Sent and received mail per day over ${timeline.length} days`} />;
}

const FINDING: Record<Finding['status'], { tone: 'good' | 'bad' | 'warn'; label: string }> = {
  ok: { tone: 'good', label: 'OK' },
  problem: { tone: 'bad', label: 'Fix' },
  pending: { tone: 'warn', label: 'Waiting' },
};

function Doctor({ state }: { state: ReturnType<typeof useLoad<{ findings: Finding[]; problems: number; checkedAt: string }>> }) {
  return (
    <div class="card" aria-label="Health checks">
      <div class="row" style={{ marginBottom: '8px' }}>
        <h2 class="grow" style={{ margin: 0 }}>
          Health checks
        </h2>
        {state.data && <span class="muted" style={{ fontSize: '13px' }}>checked {when(state.data.checkedAt)}</span>}
        <button class="button small" onClick={state.reload} disabled={state.loading}>
          Check again
        </button>
      </div>
      <p class="muted" style={{ margin: '0 0 8px', fontSize: '13px' }}>
        What receivers look up before they trust this box's mail: its address and reverse DNS, and each domain's DKIM, SPF, bounce MX and DMARC records.
      </p>
      {state.error ? (
        <ErrorBox message={state.error} retry={state.reload} />
      ) : !state.data || state.loading ? (
        <Loading label="Asking DNS" />
      ) : (
        <Findings findings={state.data.findings} />
      )}
    </div>
  );
}

function Findings({ findings }: { findings: Finding[] }) {
  const groups = new Map<string, Finding[]>();
  for (const f of findings) {
    const name = f.area === 'box' ? `This box (${f.subject})` : f.subject;
    groups.set(name, [...(groups.get(name) ?? []), f]);
  }
  const domains = findings.some((f) => f.area === 'domain');
  return (
    <>
      {[...groups].map(([name, list]) => {
        const open = list.filter((f) => f.status !== 'ok');
        const passing = list.filter((f) => f.status === 'ok');
        return (
          <section aria-label={name}>
            <h3 class="row">
              <span class="grow">{name}</span>
              {open.length === 0 ? <Badge tone="good">All good</Badge> : <Badge tone={open.some((f) => f.status === 'problem') ? 'bad' : 'warn'}>{`${open.length} to look at`}</Badge>}
            </h3>
            <ul class="findings">
              {open.map((f) => (
                <FindingRow finding={f} />
              ))}
            </ul>
            {passing.length > 0 && (
              <details>
                <summary class="muted" style={{ cursor: 'pointer', fontSize: '13px' }}>
                  {passing.length} passing
                </summary>
                <ul class="findings">
                  {passing.map((f) => (
                    <FindingRow finding={f} />
                  ))}
                </ul>
              </details>
            )}
          </section>
        );
      })}
      {!domains && (
        <Empty title="No domains yet">
          <a href="/domains">Add a domain</a> to check its records here.
        </Empty>
      )}
    </>
  );
}

function FindingRow({ finding: f }: { finding: Finding }) {
  const badge = FINDING[f.status];
  return (
    <li style={{ display: 'grid', gridTemplateColumns: 'auto 1fr', gap: '4px 10px', alignItems: 'baseline' }}>
      <Badge tone={badge.tone}>{badge.label}</Badge>
      <span style={{ wordBreak: 'break-word' }}>{f.message}</span>
      {f.fix && (
        <span class="muted mono" style={{ gridColumn: '2', overflowWrap: 'anywhere' }}>
          {f.fix}
        </span>
      )}
    </li>
  );
}
