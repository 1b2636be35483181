// An endpoint's deliveries: filtered by state, followed closely after an action and slowly while any is pending,
// each replayable, and one's whole story (attempts, status code, response) in a dialog.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, qs, type List } from '../../api.ts';
import { tell } from '../../components/action.ts';
import { Badge, Empty, Loaded } from '../../components/feedback.tsx';
import { At } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import { useNarrow } from '../../components/page.tsx';
import { Rows } from '../../components/table.tsx';
import { Icon } from '../../icons.tsx';
import { DELIVERY, small, type Delivery } from './model.ts';

const linkButton = { background: 'none', border: '0', padding: '0', color: 'var(--accent)', font: 'inherit', cursor: 'pointer', textAlign: 'left' } as const;

/** The deliveries as shown, and `watch()`: follow them closely for a while, after an action that makes one. */
export function useDeliveries(id: string) {
  const [filter, setFilter] = useState<'' | Delivery['status']>('');
  const deliveries = useLoad(() => api<List<Delivery>>(`/webhooks/${id}/deliveries?${qs({ status: filter, limit: 50 })}`), [id, filter]);
  const [watchUntil, setWatchUntil] = useState(0);
  // Deliveries change on their own: follow them closely right after an action, slowly while any is pending.
  const pending = deliveries.data?.data.some((d) => d.status === 'pending') ?? false;
  useEffect(() => {
    if (deliveries.loading || deliveries.error) return;
    const watching = Date.now() < watchUntil;
    if (!watching && !pending) return;
    const t = setTimeout(deliveries.reload, watching ? 800 : 5000);
    return () => clearTimeout(t);
  }, [deliveries.data, deliveries.loading, watchUntil]);
  const watch = () => {
    setWatchUntil(Date.now() + 15_000);
    deliveries.reload();
  };
  return { deliveries, filter, setFilter, watch };
}

export function Deliveries({ id, deliveries, filter, setFilter, watch }: { id: string } & ReturnType<typeof useDeliveries>) {
  const [detail, setDetail] = useState<Delivery | null>(null);
  const narrow = useNarrow();
  const replay = (d: Delivery) => (
    <button class="button small" onClick={() => tell(() => api(`/webhooks/${id}/deliveries/${d.id}/replay`, { method: 'POST', body: {} }).then(watch), 'Sent again')}>
      Replay
    </button>
  );
  const eventCell = (d: Delivery) => (
    <td>
      <button type="button" style={linkButton} class="mono" onClick={() => setDetail(d)}>
        {d.type}
      </button>
      <div class="muted" style={small}>
        <At iso={d.createdAt} />
      </div>
    </td>
  );
  const status = (d: Delivery) => <Badge tone={DELIVERY[d.status][0]}>{DELIVERY[d.status][1]}</Badge>;
  const head = (
    <>
      <th>Event</th>
      <th>Status</th>
      <th>Attempts</th>
      <th>Response</th>
      <th>Duration</th>
      <th>Next attempt</th>
      <th />
    </>
  );
  return (
    <>
      <div class="row" style={{ marginBottom: '10px' }}>
        <h2 class="grow" style={{ margin: 0 }}>
          Deliveries
        </h2>
        <div class="row" role="group" aria-label="Show deliveries" style={{ gap: '6px' }}>
          {(['', 'pending', 'delivered', 'failed'] as const).map((s) => (
            <button class={`button small${filter === s ? ' primary' : ''}`} aria-pressed={filter === s} onClick={() => setFilter(s)}>
              {s ? DELIVERY[s][1] : 'All'}
            </button>
          ))}
          <button class="button small" onClick={deliveries.reload} aria-label="Refresh deliveries" title="Refresh">
            <Icon name="refresh" />
          </button>
        </div>
      </div>
      <Loaded state={deliveries}>
        {(l) => (
          // At phone width, one cell says what the columns would.
          <Rows rows={l.data} label="Deliveries" head={narrow ? undefined : head} empty={<Empty title={filter ? `No ${DELIVERY[filter][1].toLowerCase()} deliveries` : 'No deliveries yet'}>Press Send test event to see one arrive.</Empty>}>
            {(d) =>
              narrow ? (
                <tr data-delivery={d.id} data-status={d.status}>
                  {eventCell(d)}
                  <td>
                    {status(d)}
                    <div class="muted" style={small}>
                      {[d.lastStatusCode && `HTTP ${d.lastStatusCode}`, d.durationMs !== null && `${d.durationMs} ms`, `${d.attempts} ${d.attempts === 1 ? 'attempt' : 'attempts'}`].filter(Boolean).join(' · ')}
                    </div>
                  </td>
                  <td style={{ textAlign: 'right' }}>{replay(d)}</td>
                </tr>
              ) : (
                <tr data-delivery={d.id} data-status={d.status}>
                  {eventCell(d)}
                  <td>
                    {status(d)}
                    {d.lastError && (
                      <div class="muted" style={small}>
                        {d.lastError}
                      </div>
                    )}
                  </td>
                  <td>{d.attempts}</td>
                  <td class="mono">{d.lastStatusCode ?? <span class="muted">—</span>}</td>
                  <td>{d.durationMs === null ? <span class="muted">—</span> : `${d.durationMs} ms`}</td>
                  <td>
                    <At iso={d.nextAttemptAt} />
                  </td>
                  <td style={{ textAlign: 'right' }}>{replay(d)}</td>
                </tr>
              )
            }
          </Rows>
        )}
      </Loaded>
      {detail && <DeliveryDetail d={detail} onClose={() => setDetail(null)} />}
    </>
  );
}

function DeliveryDetail({ d, onClose }: { d: Delivery; onClose: () => void }) {
  const row = (label: string, value: ComponentChildren) => (
    <tr>
      <th style={{ width: '34%' }}>{label}</th>
      <td class="break">{value ?? <span class="muted">—</span>}</td>
    </tr>
  );
  return (
    <Modal title={`Delivery of ${d.type}`} onClose={onClose}>
      <table class="table">
        <tbody>
          {row('Status', <Badge tone={DELIVERY[d.status][0]}>{DELIVERY[d.status][1]}</Badge>)}
          {row('Delivery id (webhook-id)', <span class="mono">{d.id}</span>)}
          {row('Email', d.emailId && <a href={`/developers/events?${qs({ email: d.emailId })}`}>{d.emailId}</a>)}
          {row('Attempts', d.attempts)}
          {row('Last status code', d.lastStatusCode)}
          {row('Duration', d.durationMs === null ? null : `${d.durationMs} ms`)}
          {row('Next attempt', d.nextAttemptAt && new Date(d.nextAttemptAt).toLocaleString())}
          {row('Created', new Date(d.createdAt).toLocaleString())}
          {row('Error', d.lastError)}
          {row('Response', d.lastResponse && <pre style={{ margin: 0, whiteSpace: 'pre-wrap' }}>{d.lastResponse}</pre>)}
        </tbody>
      </table>
    </Modal>
  );
}
