// Developers: API keys (a new key shown once), webhooks (a secret shown once; an endpoint's page with its
// deliveries, replay, a test event, secret rotation, enable and disable), the suppression list, and the
// event log of one email. Routed inside: /developers/<tab>[/<webhook id>], /developers/events?email=.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Me } from '../../session.ts';
import { api, ApiError, qs, type List } from '../../api.ts';
import { Badge, Empty, ErrorBox, Loaded, Loading, toast } from '../../components/feedback.tsx';
import { CopyButton, Field, Form } from '../../components/forms.tsx';
import { At } from '../../components/format.tsx';
import { GONE, messageOf, orGone, useLoad } from '../../components/load.ts';
import { ConfirmButton, Modal } from '../../components/modal.tsx';
import { BackLink, Page, useNarrow } from '../../components/page.tsx';
import { navigate, useLocation } from '../../router.ts';
import type { DomainSummary } from '../domains/model.ts';
import { Icon } from '../../icons.tsx';

type Tone = 'neutral' | 'good' | 'bad' | 'warn' | 'info';
interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}
interface Webhook {
  id: string;
  url: string;
  events: string[];
  inboxId: string | null;
  domainId: string | null;
  description: string;
  enabled: boolean;
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}
interface Delivery {
  id: string;
  type: string;
  eventId: string | null;
  emailId: string | null;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  lastResponse: string | null;
  lastError: string | null;
  durationMs: number | null;
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
}
interface Suppression {
  email: string;
  scope: 'all' | 'marketing';
  reason: 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';
  origin: 'recipient' | 'api';
  emailId: string | null;
  detail: string | null;
  createdAt: string;
}
interface EmailEvent {
  id: string;
  emailId: string;
  type: string;
  recipient: string | null;
  createdAt: string;
  data: Record<string, unknown> | null;
}
interface InboxRef {
  id: string;
  address: string;
}
interface SentSummary {
  id: string;
  subject: string;
  to: Array<{ name: string | null; address: string }>;
  status: string;
  createdAt: string;
}

const TABS: Array<[string, string]> = [
  ['keys', 'API keys'],
  ['webhooks', 'Webhooks'],
  ['suppressions', 'Suppressions'],
  ['events', 'Event log'],
];
// The event types of docs/api.md, "Events and status"; the box refuses any other name.
const EVENT_TYPES = ['sent', 'delivered', 'delivery_delayed', 'bounced', 'blocked', 'failed', 'opened', 'clicked', 'complained', 'unsubscribed', 'received', 'forwarded', 'scheduled', 'canceled'];
const EVENT_TONE: Record<string, Tone> = {
  delivered: 'good', opened: 'good', clicked: 'good',
  bounced: 'bad', failed: 'bad', complained: 'bad',
  delivery_delayed: 'warn', blocked: 'warn', unsubscribed: 'warn',
  sent: 'info', scheduled: 'info', received: 'info', forwarded: 'info',
};
const REASONS: Record<Suppression['reason'], [Tone, string]> = { hard_bounce: ['bad', 'Hard bounce'], complaint: ['bad', 'Complaint'], unsubscribe: ['warn', 'Unsubscribed'], manual: ['info', 'Added by you'] };
const linkButton = { background: 'none', border: '0', padding: '0', color: 'var(--accent)', font: 'inherit', cursor: 'pointer', textAlign: 'left' } as const;
const small = { fontSize: '12px' } as const;

export function Developers(_: { me: Me }) {
  const { path } = useLocation();
  const [, , tab = 'keys', sub] = path.split('/');
  const narrow = useNarrow();
  return (
    <Page title="Developers">
      <nav class="tabs" role="tablist" aria-label="Developer tools" style={{ overflowX: 'auto', overflowY: 'hidden' }}>
        {TABS.map(([key, label]) => (
          <a href={`/developers/${key}`} role="tab" aria-selected={tab === key} class={tab === key ? 'active' : ''} style={{ whiteSpace: 'nowrap', ...(narrow ? { padding: '8px 9px' } : {}) }}>
            {label}
          </a>
        ))}
      </nav>
      {tab === 'keys' ? (
        <Keys />
      ) : tab === 'webhooks' ? (
        sub ? (
          <WebhookPage key={sub} id={sub} />
        ) : (
          <Webhooks />
        )
      ) : tab === 'suppressions' ? (
        <Suppressions />
      ) : tab === 'events' ? (
        <EventLog />
      ) : (
        <Empty title="Not here">
          <a href="/developers">Back to API keys</a>
        </Empty>
      )}
    </Page>
  );
}

function Intro({ children, action }: { children: ComponentChildren; action?: ComponentChildren }) {
  return (
    <div class="row" style={{ margin: '4px 0 16px', alignItems: 'flex-start' }}>
      <p class="muted grow" style={{ margin: 0, minWidth: '240px' }}>
        {children}
      </p>
      {action}
    </div>
  );
}

/** A secret in clear, this once: the box keeps only a hash or a sealed copy. */
function SecretOnce({ secret, label, children, actions }: { secret: string; label: string; children: ComponentChildren; actions: ComponentChildren }) {
  return (
    <div style={{ display: 'grid', gap: '12px' }}>
      <p role="alert" style={{ margin: 0 }}>
        <Badge tone="warn">Shown once</Badge> {children}
      </p>
      <div class="secret" data-testid="secret">
        {secret}
      </div>
      <div class="row" style={{ justifyContent: 'flex-end' }}>
        <CopyButton text={secret} label={`Copy ${label}`} />
        {actions}
      </div>
    </div>
  );
}

// ---- API keys ----

function Keys() {
  const keys = useLoad(() => api<List<ApiKey>>('/keys?limit=100'));
  const [creating, setCreating] = useState(false);
  const narrow = useNarrow();
  const revoke = (k: ApiKey) => (
    <ConfirmButton
      label="Revoke"
      title={`Revoke ${k.name}?`}
      confirm="Revoke key"
      action={async () => {
        await api(`/keys/${k.id}`, { method: 'DELETE' });
        toast(`${k.name} revoked`);
        keys.reload();
      }}
    >
      Applications using <span class="mono">{k.prefix}…</span> get 401 Unauthorized from their next request. This cannot be undone.
    </ConfirmButton>
  );
  const create = (
    <button class="button primary" onClick={() => setCreating(true)}>
      Create API key
    </button>
  );
  return (
    <>
      <Intro action={create}>
        Applications send a key as <span class="mono">Authorization: Bearer re_…</span>. Give each application its own, so one can be revoked without touching the others.
      </Intro>
      <Loaded state={keys}>
        {(l) =>
          l.data.length === 0 ? (
            <div class="card">
              <Empty title="No API keys">Create a key to send mail and read the API from your code.</Empty>
            </div>
          ) : (
            <table class="table" aria-label="API keys">
              <thead>
                <tr>
                  <th>Name</th>
                  {!narrow && <th>Key</th>}
                  {!narrow && <th>Created</th>}
                  <th>Last used</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {l.data.map((k) => (
                  <tr data-key={k.prefix}>
                    <td style={{ overflowWrap: 'anywhere' }}>
                      <strong>{k.name}</strong>
                      {narrow && <div class="mono muted">{k.prefix}…</div>}
                    </td>
                    {!narrow && <td class="mono">{k.prefix}…</td>}
                    {!narrow && (
                      <td>
                        <At iso={k.createdAt} />
                      </td>
                    )}
                    <td>
                      <At iso={k.lastUsedAt} never="Never" />
                    </td>
                    <td style={{ textAlign: 'right' }}>{revoke(k)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {creating && (
        <CreateKey
          onClose={() => {
            setCreating(false);
            keys.reload();
          }}
        />
      )}
    </>
  );
}

function CreateKey({ onClose }: { onClose: () => void }) {
  // Held only while the dialog is open: once closed, the page never sees the key again.
  const [created, setCreated] = useState<(ApiKey & { key: string }) | null>(null);
  return (
    <Modal title={created ? `Your key “${created.name}”` : 'Create an API key'} onClose={onClose}>
      {created ? (
        <SecretOnce
          secret={created.key}
          label="key"
          actions={
            <button class="button primary" onClick={onClose}>
              Done
            </button>
          }
        >
          Copy it now and store it somewhere safe: it will not be shown again. The box keeps only a hash; if you lose it, revoke it and create another.
        </SecretOnce>
      ) : (
        <Form submit="Create key" action={async (f) => setCreated(await api('/keys', { body: { name: String(f.get('name') ?? '').trim() } }))}>
          <Field label="Name" hint="What will use it, such as Production app or CI.">
            <input name="name" required maxLength={100} autoFocus autoComplete="off" />
          </Field>
        </Form>
      )}
    </Modal>
  );
}

// ---- Webhooks ----

const eventsText = (events: string[]) => (events.includes('*') ? 'All events' : events.length <= 2 ? events.join(', ') : `${events.length} events`);

function WebhookStatus({ w }: { w: Webhook }) {
  if (!w.enabled)
    return (
      <span>
        <Badge tone="bad">Disabled</Badge>
        {w.disabledReason && (
          <div class="muted" style={small}>
            {w.disabledReason}
          </div>
        )}
      </span>
    );
  if (w.failingSince)
    return (
      <span>
        <Badge tone="warn">Failing</Badge>
        <div class="muted" style={small}>
          since <At iso={w.failingSince} />
        </div>
      </span>
    );
  return <Badge tone="good">Enabled</Badge>;
}

function Webhooks() {
  const hooks = useLoad(() => api<List<Webhook>>('/webhooks?limit=100'));
  const [creating, setCreating] = useState(false);
  const create = (
    <button class="button primary" onClick={() => setCreating(true)}>
      Add endpoint
    </button>
  );
  return (
    <>
      <Intro action={create}>
        The box POSTs each event to your URL, signed as Standard Webhooks says (webhook-id, webhook-timestamp, webhook-signature), and retries for a day and a half when it fails.
      </Intro>
      <Loaded state={hooks}>
        {(l) =>
          l.data.length === 0 ? (
            <div class="card">
              <Empty title="No webhook endpoints">Add one to hear about deliveries, bounces, opens and received mail as they happen.</Empty>
            </div>
          ) : (
            <table class="table" aria-label="Webhook endpoints">
              <thead>
                <tr>
                  <th>Endpoint</th>
                  <th>Status</th>
                  <th>Events</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {l.data.map((w) => (
                  <tr data-webhook={w.id}>
                    <td class="break">
                      <a href={`/developers/webhooks/${w.id}`} class="mono">
                        {w.url}
                      </a>
                      {w.description && <div class="muted">{w.description}</div>}
                    </td>
                    <td>
                      <WebhookStatus w={w} />
                    </td>
                    <td>{eventsText(w.events)}</td>
                    <td>
                      <At iso={w.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {creating && (
        <CreateWebhook
          onClose={() => {
            setCreating(false);
            hooks.reload();
          }}
        />
      )}
    </>
  );
}

function CreateWebhook({ onClose }: { onClose: () => void }) {
  const [all, setAll] = useState(true);
  const [created, setCreated] = useState<(Webhook & { secret: string }) | null>(null);
  const inboxes = useLoad(() => api<List<InboxRef>>('/inboxes?limit=100'));
  const domains = useLoad(() => api<List<DomainSummary>>('/domains?limit=100'));
  return (
    <Modal title={created ? 'Endpoint added' : 'Add a webhook endpoint'} onClose={onClose}>
      {created ? (
        <SecretOnce
          secret={created.secret}
          label="secret"
          actions={
            <>
              <button class="button" onClick={() => navigate(`/developers/webhooks/${created.id}`)}>
                Open endpoint
              </button>
              <button class="button primary" onClick={onClose}>
                Done
              </button>
            </>
          }
        >
          This signing secret verifies the webhook-signature header of every delivery. Copy it now: it will not be shown again (you can rotate it later).
        </SecretOnce>
      ) : (
        <Form
          submit="Add endpoint"
          action={async (f) => {
            const events = all ? ['*'] : f.getAll('events').map(String);
            if (events.length === 0) throw new Error('Pick at least one event, or All events.');
            const inbox = String(f.get('inbox_id') ?? '');
            const domain = String(f.get('domain_id') ?? '');
            const description = String(f.get('description') ?? '').trim();
            setCreated(
              await api('/webhooks', {
                body: { url: String(f.get('url') ?? '').trim(), events, ...(inbox ? { inbox_id: inbox } : {}), ...(domain ? { domain_id: domain } : {}), ...(description ? { description } : {}) },
              }),
            );
          }}
        >
          <Field label="URL" hint="https, answering 2xx within 10 seconds.">
            <input name="url" type="url" placeholder="https://example.com/webhooks/mailwright" required autoFocus autoComplete="off" spellcheck={false} />
          </Field>
          <Field label="Description (optional)">
            <input name="description" maxLength={500} placeholder="Order service" />
          </Field>
          <fieldset style={{ border: '1px solid var(--line)', borderRadius: '8px', padding: '10px 12px', margin: 0 }}>
            <legend style={{ fontWeight: 550, fontSize: '13px', padding: '0 4px' }}>Events</legend>
            <label class="row" style={{ gap: '8px' }}>
              <input type="checkbox" name="all" checked={all} onChange={(e) => setAll((e.currentTarget as HTMLInputElement).checked)} />
              All events, including ones added later
            </label>
            {!all && (
              <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(170px, 1fr))', gap: '4px 12px', marginTop: '8px' }}>
                {EVENT_TYPES.map((t) => (
                  <label class="row" style={{ gap: '8px', flexWrap: 'nowrap' }}>
                    <input type="checkbox" name="events" value={`email.${t}`} />
                    <span class="mono">email.{t}</span>
                  </label>
                ))}
              </div>
            )}
          </fieldset>
          <div class="split">
            <Field label="Only mail of inbox">
              <select name="inbox_id" disabled={!inboxes.data}>
                <option value="">Any inbox</option>
                {inboxes.data?.data.map((i) => <option value={i.id}>{i.address}</option>)}
              </select>
            </Field>
            <Field label="Only mail of domain">
              <select name="domain_id" disabled={!domains.data}>
                <option value="">Any domain</option>
                {domains.data?.data.map((d) => <option value={d.id}>{d.name}</option>)}
              </select>
            </Field>
          </div>
        </Form>
      )}
    </Modal>
  );
}

const DELIVERY: Record<Delivery['status'], [Tone, string]> = { delivered: ['good', 'Delivered'], pending: ['warn', 'Pending'], failed: ['bad', 'Failed'] };

function WebhookPage({ id }: { id: string }) {
  const hook = useLoad(() => orGone(api<Webhook>(`/webhooks/${id}`)), [id]);
  const [filter, setFilter] = useState<'' | Delivery['status']>('');
  const deliveries = useLoad(() => api<List<Delivery>>(`/webhooks/${id}/deliveries?${qs({ status: filter, limit: 50 })}`), [id, filter]);
  const scope = useLoad(async () => {
    const w = hook.data;
    if (!w || w === GONE) return { inbox: null, domain: null };
    const [inbox, domain] = await Promise.all([w.inboxId ? api<InboxRef>(`/inboxes/${w.inboxId}`).catch(() => null) : null, w.domainId ? api<DomainSummary>(`/domains/${w.domainId}`).catch(() => null) : null]);
    return { inbox, domain };
  }, [hook.data && hook.data !== GONE ? `${hook.data.inboxId}/${hook.data.domainId}` : null]);
  const [watchUntil, setWatchUntil] = useState(0);
  const [secret, setSecret] = useState<{ secret: string; previousSecretExpiresAt: string } | null>(null);
  const [detail, setDetail] = useState<Delivery | null>(null);
  const narrow = useNarrow();

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
  const run = async (work: () => Promise<unknown>, done: string) => {
    try {
      await work();
      toast(done);
    } catch (err) {
      toast(messageOf(err));
    }
  };

  if (hook.error)
    return (
      <>
        <BackLink href="/developers/webhooks" style={{ margin: '0 0 14px' }}>All endpoints</BackLink>
        <ErrorBox message={hook.error} retry={hook.reload} />
      </>
    );
  if (!hook.data)
    return (
      <>
        <BackLink href="/developers/webhooks" style={{ margin: '0 0 14px' }}>All endpoints</BackLink>
        <Loading label="Loading the endpoint" />
      </>
    );
  if (hook.data === GONE)
    return (
      <div class="card">
        <Empty title="This endpoint is not here">
          It may have been deleted. <a href="/developers/webhooks">See all endpoints</a>
        </Empty>
      </div>
    );
  const w = hook.data;
  const replay = (d: Delivery) => (
    <button class="button small" onClick={() => run(() => api(`/webhooks/${id}/deliveries/${d.id}/replay`, { method: 'POST', body: {} }).then(watch), 'Sent again')}>
      Replay
    </button>
  );
  const eventCell = (d: Delivery) => (
    <>
      <button type="button" style={linkButton} class="mono" onClick={() => setDetail(d)}>
        {d.type}
      </button>
      <div class="muted" style={small}>
        <At iso={d.createdAt} />
      </div>
    </>
  );
  return (
    <>
      <BackLink href="/developers/webhooks" style={{ margin: '0 0 14px' }}>All endpoints</BackLink>
      <div class="card" style={{ display: 'grid', gap: '10px', marginBottom: '20px' }}>
        <div class="row" style={{ alignItems: 'flex-start' }}>
          <h2 class="mono grow" style={{ margin: 0, wordBreak: 'break-all', fontSize: '15px' }}>
            {w.url}
          </h2>
          <WebhookStatus w={w} />
        </div>
        {w.description && <p style={{ margin: 0 }}>{w.description}</p>}
        <div class="muted" style={{ fontSize: '13px' }}>
          {w.events.includes('*') ? 'All events' : w.events.join(', ')}
          {scope.data?.inbox && ` · only ${scope.data.inbox.address}`}
          {scope.data?.domain && ` · only ${scope.data.domain.name}`}
          {' · added '}
          <At iso={w.createdAt} />
        </div>
        <div class="row">
          <button class="button primary small" onClick={() => run(() => api(`/webhooks/${id}/test`, { method: 'POST', body: {} }).then(watch), 'Test event sent')}>
            Send test event
          </button>
          <ConfirmButton
            label="Rotate secret"
            danger={false}
            title="Rotate the signing secret?"
            confirm="Rotate secret"
            action={async () => {
              setSecret(await api(`/webhooks/${id}/rotate-secret`, { method: 'POST', body: {} }));
            }}
          >
            A new secret is made and shown once. For 24 hours both the old and the new one sign every delivery, so you can switch your receiver without losing any.
          </ConfirmButton>
          {w.enabled ? (
            <ConfirmButton
              label="Disable"
              danger={false}
              title="Disable this endpoint?"
              confirm="Disable"
              action={async () => {
                await api(`/webhooks/${id}`, { method: 'PATCH', body: { enabled: false } });
                toast('Endpoint disabled');
                hook.reload();
              }}
            >
              Nothing is sent to it until you enable it again; events that happen meanwhile wait and go out then.
            </ConfirmButton>
          ) : (
            <button
              class="button small"
              onClick={() =>
                run(async () => {
                  await api(`/webhooks/${id}`, { method: 'PATCH', body: { enabled: true } });
                  hook.reload();
                  watch();
                }, 'Endpoint enabled: waiting deliveries go out now')
              }
            >
              Enable
            </button>
          )}
          <span class="grow" />
          <ConfirmButton
            label="Delete"
            title="Delete this endpoint?"
            confirm="Delete endpoint"
            action={async () => {
              await api(`/webhooks/${id}`, { method: 'DELETE' });
              toast('Endpoint deleted');
              navigate('/developers/webhooks');
            }}
          >
            Deliveries to <span class="mono">{w.url}</span> stop at once, and its delivery history is removed.
          </ConfirmButton>
        </div>
      </div>
      {secret && (
        <div class="card" style={{ marginBottom: '20px' }}>
          <h3 style={{ marginTop: 0 }}>New signing secret</h3>
          <SecretOnce
            secret={secret.secret}
            label="secret"
            actions={
              <button class="button small" onClick={() => setSecret(null)}>
                Hide
              </button>
            }
          >
            Copy it now: it will not be shown again. The previous secret keeps signing too until <At iso={secret.previousSecretExpiresAt} />.
          </SecretOnce>
        </div>
      )}
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
        {(l) =>
          l.data.length === 0 ? (
            <div class="card">
              <Empty title={filter ? `No ${DELIVERY[filter][1].toLowerCase()} deliveries` : 'No deliveries yet'}>Press Send test event to see one arrive.</Empty>
            </div>
          ) : narrow ? (
            <table class="table" aria-label="Deliveries">
              <tbody>
                {l.data.map((d) => (
                  <tr data-delivery={d.id} data-status={d.status}>
                    <td>{eventCell(d)}</td>
                    <td>
                      <Badge tone={DELIVERY[d.status][0]}>{DELIVERY[d.status][1]}</Badge>
                      <div class="muted" style={small}>
                        {[d.lastStatusCode && `HTTP ${d.lastStatusCode}`, d.durationMs !== null && `${d.durationMs} ms`, `${d.attempts} ${d.attempts === 1 ? 'attempt' : 'attempts'}`].filter(Boolean).join(' · ')}
                      </div>
                    </td>
                    <td style={{ textAlign: 'right' }}>{replay(d)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <table class="table" aria-label="Deliveries">
              <thead>
                <tr>
                  <th>Event</th>
                  <th>Status</th>
                  <th>Attempts</th>
                  <th>Response</th>
                  <th>Duration</th>
                  <th>Next attempt</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {l.data.map((d) => (
                  <tr data-delivery={d.id} data-status={d.status}>
                    <td>{eventCell(d)}</td>
                    <td>
                      <Badge tone={DELIVERY[d.status][0]}>{DELIVERY[d.status][1]}</Badge>
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
                ))}
              </tbody>
            </table>
          )
        }
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

// ---- Suppressions ----

const PAGE = 50;

function removeWarning(s: Suppression) {
  if (s.reason === 'complaint') return 'They reported your mail as spam: mailing them again can hurt how your mail is received.';
  if (s.reason === 'hard_bounce') return 'Their server said the address does not exist; if that is still so, the next send bounces again.';
  if (s.reason === 'unsubscribe') return 'They asked to stop marketing mail: remove this only if they asked to subscribe again.';
  return 'Mail to the address goes out again from the next send.';
}

function Suppressions() {
  const [reason, setReason] = useState<'' | Suppression['reason']>('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<List<Suppression>>(`/suppressions?${qs({ reason, limit: PAGE, offset })}`), [reason, offset]);
  const [adding, setAdding] = useState(false);
  const [found, setFound] = useState<{ email: string; entry: Suppression | null } | null>(null);
  const narrow = useNarrow();
  const remove = (s: Suppression) => (
    <ConfirmButton
      label="Remove"
      title={`Send to ${s.email} again?`}
      confirm="Remove from list"
      action={async () => {
        await api(`/suppressions/${encodeURIComponent(s.email)}`, { method: 'DELETE' });
        toast(`${s.email} removed: mail to it goes out again`);
        if (found?.email === s.email) setFound(null);
        list.reload();
      }}
    >
      {removeWarning(s)}
    </ConfirmButton>
  );
  const reasonBadge = (s: Suppression) => (
    <>
      <Badge tone={REASONS[s.reason][0]}>{REASONS[s.reason][1]}</Badge>
      <div class="muted" style={small}>
        {s.scope === 'all' ? 'All mail' : 'Marketing only'}
      </div>
    </>
  );
  const detail = (s: Suppression) => (
    <>
      {s.detail && <div style={{ fontSize: '13px' }}>{s.detail}</div>}
      {s.emailId && (
        <a href={`/developers/events?${qs({ email: s.emailId })}`} style={small}>
          The email that caused it
        </a>
      )}
      {!s.detail && !s.emailId && <span class="muted">—</span>}
    </>
  );
  return (
    <>
      <Intro
        action={
          <button class="button primary" onClick={() => setAdding(true)}>
            Add address
          </button>
        }
      >
        Addresses here get no mail: a send to them is accepted and recorded as blocked. The box adds hard bounces, complaints and unsubscribes itself.
      </Intro>
      <div class="row" style={{ marginBottom: '12px' }}>
        <select aria-label="Reason" value={reason} style={{ width: 'auto' }} onChange={(e) => (setReason((e.currentTarget as HTMLSelectElement).value as typeof reason), setOffset(0))}>
          <option value="">All reasons</option>
          {(Object.keys(REASONS) as Array<Suppression['reason']>).map((r) => (
            <option value={r}>{REASONS[r][1]}</option>
          ))}
        </select>
        <form
          class="row grow"
          role="search"
          style={{ flexWrap: 'nowrap', minWidth: '240px' }}
          onSubmit={async (e) => {
            e.preventDefault();
            const email = String(new FormData(e.currentTarget as HTMLFormElement).get('email') ?? '').trim();
            if (!email) return setFound(null);
            try {
              setFound({ email, entry: await api<Suppression>(`/suppressions/${encodeURIComponent(email)}`) });
            } catch (err) {
              if (err instanceof ApiError && err.status === 404) setFound({ email, entry: null });
              else toast(messageOf(err));
            }
          }}
        >
          <input name="email" type="search" placeholder="Is an address suppressed?" aria-label="Find an address" />
          <button class="button" type="submit">
            Find
          </button>
        </form>
      </div>
      {found && (
        <div class="card row" role="status" style={{ marginBottom: '14px' }}>
          {found.entry ? (
            <>
              <span class="grow">
                <strong>{found.email}</strong> is suppressed: {REASONS[found.entry.reason][1].toLowerCase()}, {found.entry.scope === 'all' ? 'all mail' : 'marketing only'}, since <At iso={found.entry.createdAt} />.
              </span>
              {remove(found.entry)}
            </>
          ) : (
            <span class="grow">
              <strong>{found.email}</strong> is not suppressed: mail to it goes out.
            </span>
          )}
          <button class="icon" aria-label="Close" onClick={() => setFound(null)}>
            <Icon name="close" />
          </button>
        </div>
      )}
      <Loaded state={list}>
        {(l) =>
          l.data.length === 0 ? (
            <div class="card">
              <Empty title={offset > 0 ? 'No more entries' : reason ? `No ${REASONS[reason][1].toLowerCase()} entries` : 'Nobody is suppressed'}>
                {offset > 0 ? null : 'Addresses that hard-bounce, complain or unsubscribe appear here.'}
              </Empty>
            </div>
          ) : (
            <>
              <table class="table" aria-label="Suppressions">
                <thead>
                  <tr>
                    <th>Address</th>
                    <th>Reason</th>
                    {!narrow && <th>Detail</th>}
                    {!narrow && <th>Added</th>}
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {l.data.map((s) => (
                    <tr data-suppression={s.email}>
                      <td style={{ overflowWrap: 'anywhere' }}>
                        <strong>{s.email}</strong>
                        {narrow && (
                          <div class="muted" style={small}>
                            <At iso={s.createdAt} />
                          </div>
                        )}
                      </td>
                      <td>{reasonBadge(s)}</td>
                      {!narrow && <td style={{ overflowWrap: 'anywhere' }}>{detail(s)}</td>}
                      {!narrow && (
                        <td>
                          <At iso={s.createdAt} />
                        </td>
                      )}
                      <td style={{ textAlign: 'right' }}>{remove(s)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {(offset > 0 || l.hasMore) && (
                <div class="row" style={{ justifyContent: 'flex-end', marginTop: '10px' }}>
                  <span class="muted">
                    {offset + 1}–{offset + l.data.length}
                  </span>
                  <button class="button small" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
                    Newer
                  </button>
                  <button class="button small" disabled={!l.hasMore} onClick={() => setOffset(offset + PAGE)}>
                    Older
                  </button>
                </div>
              )}
            </>
          )
        }
      </Loaded>
      {adding && (
        <Modal title="Suppress an address" onClose={() => setAdding(false)}>
          <Form
            submit="Suppress"
            action={async (f) => {
              const entry = await api<Suppression>('/suppressions', { body: { email: String(f.get('email') ?? '').trim(), scope: String(f.get('scope') ?? 'all') } });
              toast(`${entry.email} gets no ${entry.scope === 'all' ? 'mail' : 'marketing mail'} now`);
              setAdding(false);
              list.reload();
            }}
          >
            <Field label="Address">
              <input name="email" type="email" placeholder="someone@example.com" required autoFocus />
            </Field>
            <Field label="Stop">
              <select name="scope">
                <option value="all">All mail</option>
                <option value="marketing">Marketing mail only</option>
              </select>
            </Field>
          </Form>
        </Modal>
      )}
    </>
  );
}

// ---- Event log ----

function eventDetail(data: EmailEvent['data']): string {
  if (!data) return '';
  return Object.entries(data)
    .filter(([, v]) => v !== null && v !== undefined && v !== '' && typeof v !== 'object')
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join(' · ');
}

const EVENT_PAGE = 100;

function EventLog() {
  const { query } = useLocation();
  const emailId = (query.get('email') ?? '').trim();
  const narrow = useNarrow();
  // A page of the email's events at a time, oldest first (a tracked email's opens and clicks can be many).
  const [at, setAt] = useState({ emailId, offset: 0 });
  const offset = at.emailId === emailId ? at.offset : 0;
  const events = useLoad(
    async (): Promise<List<EmailEvent>> =>
      emailId ? api<List<EmailEvent>>(`/emails/${encodeURIComponent(emailId)}/events?${qs({ limit: EVENT_PAGE, offset })}`) : { data: [], count: 0, hasMore: false },
    [emailId, offset],
  );
  const recent = useLoad(async () => (emailId ? null : api<List<SentSummary>>('/emails?direction=out&limit=10')), [emailId]);
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
        recent.error ? (
          <ErrorBox message={recent.error} retry={recent.reload} />
        ) : !recent.data ? (
          <Loading />
        ) : recent.data.data.length === 0 ? (
          <div class="card">
            <Empty title="No sent mail yet">Once you send through the API or SMTP, its events show here.</Empty>
          </div>
        ) : (
          <>
            <h3>Recent sent mail</h3>
            <table class="table" aria-label="Recent sent mail">
              <tbody>
                {recent.data.data.map((m) => (
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
                ))}
              </tbody>
            </table>
          </>
        )
      ) : (
        <Loaded state={events}>
          {(l) =>
            l.data.length === 0 ? (
              <div class="card">
                <Empty title="No events for this email">Events appear as the email is sent and delivered.</Empty>
              </div>
            ) : (
              <table class="table" aria-label="Events">
                <thead>
                  <tr>
                    <th>Event</th>
                    <th>Recipient</th>
                    {!narrow && <th>Details</th>}
                  </tr>
                </thead>
                <tbody>
                  {l.data.map((ev) => (
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
                  ))}
                </tbody>
              </table>
            )
          }
        </Loaded>
      )}
      {emailId && events.data && (offset > 0 || events.data.hasMore) && (
        <div class="row" style={{ justifyContent: 'flex-end', marginTop: '10px' }}>
          <span class="muted">
            {offset + 1}–{offset + events.data.data.length}
          </span>
          <button class="button small" disabled={offset === 0} onClick={() => setAt({ emailId, offset: Math.max(0, offset - EVENT_PAGE) })}>
            Earlier
          </button>
          <button class="button small" disabled={!events.data.hasMore} onClick={() => setAt({ emailId, offset: offset + EVENT_PAGE })}>
            Later
          </button>
        </div>
      )}
    </>
  );
}
