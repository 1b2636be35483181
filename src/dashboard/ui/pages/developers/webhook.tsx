// One webhook endpoint's page: what it hears and for which inbox or domain, a test event, secret rotation (the
// new secret shown once), disable and enable, delete; its deliveries below (deliveries.tsx).
import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { tell } from '../../components/action.ts';
import { Empty, toast } from '../../components/feedback.tsx';
import { At } from '../../components/format.tsx';
import { GONE, orGone, useLoad } from '../../components/load.ts';
import { ConfirmButton } from '../../components/modal.tsx';
import { BackLink, Pending } from '../../components/page.tsx';
import { navigate } from '../../router.ts';
import type { DomainSummary } from '../domains/model.ts';
import { Deliveries, useDeliveries } from './deliveries.tsx';
import type { InboxRef, Webhook } from './model.ts';
import { SecretOnce } from './parts.tsx';
import { WebhookStatus } from './webhooks.tsx';

export function WebhookPage({ id }: { id: string }) {
  const hook = useLoad(() => orGone(api<Webhook>(`/webhooks/${id}`)), [id]);
  const deliveries = useDeliveries(id);
  const back = (
    <BackLink href="/developers/webhooks" style={{ margin: '0 0 14px' }}>
      All endpoints
    </BackLink>
  );
  if (hook.data === null) return <Pending state={hook} back={back} label="Loading the endpoint" />;
  if (hook.data === GONE)
    return (
      <div class="card">
        <Empty title="This endpoint is not here">
          It may have been deleted. <a href="/developers/webhooks">See all endpoints</a>
        </Empty>
      </div>
    );
  return (
    <>
      {back}
      <Endpoint w={hook.data} onChange={hook.reload} watch={deliveries.watch} />
      <Deliveries id={id} {...deliveries} />
    </>
  );
}

/** The endpoint's card and its actions; `watch` follows the deliveries an action starts. */
function Endpoint({ w, onChange, watch }: { w: Webhook; onChange: () => void; watch: () => void }) {
  const [secret, setSecret] = useState<{ secret: string; previousSecretExpiresAt: string } | null>(null);
  const scope = useLoad(async () => {
    const [inbox, domain] = await Promise.all([w.inboxId ? api<InboxRef>(`/inboxes/${w.inboxId}`).catch(() => null) : null, w.domainId ? api<DomainSummary>(`/domains/${w.domainId}`).catch(() => null) : null]);
    return { inbox, domain };
  }, [`${w.inboxId}/${w.domainId}`]);
  return (
    <>
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
          <button class="button primary small" onClick={() => tell(() => api(`/webhooks/${w.id}/test`, { method: 'POST', body: {} }).then(watch), 'Test event sent')}>
            Send test event
          </button>
          <ConfirmButton label="Rotate secret" danger={false} title="Rotate the signing secret?" confirm="Rotate secret" action={async () => setSecret(await api(`/webhooks/${w.id}/rotate-secret`, { method: 'POST', body: {} }))}>
            A new secret is made and shown once. For 24 hours both the old and the new one sign every delivery, so you can switch your receiver without losing any.
          </ConfirmButton>
          <DisableOrEnable w={w} onChange={onChange} watch={watch} />
          <span class="grow" />
          <ConfirmButton
            label="Delete"
            title="Delete this endpoint?"
            confirm="Delete endpoint"
            action={async () => {
              await api(`/webhooks/${w.id}`, { method: 'DELETE' });
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
    </>
  );
}

/** Disable (asked first: events wait meanwhile) or enable again (the waiting deliveries go out). */
function DisableOrEnable({ w, onChange, watch }: { w: Webhook; onChange: () => void; watch: () => void }) {
  if (w.enabled)
    return (
      <ConfirmButton
        label="Disable"
        danger={false}
        title="Disable this endpoint?"
        confirm="Disable"
        action={async () => {
          await api(`/webhooks/${w.id}`, { method: 'PATCH', body: { enabled: false } });
          toast('Endpoint disabled');
          onChange();
        }}
      >
        Nothing is sent to it until you enable it again; events that happen meanwhile wait and go out then.
      </ConfirmButton>
    );
  return (
    <button
      class="button small"
      onClick={() =>
        tell(async () => {
          await api(`/webhooks/${w.id}`, { method: 'PATCH', body: { enabled: true } });
          onChange();
          watch();
        }, 'Endpoint enabled: waiting deliveries go out now')
      }
    >
      Enable
    </button>
  );
}
