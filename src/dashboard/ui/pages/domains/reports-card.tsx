// The domain page's report cards: DMARC (the last 30 days in one line, and the way to the DMARC reports page)
// and TLS (who reported, sessions that succeeded and failed, failure types, over the latest reports).
import { api, type List } from '../../api.ts';
import { Badge } from '../../components/feedback.tsx';
import { useLoad } from '../../components/load.ts';
import type { DmarcSummary, TlsReport } from './report-model.ts';

export function DmarcCard({ domainId }: { domainId: string }) {
  const summary = useLoad(() => api<DmarcSummary>(`/domains/${domainId}/dmarc-reports/summary?limit=1`), [domainId]);
  const t = summary.data?.totals;
  return (
    <div class="card" data-testid="dmarc-card">
      <h3 style={{ marginTop: 0 }}>DMARC reports</h3>
      {t && t.reports > 0 ? (
        <>
          <Badge tone={t.failed === 0 ? 'good' : 'warn'}>{t.failed === 0 ? 'All aligned' : `${t.failed} failed`}</Badge>
          <p class="muted">
            {t.messages} messages from {t.sources} {t.sources === 1 ? 'source' : 'sources'} in the last 30 days.
          </p>
        </>
      ) : (
        <p class="muted">{summary.error ?? (t ? 'No aggregate reports received yet.' : 'Loading…')}</p>
      )}
      <a href={`/domains/${domainId}/dmarc`}>Who sends as you</a>
    </div>
  );
}

export function TlsCard({ domainId }: { domainId: string }) {
  const reports = useLoad(() => api<List<TlsReport>>(`/domains/${domainId}/tls-reports?limit=20`), [domainId]);
  const list = reports.data?.data ?? [];
  const successful = list.reduce((n, r) => n + r.successful, 0);
  const failed = list.reduce((n, r) => n + r.failed, 0);
  const reporters = [...new Set(list.map((r) => r.orgName))];
  const types = new Map<string, number>();
  for (const f of list.flatMap((r) => r.policies.flatMap((p) => p.failures))) types.set(f.resultType, (types.get(f.resultType) ?? 0) + f.failedSessions);
  return (
    <div class="card" data-testid="tls-card">
      <h3 style={{ marginTop: 0 }}>TLS reports</h3>
      {list.length === 0 ? (
        <p class="muted" style={{ marginBottom: 0 }}>
          {reports.error ?? (reports.data ? 'No TLS reports received yet. Senders that use MTA-STS or DANE send them daily.' : 'Loading…')}
        </p>
      ) : (
        <>
          <Badge tone={failed === 0 ? 'good' : 'warn'}>{failed === 0 ? 'No failures' : `${failed} failed sessions`}</Badge>
          <p class="muted">
            {successful} sessions succeeded in the latest {list.length} {list.length === 1 ? 'report' : 'reports'}, from {reporters.join(', ')}.
          </p>
          {types.size > 0 && (
            <ul class="findings" style={{ margin: 0 }}>
              {[...types].map(([type, n]) => (
                <li>
                  <span class="mono">{type}</span>: {n}
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </div>
  );
}
