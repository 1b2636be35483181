// The Overview's health checks (GET /doctor): what receivers look up before they trust this box's mail, by
// the box and by domain, the open findings first with their fixes and the passing ones folded away.
import { Badge, Empty, ErrorBox, Loading } from '../../components/feedback.tsx';
import { when } from '../../components/format.tsx';
import type { Load } from '../../components/load.ts';
import type { Finding, Health } from './model.ts';

const FINDING: Record<Finding['status'], { tone: 'good' | 'bad' | 'warn'; label: string }> = {
  ok: { tone: 'good', label: 'OK' },
  problem: { tone: 'bad', label: 'Fix' },
  pending: { tone: 'warn', label: 'Waiting' },
};

export function Doctor({ state }: { state: Load<Health> }) {
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
        What receivers look up before they trust this box's mail: its address and reverse DNS, its ACME certificates when acme is on, and each domain's DKIM, SPF, bounce MX and DMARC records.
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
