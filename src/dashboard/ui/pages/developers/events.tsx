// The Event log tab: everything that happened to one email, in order and a page at a time (sent, delivered or
// bounced per recipient, opens, clicks, complaints); without an email id, the recent sent mail to pick from.
import { useState } from 'preact/hooks';
import { api, qs, type List } from '../../api.ts';
import { Badge, Empty, Loaded } from '../../components/feedback.tsx';
import { At } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { useNarrow } from '../../components/page.tsx';
import { Pager, Rows } from '../../components/table.tsx';
import { navigate, useLocation } from '../../router.ts';
import { EVENT_TONE, small, type EmailEvent, type SentSummary } from './model.ts';
import { Intro } from './parts.tsx';

function eventDetail(data: EmailEvent['data']): string {
  if (!data) return '';
  return Object.entries(data)
    .filter(([, v]) => v !== null && v !== undefined && v !== '' && typeof v !== 'object')
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join(' · ');
}

const EVENT_PAGE = 100;

export function EventLog() {
  const { query } = useLocation();
  const emailId = (query.get('email') ?? '').trim();
  // A page of the email's events at a time, oldest first (a tracked email's opens and clicks can be many).
  const [at, setAt] = useState({ emailId, offset: 0 });
  const offset = at.emailId === emailId ? at.offset : 0;
  const events = useLoad(
    async (): Promise<List<EmailEvent>> =>
      emailId ? api<List<EmailEvent>>(`/emails/${encodeURIComponent(emailId)}/events?${qs({ limit: EVENT_PAGE, offset })}`) : { data: [], count: 0, hasMore: false },
    [emailId, offset],
  );
  return (
    <>
      <Intro>Everything that happened to one email, in order: sent, delivered or bounced per recipient, opens, clicks, complaints. Paste an email id from the API's answer.</Intro>
      <form
        class="row"
        role="search"
        style={{ flexWrap: 'nowrap', marginBottom: '16px', maxWidth: '560px' }}
        onSubmit={(e) => {
          e.preventDefault();
          const id = String(new FormData(e.currentTarget as HTMLFormElement).get('email') ?? '').trim();
          navigate(id ? `/developers/events?${qs({ email: id })}` : '/developers/events');
        }}
      >
        <input key={emailId} name="email" defaultValue={emailId} placeholder="em_01J…" aria-label="Email id" class="mono" autoComplete="off" spellcheck={false} />
        <button class="button primary" type="submit">
          Show events
        </button>
      </form>
      {!emailId ? (
        <RecentSent />
      ) : (
        <Loaded state={events}>{(l) => <Events rows={l.data} />}</Loaded>
      )}
      {emailId && events.data && <Pager offset={offset} step={EVENT_PAGE} shown={events.data.data.length} hasMore={events.data.hasMore} labels={['Earlier', 'Later']} go={(o) => setAt({ emailId, offset: o })} />}
    </>
  );
}

/** The last mail sent, to pick an email from. */
function RecentSent() {
  const recent = useLoad(() => api<List<SentSummary>>('/emails?direction=out&limit=10'));
  return (
    <Loaded state={recent}>
      {(l) => (
        <>
          {l.data.length > 0 && <h3>Recent sent mail</h3>}
          <Rows rows={l.data} label="Recent sent mail" empty={<Empty title="No sent mail yet">Once you send through the API or SMTP, its events show here.</Empty>}>
            {(m) => (
              <tr>
                <td style={{ overflowWrap: 'anywhere' }}>
                  <a href={`/developers/events?${qs({ email: m.id })}`}>{m.subject || '(no subject)'}</a>
                  <div class="muted" style={small}>
                    {m.to.map((p) => p.address).join(', ')}
                  </div>
                </td>
                <td>
                  <Badge tone={EVENT_TONE[m.status] ?? 'neutral'}>{m.status.replace(/_/g, ' ')}</Badge>
                </td>
                <td>
                  <At iso={m.createdAt} />
                </td>
              </tr>
            )}
          </Rows>
        </>
      )}
    </Loaded>
  );
}

function Events({ rows }: { rows: EmailEvent[] }) {
  const narrow = useNarrow();
  const head = (
    <>
      <th>Event</th>
      <th>Recipient</th>
      {!narrow && <th>Details</th>}
    </>
  );
  return (
    <Rows rows={rows} label="Events" head={head} empty={<Empty title="No events for this email">Events appear as the email is sent and delivered.</Empty>}>
      {(ev) => (
        <tr data-event={ev.type}>
          <td>
            <Badge tone={EVENT_TONE[ev.type] ?? 'neutral'}>{ev.type.replace(/_/g, ' ')}</Badge>
            <div class="muted" style={{ ...small, whiteSpace: 'nowrap' }} title={new Date(ev.createdAt).toLocaleString()}>
              {new Date(ev.createdAt).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' })}
            </div>
          </td>
          <td style={{ overflowWrap: 'anywhere', minWidth: '140px' }}>
            {ev.recipient ?? <span class="muted">—</span>}
            {narrow && eventDetail(ev.data) && (
              <div class="muted mono" style={{ ...small, wordBreak: 'break-word' }}>
                {eventDetail(ev.data)}
              </div>
            )}
          </td>
          {!narrow && (
            <td class="mono muted" style={{ ...small, wordBreak: 'break-word' }} title={ev.data ? JSON.stringify(ev.data) : undefined}>
              {eventDetail(ev.data) || '—'}
            </td>
          )}
        </tr>
      )}
    </Rows>
  );
}
