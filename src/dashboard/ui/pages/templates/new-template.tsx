// A new template: a starter to begin from (welcome, password reset, receipt, notification or blank), its name,
// and its key, which follows the name until the user types one.
import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { toast } from '../../components/feedback.tsx';
import { Field, Form } from '../../components/forms.tsx';
import { Modal } from '../../components/modal.tsx';
import { navigate } from '../../router.ts';

const STARTERS = [
  { id: 'welcome', title: 'Welcome', about: 'Greets a new user with a button to get started.' },
  { id: 'password-reset', title: 'Password reset', about: 'A one-time link that expires.' },
  { id: 'receipt', title: 'Receipt', about: 'A payment with its number, date and amount.' },
  { id: 'notification', title: 'Notification', about: 'A short update with one action.' },
  { id: 'blank', title: 'Blank', about: 'An empty draft to write from scratch.' },
] as const;

const keyOf = (name: string) =>
  name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[-._]+|-+$/g, '')
    .slice(0, 100);

export function NewTemplate({ onClose }: { onClose: () => void }) {
  const [starter, setStarter] = useState<(typeof STARTERS)[number]['id']>('welcome');
  const [name, setName] = useState<string | null>(null);
  const [key, setKey] = useState<string | null>(null);
  // Until the user types their own, the name follows the starter and the key follows the name.
  const shownName = name ?? (starter === 'blank' ? '' : STARTERS.find((s) => s.id === starter)!.title);
  const shownKey = key ?? keyOf(shownName);
  return (
    <Modal title="New template" onClose={onClose}>
      <Form
        submit="Create template"
        class="form template-new"
        action={async () => {
          const made = await api<{ template: { id: string; key: string } }>('/templates', { body: { name: shownName.trim(), key: shownKey, starter } });
          toast(`Created ${made.template.key}`);
          navigate(`/templates/${made.template.id}`);
        }}
      >
        <fieldset style={{ border: 0, padding: 0, margin: 0 }}>
          <legend style={{ fontWeight: 550, fontSize: '13px', marginBottom: '6px' }}>Start from</legend>
          <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(140px, 1fr))', gap: '8px' }}>
            {STARTERS.map((s) => (
              <label
                style={{
                  display: 'grid',
                  gap: '2px',
                  alignContent: 'start',
                  padding: '10px 12px',
                  borderRadius: '8px',
                  cursor: 'pointer',
                  border: `1px solid ${starter === s.id ? 'var(--accent)' : 'var(--line)'}`,
                  background: starter === s.id ? 'var(--accent-soft)' : 'var(--panel)',
                }}
              >
                <span class="row" style={{ gap: '6px', flexWrap: 'nowrap' }}>
                  <input type="radio" name="starter" value={s.id} checked={starter === s.id} onChange={() => setStarter(s.id)} style={{ width: 'auto', margin: 0 }} />
                  <strong>{s.title}</strong>
                </span>
                <small class="muted">{s.about}</small>
              </label>
            ))}
          </div>
        </fieldset>
        <Field label="Name" hint="What your team sees in this list.">
          <input name="name" required maxLength={200} value={shownName} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Key" hint="What your code sends with: template: {key}. Letters, digits, dots, dashes and underscores.">
          <input name="key" class="mono" required maxLength={100} pattern="[A-Za-z0-9][A-Za-z0-9._\-]*" value={shownKey} onInput={(e) => setKey(e.currentTarget.value)} />
        </Field>
      </Form>
    </Modal>
  );
}
