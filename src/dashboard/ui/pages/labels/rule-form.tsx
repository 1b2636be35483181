// A new filing rule for a label: its conditions (all must match), skipping the Inbox, filing the stored mail
// that matches; a dry run says what it would file before anything is saved.
import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { useAction } from '../../components/action.ts';
import { toast } from '../../components/feedback.tsx';
import { Field, FormError } from '../../components/forms.tsx';
import { when } from '../../components/format.tsx';
import { messageOf } from '../../components/load.ts';
import { Icon } from '../../icons.tsx';
import { plural, type DryRun, type Inbox, type Label } from './model.ts';

interface Draft {
  direction: '' | 'in' | 'out';
  inbox_id: string;
  from: string;
  to: string;
  subject: string;
  skip_inbox: boolean;
  apply_to_existing: boolean;
}
const EMPTY: Draft = { direction: '', inbox_id: '', from: '', to: '', subject: '', skip_inbox: false, apply_to_existing: true };

/** The rule as the API takes it: empty conditions left out. */
const ruleBody = (d: Draft) => ({
  ...(d.direction ? { direction: d.direction } : {}),
  ...(d.inbox_id ? { inbox_id: d.inbox_id } : {}),
  ...(d.from.trim() ? { from: d.from.trim() } : {}),
  ...(d.to.trim() ? { to: d.to.trim() } : {}),
  ...(d.subject.trim() ? { subject: d.subject.trim() } : {}),
});

type DryState = { state: 'idle' } | { state: 'running' } | { state: 'done'; result: DryRun };

export function RuleForm({ label, inboxes, onSaved }: { label: Label; inboxes: Inbox[]; onSaved: () => void }) {
  const [d, setD] = useState<Draft>({ ...EMPTY, skip_inbox: label.skipInbox });
  const [dry, setDry] = useState<DryState>({ state: 'idle' });
  const { busy: saving, error, setError, run } = useAction('inline');
  const conditions = ruleBody(d);
  const hasCondition = Object.keys(conditions).length > 0;
  const needsCondition = 'Give at least one condition: the kind of mail, an inbox, from, to or subject.';
  // A dry run answers for the conditions it was given; changing them makes the answer stale.
  const set = (patch: Partial<Draft>) => {
    setD((x) => ({ ...x, ...patch }));
    setError(null);
    if (['direction', 'inbox_id', 'from', 'to', 'subject'].some((k) => k in patch)) setDry({ state: 'idle' });
  };
  const runDry = async () => {
    if (!hasCondition) return setError(needsCondition);
    setError(null);
    setDry({ state: 'running' });
    try {
      setDry({ state: 'done', result: await api<DryRun>(`/labels/${label.id}/rules`, { body: { ...conditions, dry_run: true } }) });
    } catch (err) {
      setDry({ state: 'idle' });
      setError(messageOf(err));
    }
  };
  const count = dry.state === 'done' ? dry.result.count : null;
  const save = async () => {
    if (!hasCondition) return setError(needsCondition);
    await run(async () => {
      await api(`/labels/${label.id}/rules`, { body: { ...conditions, skip_inbox: d.skip_inbox, apply_to_existing: d.apply_to_existing } });
      toast(d.apply_to_existing && count ? `Rule saved: filing ${plural(count, 'stored email')} in the background` : 'Rule saved: matching mail is filed here from now on');
      setD({ ...EMPTY, skip_inbox: label.skipInbox });
      setDry({ state: 'idle' });
      onSaved();
    });
  };
  return (
    <div style={{ borderTop: '1px solid var(--line)', paddingTop: '12px' }}>
      <h3 style={{ marginTop: 0 }}>Add a rule</h3>
      <form
        class="form"
        style={{ maxWidth: 'none' }}
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <p class="muted" style={{ margin: 0, fontSize: '13px' }}>
          Every condition you fill in must match. Text matches any part, in any case.
        </p>
        <div class="row" style={{ alignItems: 'flex-start' }}>
          <div style={{ flex: '1 1 140px' }}>
            <Field label="Mail">
              <select name="direction" value={d.direction} onChange={(e) => set({ direction: e.currentTarget.value as Draft['direction'] })}>
                <option value="">Received and sent</option>
                <option value="in">Received</option>
                <option value="out">Sent</option>
              </select>
            </Field>
          </div>
          <div style={{ flex: '1 1 160px' }}>
            <Field label="Inbox">
              <select name="inbox_id" value={d.inbox_id} onChange={(e) => set({ inbox_id: e.currentTarget.value })}>
                <option value="">Any inbox</option>
                {inboxes.map((i) => (
                  <option value={i.id}>{i.address}</option>
                ))}
              </select>
            </Field>
          </div>
        </div>
        <Field label="From contains">
          <input name="from" value={d.from} maxLength={200} placeholder="billing@ or Acme" onInput={(e) => set({ from: e.currentTarget.value })} />
        </Field>
        <Field label="To contains">
          <input name="to" value={d.to} maxLength={200} placeholder="team@yourdomain" onInput={(e) => set({ to: e.currentTarget.value })} />
        </Field>
        <Field label="Subject contains">
          <input name="subject" value={d.subject} maxLength={200} placeholder="invoice" onInput={(e) => set({ subject: e.currentTarget.value })} />
        </Field>
        <label class="row">
          <input type="checkbox" checked={d.skip_inbox} onChange={(e) => set({ skip_inbox: e.currentTarget.checked })} />
          <span>Skip the Inbox (archive received mail it files)</span>
        </label>
        <label class="row">
          <input type="checkbox" checked={d.apply_to_existing} onChange={(e) => set({ apply_to_existing: e.currentTarget.checked })} />
          <span>{count === null ? 'Also file the stored emails that match' : count === 0 ? 'Also file stored emails that match (none do now)' : `Also file the ${plural(count, 'stored email')} that match`}</span>
        </label>
        <DryRunResult dry={dry} />
        <FormError error={error} />
        <div class="row">
          <button type="button" class="button" onClick={runDry} disabled={dry.state === 'running' || saving}>
            {dry.state === 'running' ? 'Trying…' : 'Dry run'}
          </button>
          <button type="submit" class="button primary" disabled={saving}>
            {saving ? 'Saving…' : 'Save rule'}
          </button>
          <span class="muted" style={{ fontSize: '13px' }}>
            A dry run shows what it would file. Nothing changes until you save.
          </span>
        </div>
      </form>
    </div>
  );
}

function DryRunResult({ dry }: { dry: DryState }) {
  if (dry.state !== 'done') return null;
  const { count, emails } = dry.result;
  return (
    <div role="status" aria-label="Dry run result" data-testid="dry-run" style={{ background: 'var(--accent-soft)', borderRadius: '8px', padding: '10px 12px' }}>
      <strong>{count === 0 ? 'No stored email matches.' : `Would file ${plural(count, 'stored email')}.`}</strong>{' '}
      <span class="muted">{count === 0 ? 'It will still file new mail that matches.' : count > emails.length ? `The newest ${emails.length}:` : emails.length > 1 ? 'Newest first:' : ''}</span>
      {emails.length > 0 && (
        <ul style={{ listStyle: 'none', margin: '8px 0 0', padding: 0, display: 'grid', gap: '4px', maxHeight: '220px', overflowY: 'auto' }}>
          {emails.map((e) => (
            <li class="row" style={{ gap: '8px', flexWrap: 'nowrap', fontSize: '13px' }}>
              <span title={e.direction === 'in' ? 'Received' : 'Sent'}>
                <Icon name={e.direction === 'in' ? 'received' : 'sent'} label={e.direction === 'in' ? 'Received' : 'Sent'} />
              </span>
              <span class="grow" style={{ minWidth: 0, overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' }}>
                <strong style={{ fontWeight: 600 }}>{e.subject || '(no subject)'}</strong> <span class="muted">{e.from}</span>
              </span>
              <span class="muted" style={{ flex: '0 0 auto' }}>
                {when(e.createdAt)}
              </span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
