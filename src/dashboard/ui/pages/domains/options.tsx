// A domain's sending options, each an on/off switch saved at once: marketing mail (one-click unsubscribe), open
// tracking and click tracking.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, toast } from '../../components/feedback.tsx';
import { messageOf } from '../../components/load.ts';
import type { Domain } from './model.ts';

/** An on/off setting with what it does; the change is saved at once. */
function Switch({ label, hint, checked, disabled, onChange }: { label: string; hint: ComponentChildren; checked: boolean; disabled?: boolean; onChange: (on: boolean) => void }) {
  return (
    <label class="row" style={{ alignItems: 'flex-start', flexWrap: 'nowrap', gap: '12px', padding: '12px 0', borderTop: '1px solid var(--line)', cursor: disabled ? 'default' : 'pointer' }}>
      <input type="checkbox" role="switch" aria-checked={checked} checked={checked} disabled={disabled} onChange={(e) => onChange((e.currentTarget as HTMLInputElement).checked)} style={{ marginTop: '4px', width: '18px', height: '18px', accentColor: 'var(--accent)' }} />
      <span class="grow">
        <strong>{label}</strong>
        <br />
        <small class="muted">{hint}</small>
      </span>
      <Badge tone={checked ? 'good' : 'neutral'}>{checked ? 'On' : 'Off'}</Badge>
    </label>
  );
}

type SwitchField = 'marketing' | 'open_tracking' | 'click_tracking';

export function Options({ domain, onChange }: { domain: Domain; onChange: () => void }) {
  // A controlled checkbox snaps back to its prop on re-render, so the new value is shown until the box confirms
  // it: a domain read back (after this save, or an earlier one) drops only the values it now agrees with.
  const [shown, setShown] = useState<Partial<Record<SwitchField, boolean>>>({});
  const [saving, setSaving] = useState<SwitchField | null>(null);
  useEffect(() => setShown((v) => Object.fromEntries(Object.entries(v).filter(([field, on]) => domain[field as SwitchField] !== on))), [domain]);
  const value = (field: SwitchField) => shown[field] ?? domain[field];
  const set = async (field: SwitchField, on: boolean) => {
    setSaving(field);
    setShown((v) => ({ ...v, [field]: on }));
    try {
      await api(`/domains/${domain.id}`, { method: 'PATCH', body: { [field]: on } });
      toast('Saved');
      onChange();
    } catch (err) {
      setShown((v) => ({ ...v, [field]: !on }));
      toast(messageOf(err));
    } finally {
      setSaving(null);
    }
  };
  return (
    <>
      <h2 style={{ marginTop: '28px' }}>Sending options</h2>
      <div class="card" style={{ paddingTop: '6px', paddingBottom: '6px' }}>
        <Switch
          label="Marketing mail"
          checked={value('marketing')}
          disabled={saving !== null || (!value('marketing') && domain.status !== 'verified')}
          onChange={(on) => set('marketing', on)}
          hint={domain.status === 'verified' || domain.marketing ? 'Allows message_class "marketing": each recipient gets one-click unsubscribe headers and links.' : 'Needs a verified domain first.'}
        />
        <Switch label="Open tracking" checked={value('open_tracking')} disabled={saving !== null} onChange={(on) => set('open_tracking', on)} hint="Adds an invisible image to HTML mail and records an opened event when it loads. Image proxies make this a signal, not proof." />
        <Switch label="Click tracking" checked={value('click_tracking')} disabled={saving !== null} onChange={(on) => set('click_tracking', on)} hint="Sends links in HTML mail through this box to record a clicked event. The text part is never changed." />
      </div>
    </>
  );
}
