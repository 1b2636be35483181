// The Webhooks tab: the endpoints with their state (enabled, failing since, disabled and why), and adding one:
// its URL, the events it hears (all, or some) and the inbox or domain it is kept to; its secret shown once.
import { useState } from 'preact/hooks';
import { api, type List } from '../../api.ts';
import { Badge, Empty, Loaded } from '../../components/feedback.tsx';
import { Field, Form } from '../../components/forms.tsx';
import { At } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import { Rows } from '../../components/table.tsx';
import { navigate } from '../../router.ts';
import type { DomainSummary } from '../domains/model.ts';
import { DOMAIN_EVENT_TYPES, EVENT_TYPES, small, type InboxRef, type Webhook } from './model.ts';
import { Intro, SecretOnce } from './parts.tsx';

const eventsText = (events: string[]) => (events.includes('*') ? 'All events' : events.length <= 2 ? events.join(', ') : `${events.length} events`);

export function WebhookStatus({ w }: { w: Webhook }) {
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

export function Webhooks() {
  const hooks = useLoad(() => api<List<Webhook>>('/webhooks?limit=100'));
  const [creating, setCreating] = useState(false);
  const create = (
    <button class="button primary" onClick={() => setCreating(true)}>
      Add endpoint
    </button>
  );
  const head = (
    <>
      <th>Endpoint</th>
      <th>Status</th>
      <th>Events</th>
      <th>Created</th>
    </>
  );
  return (
    <>
      <Intro action={create}>
        The box POSTs each event to your URL, signed as Standard Webhooks says (webhook-id, webhook-timestamp, webhook-signature), and retries for a day and a half when it fails.
      </Intro>
      <Loaded state={hooks}>
        {(l) => (
          <Rows rows={l.data} label="Webhook endpoints" head={head} empty={<Empty title="No webhook endpoints">Add one to hear about deliveries, bounces, opens and received mail as they happen.</Empty>}>
            {(w) => (
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
            )}
          </Rows>
        )}
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
  const [created, setCreated] = useState<(Webhook & { secret: string }) | null>(null);
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
        <WebhookForm onCreated={setCreated} />
      )}
    </Modal>
  );
}

function WebhookForm({ onCreated }: { onCreated: (w: Webhook & { secret: string }) => void }) {
  const [all, setAll] = useState(true);
  const inboxes = useLoad(() => api<List<InboxRef>>('/inboxes?limit=100'));
  const domains = useLoad(() => api<List<DomainSummary>>('/domains?limit=100'));
  return (
    <Form
      submit="Add endpoint"
      action={async (f) => {
        const events = all ? ['*'] : f.getAll('events').map(String);
        if (events.length === 0) throw new Error('Pick at least one event, or All events.');
        const inbox = String(f.get('inbox_id') ?? '');
        const domain = String(f.get('domain_id') ?? '');
        const description = String(f.get('description') ?? '').trim();
        onCreated(
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
            {[...EVENT_TYPES.map((t) => `email.${t}`), ...DOMAIN_EVENT_TYPES].map((t) => (
              <label class="row" style={{ gap: '8px', flexWrap: 'nowrap' }}>
                <input type="checkbox" name="events" value={t} />
                <span class="mono">{t}</span>
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
  );
}
