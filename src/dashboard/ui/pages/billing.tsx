// Billing: the plans this workspace holds and what they leave of this month, the plans the box offers, a
// checkout for one (POST /billing/checkout, then the browser goes to the provider's page) and canceling a held
// one (POST /billing/cancel, in this box only). Everything read from GET /account.
import { useState } from 'preact/hooks';
import type { Me } from '../session.ts';
import { api, ApiError } from '../api.ts';
import { useAction } from '../components/action.ts';
import { Badge, Loaded, toast } from '../components/feedback.tsx';
import { FormError } from '../components/forms.tsx';
import { bytes, when } from '../components/format.tsx';
import { useLoad } from '../components/load.ts';
import { Modal } from '../components/modal.tsx';
import { Page } from '../components/page.tsx';
import type { Account, Plan, Subscription } from './overview/model.ts';
import { UsageMeter } from './overview/usage.tsx';

const title = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const planName = (p: { tier: string; messageClass: string }) => `${title(p.tier)} ${p.messageClass}`;

/** The price in major units: the config keeps minor ones (1900 USD is $19.00, 500 JPY is ¥500). */
function price(plan: Plan): string {
  if (plan.price === 0) return 'Free';
  const format = new Intl.NumberFormat([], { style: 'currency', currency: plan.currency });
  return format.format(plan.price / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
}

export function Billing(_: { me: Me }) {
  const account = useLoad(() => api<Account>('/account'));
  const [canceling, setCanceling] = useState<Subscription | null>(null);
  return (
    <Page title="Billing">
      <Loaded state={account}>
        {(a) => {
          const held = new Set(a.billing.subscriptions.map((s) => s.planKey));
          return (
            <>
              <h2>Your plan</h2>
              <div class="cards">
                {a.billing.subscriptions.map((s) => (
                  <HeldPlan subscription={s} plan={a.plans.find((p) => p.key === s.planKey)} onCancel={() => setCanceling(s)} />
                ))}
                <UsageMeter label="Recipients this month" used={a.usage.recipients.used} limit={a.usage.recipients.limit} format={(n) => n.toLocaleString()} resets={a.usage.periodEnd} />
                <UsageMeter label="Attachments this month" used={a.usage.attachmentBytes.used} limit={a.usage.attachmentBytes.limit} format={bytes} resets={a.usage.periodEnd} />
              </div>
              <div class="row" style={{ alignItems: 'baseline', marginBottom: '12px' }}>
                <h2 class="grow" style={{ margin: 0 }}>
                  Plans
                </h2>
                <span class="muted" style={{ fontSize: '13px' }}>
                  {a.billing.provider === 'stripe' ? 'Payments are taken by Stripe.' : 'Billing on this box is manual: you confirm a plan on the next page, no payment is taken.'}
                </span>
              </div>
              <div class="cards" role="list" aria-label="Plans">
                {a.plans.map((p) => (
                  <PlanCard plan={p} held={held.has(p.key)} />
                ))}
              </div>
              <p class="muted" style={{ fontSize: '13px' }}>
                A workspace holds one plan per kind of mail: a new transactional plan replaces the one you hold, a marketing plan adds to it, and the limits of the plans you hold add up.
              </p>
              {canceling && (
                <CancelPlan
                  subscription={canceling}
                  provider={a.billing.provider}
                  onClose={() => setCanceling(null)}
                  onDone={() => {
                    setCanceling(null);
                    account.reload();
                  }}
                />
              )}
            </>
          );
        }}
      </Loaded>
    </Page>
  );
}

function HeldPlan({ subscription: s, plan, onCancel }: { subscription: Subscription; plan: Plan | undefined; onCancel: () => void }) {
  const included = s.id === null;
  return (
    <div class="card" aria-label={`Held plan ${s.planKey}`}>
      <div class="row">
        <span class="muted grow">{title(s.messageClass)} mail</span>
        <Badge tone="good">Active</Badge>
      </div>
      <div style={{ fontSize: '18px', fontWeight: 650, margin: '6px 0 2px' }}>{planName(s)}</div>
      <div class="muted" style={{ marginBottom: '10px' }}>
        {plan ? `${price(plan)}${plan.price ? ` a ${plan.interval === 'yearly' ? 'year' : 'month'}` : ''}` : s.planKey}
        {included ? ' · included with this box' : s.periodEnd ? ` · until ${when(s.periodEnd)}` : ''}
      </div>
      {!included && (
        <button class="button small danger" onClick={onCancel}>
          Cancel plan
        </button>
      )}
    </div>
  );
}

function PlanCard({ plan: p, held }: { plan: Plan; held: boolean }) {
  const { busy, error, run } = useAction('inline');
  // Busy until the browser has left for the provider's page.
  const choose = () =>
    run(async () => {
      const { url } = await api<{ url: string }>('/billing/checkout', { body: { plan_key: p.key } }).catch((err: unknown) => {
        throw err instanceof ApiError && err.code === 'default_plan' ? new Error(`This is the plan every workspace falls back to: cancel your ${p.messageClass} plan to return to it.`) : err;
      });
      location.assign(url);
    }, true);
  return (
    <div class="card" role="listitem" aria-label={planName(p)} style={{ display: 'grid', gap: '8px', alignContent: 'start', borderColor: held ? 'var(--accent)' : undefined }}>
      <div class="row">
        <strong class="grow" style={{ fontSize: '15px' }}>
          {planName(p)}
        </strong>
        {held && <Badge tone="info">Current plan</Badge>}
      </div>
      <div>
        <span class="stat">{price(p)}</span>
        {p.price > 0 && <span class="muted"> / {p.interval === 'yearly' ? 'year' : 'month'}</span>}
      </div>
      <ul class="muted" style={{ margin: 0, paddingLeft: '18px', fontSize: '13px' }}>
        <li>{p.limits.recipients === null ? 'Unlimited recipients' : `${p.limits.recipients.toLocaleString()} recipients a month`}</li>
        <li>{p.limits.attachmentBytes === null ? 'Unlimited attachments' : `${bytes(p.limits.attachmentBytes)} of attachments a month`}</li>
        <li>{p.messageClass === 'marketing' ? 'Newsletters and campaigns, with unsubscribe' : 'Receipts, sign-ins, notifications'}</li>
      </ul>
      {error && (
        <p class="form-error" role="alert" style={{ fontSize: '13px' }}>
          {error}
        </p>
      )}
      {held ? (
        <button class="button" disabled style={{ justifyContent: 'center' }}>
          Your plan
        </button>
      ) : (
        <button class="button primary" onClick={choose} disabled={busy} aria-label={`Choose ${planName(p)}`} style={{ justifyContent: 'center' }}>
          {busy ? 'Opening checkout…' : 'Choose'}
        </button>
      )}
    </div>
  );
}

function CancelPlan({ subscription: s, provider, onClose, onDone }: { subscription: Subscription; provider: string; onClose: () => void; onDone: () => void }) {
  const { busy, error, run } = useAction('inline');
  // Canceled, the dialog closes: it stays busy until then.
  const cancel = () =>
    run(async () => {
      await api('/billing/cancel', { body: { message_class: s.messageClass } });
      toast(`${planName(s)} canceled`);
      onDone();
    }, true);
  return (
    <Modal title={`Cancel ${planName(s)}?`} onClose={onClose}>
      <p>
        The plan ends now.{' '}
        {s.messageClass === 'transactional' ? "Your workspace returns to the box's default transactional plan and its limits." : 'Its limits no longer add to your other plans, and marketing mail needs a marketing plan.'}
      </p>
      {provider === 'stripe' && <p class="muted">This cancels the plan in this box only: cancel the subscription in Stripe's dashboard too, or it keeps charging.</p>}
      <FormError error={error} />
      <div class="row" style={{ justifyContent: 'flex-end' }}>
        <button class="button" onClick={onClose}>
          Keep it
        </button>
        <button class="button primary" onClick={cancel} disabled={busy}>
          {busy ? 'Canceling…' : 'Cancel plan'}
        </button>
      </div>
    </Modal>
  );
}
