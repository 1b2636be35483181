// A label's filing rules: each saved rule in words, deleting one (mail already filed keeps the label), and the
// form for a new one below (rule-form.tsx).
import { api } from '../../api.ts';
import { tell } from '../../components/action.ts';
import { Badge } from '../../components/feedback.tsx';
import { useLoad } from '../../components/load.ts';
import { Icon } from '../../icons.tsx';
import type { Inbox, Label, Rule } from './model.ts';
import { RuleForm } from './rule-form.tsx';

export function Rules({ label, onChange }: { label: Label; onChange: () => void }) {
  const inboxes = useLoad(() => api<{ data: Inbox[] }>('/inboxes?limit=100').then((r) => r.data), []);
  const inboxName = (id: string) => inboxes.data?.find((i) => i.id === id)?.address ?? id;
  const remove = (rule: Rule) =>
    tell(async () => {
      await api(`/labels/${label.id}/rules/${rule.id}`, { method: 'DELETE' });
      onChange();
    }, 'Rule deleted: mail already filed keeps the label');
  return (
    <section class="card" aria-label="Rules" style={{ display: 'grid', gap: '12px', minWidth: 0 }}>
      <h2 style={{ margin: 0 }}>Rules</h2>
      {label.rules.length === 0 ? (
        <p class="muted" style={{ margin: 0 }}>
          No rules yet: mail gets this label only by hand. Add a rule below to file matching mail automatically.
        </p>
      ) : (
        <ul style={{ listStyle: 'none', margin: 0, padding: 0, display: 'grid', gap: '8px' }} aria-label="Saved rules">
          {label.rules.map((r) => (
            <li class="row" data-rule={r.id} style={{ border: '1px solid var(--line)', borderRadius: '8px', padding: '8px 10px', flexWrap: 'nowrap', alignItems: 'flex-start' }}>
              <span class="grow" style={{ minWidth: 0, wordBreak: 'break-word' }}>
                {describe(r, inboxName)}
                {r.skipInbox && (
                  <>
                    {' '}
                    <Badge tone="info">skips the Inbox</Badge>
                  </>
                )}
              </span>
              <button class="icon" aria-label="Delete this rule" title="Delete this rule" onClick={() => remove(r)}>
                <Icon name="close" />
              </button>
            </li>
          ))}
        </ul>
      )}
      <RuleForm label={label} inboxes={inboxes.data ?? []} onSaved={onChange} />
    </section>
  );
}

function describe(r: Pick<Rule, 'direction' | 'inboxId' | 'from' | 'to' | 'subject'>, inboxName: (id: string) => string) {
  const q = (s: string) => <strong>“{s}”</strong>;
  const parts = [r.direction === 'in' ? 'Received mail' : r.direction === 'out' ? 'Sent mail' : 'Any mail'];
  return (
    <>
      {parts[0]}
      {r.inboxId && <> in {inboxName(r.inboxId)}</>}
      {r.from && <> · from contains {q(r.from)}</>}
      {r.to && <> · to contains {q(r.to)}</>}
      {r.subject && <> · subject contains {q(r.subject)}</>}
    </>
  );
}
