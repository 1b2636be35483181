// A domain's DMARC reports page (/domains/:id/dmarc): "who sends as you" over the last 30 days, a source per
// row with its PTR name, volume, alignment and what receivers did with its mail, then the latest reports.
import { useState } from 'preact/hooks';
import { api, qs, type List } from '../../api.ts';
import { Badge, Empty, Loaded } from '../../components/feedback.tsx';
import { At } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { BackLink, Page } from '../../components/page.tsx';
import { Pager, Rows } from '../../components/table.tsx';
import { percent, type DmarcReport, type DmarcSource, type DmarcSummary } from './report-model.ts';

const STEP = 50;

export function DmarcPage({ id }: { id: string }) {
  const [offset, setOffset] = useState(0);
  const summary = useLoad(() => api<DmarcSummary>(`/domains/${id}/dmarc-reports/summary?${qs({ limit: String(STEP), offset: String(offset) })}`), [id, offset]);
  const reports = useLoad(() => api<List<DmarcReport>>(`/domains/${id}/dmarc-reports?limit=20`), [id]);
  return (
    <Page title={summary.data ? `DMARC reports for ${summary.data.domain}` : 'DMARC reports'}>
      <BackLink href={`/domains/${id}`}>The domain</BackLink>
      <Loaded state={summary}>
        {(s) => (
          <>
            <p class="muted" data-testid="dmarc-totals">
              {s.totals.messages} messages from {s.totals.sources} {s.totals.sources === 1 ? 'source' : 'sources'} in {s.totals.reports} {s.totals.reports === 1 ? 'report' : 'reports'} since <At iso={s.totals.after} />; {s.totals.failed} failed DMARC.
            </p>
            <h2>Who sends as you</h2>
            <Sources sources={s.data} />
            <Pager offset={offset} step={STEP} shown={s.count} hasMore={s.hasMore} labels={['Previous', 'Next']} go={setOffset} />
          </>
        )}
      </Loaded>
      <h2 style={{ marginTop: '28px' }}>Latest reports</h2>
      <Loaded state={reports}>{(list) => <Reports reports={list.data} />}</Loaded>
    </Page>
  );
}

function Sources({ sources }: { sources: DmarcSource[] }) {
  return (
    <Rows
      rows={sources}
      label="Sources"
      empty={
        <Empty title="No reports yet">
          Receivers send aggregate reports daily once your DMARC record names this box's report address (rua). They appear here as they arrive.
        </Empty>
      }
      head={
        <>
          <th>Source</th>
          <th>Messages</th>
          <th>DKIM aligned</th>
          <th>SPF aligned</th>
          <th>DMARC</th>
          <th>Receivers did</th>
          <th>Reported by</th>
        </>
      }
    >
      {(s) => (
        <tr data-testid="dmarc-source">
          <td>
            <span class="mono">{s.sourceIp}</span>
            <div class="muted" style={{ fontSize: '13px' }}>{s.ptr ?? 'no PTR name'}</div>
          </td>
          <td>{s.messages}</td>
          <td>{percent(s.dkimAligned)}</td>
          <td>{percent(s.spfAligned)}</td>
          <td>{s.failed === 0 ? <Badge tone="good">pass</Badge> : s.passed === 0 ? <Badge tone="bad">fail</Badge> : <Badge tone="warn">{s.failed} failed</Badge>}</td>
          <td class="muted">{dispositions(s.dispositions)}</td>
          <td class="muted">{s.reporters.join(', ')}</td>
        </tr>
      )}
    </Rows>
  );
}

const dispositions = (d: DmarcSource['dispositions']) =>
  (['none', 'quarantine', 'reject'] as const)
    .filter((k) => d[k] > 0)
    .map((k) => `${k === 'none' ? 'delivered' : k === 'quarantine' ? 'quarantined' : 'rejected'} ${d[k]}`)
    .join(' · ');

function Reports({ reports }: { reports: DmarcReport[] }) {
  return (
    <Rows
      rows={reports}
      label="Reports"
      empty={<p class="muted" style={{ margin: 0 }}>None received yet.</p>}
      head={
        <>
          <th>Reporter</th>
          <th>Period</th>
          <th>Messages</th>
          <th>Failed</th>
          <th>Policy</th>
        </>
      }
    >
      {(r) => (
        <tr data-testid="dmarc-report">
          <td>
            {r.orgName} {!r.authenticated && <span class="muted" title="The report's own mail did not pass DMARC: anyone could have sent it">(sender unverified)</span>}
            <div class="muted mono" style={{ fontSize: '12px' }}>{r.reportId}</div>
          </td>
          <td>
            <At iso={r.begin} /> – <At iso={r.end} />
          </td>
          <td>{r.messages}</td>
          <td>{r.failed > 0 ? <Badge tone="bad">{r.failed}</Badge> : 0}</td>
          <td class="mono">p={r.policy.p}</td>
        </tr>
      )}
    </Rows>
  );
}
