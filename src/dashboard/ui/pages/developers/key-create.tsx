// Creating an API key: its name and what it may do (full access, sending from every domain or one, or the mail
// of chosen inboxes), then the key shown once in the dialog. The API judges the fields (POST /keys).
import { useState } from 'preact/hooks';
import { api, type List } from '../../api.ts';
import { Field, Form } from '../../components/forms.tsx';
import { useLoad } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import type { ApiKey, KeyPermission } from './model.ts';
import { SecretOnce } from './parts.tsx';

const CHOICES: Array<[KeyPermission, string, string]> = [
  ['full_access', 'Full access', 'Everything the API offers, as today.'],
  ['sending_access', 'Sending access', 'Send mail (API and SMTP) and read back what this key sent; nothing else.'],
  ['inbox_access', 'Inbox access', 'Read, file and answer the mail of the inboxes you choose, and send from their addresses.'],
];

export function CreateKey({ onClose }: { onClose: () => void }) {
  // Held only while the dialog is open: once closed, the page never sees the key again.
  const [created, setCreated] = useState<(ApiKey & { key: string }) | null>(null);
  const [permission, setPermission] = useState<KeyPermission>('full_access');
  const domains = useLoad(() => api<List<{ id: string; name: string }>>('/domains?limit=100'));
  const inboxes = useLoad(() => api<List<{ id: string; address: string }>>('/inboxes?limit=100'));
  const body = (f: FormData) => {
    const name = String(f.get('name') ?? '').trim();
    if (permission === 'sending_access') {
      const domain = String(f.get('domain_id') ?? '');
      return { name, permission, ...(domain ? { domain_id: domain } : {}) };
    }
    if (permission === 'inbox_access') return { name, permission, inbox_ids: f.getAll('inbox_ids').map(String) };
    return { name, permission };
  };
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
        <Form submit="Create key" action={async (f) => setCreated(await api('/keys', { body: body(f) }))}>
          <Field label="Name" hint="What will use it, such as Production app or CI.">
            <input name="name" required maxLength={100} autoFocus autoComplete="off" />
          </Field>
          <fieldset style={{ border: '1px solid var(--line)', borderRadius: '8px', padding: '10px 12px', margin: 0 }}>
            <legend style={{ fontWeight: 550, fontSize: '13px', padding: '0 4px' }}>Permission</legend>
            {CHOICES.map(([value, label, hint]) => (
              <label class="row" style={{ gap: '8px', alignItems: 'baseline' }}>
                <input type="radio" name="permission" value={value} checked={permission === value} onChange={() => setPermission(value)} />
                <span>
                  <strong>{label}</strong> <small class="muted">{hint}</small>
                </span>
              </label>
            ))}
          </fieldset>
          {permission === 'sending_access' && (
            <Field label="Sending from" hint="A key for one domain cannot send from any other.">
              <select name="domain_id" disabled={!domains.data}>
                <option value="">Any domain of the workspace</option>
                {domains.data?.data.map((d) => <option value={d.id}>{d.name}</option>)}
              </select>
            </Field>
          )}
          {permission === 'inbox_access' && (
            <fieldset style={{ border: '1px solid var(--line)', borderRadius: '8px', padding: '10px 12px', margin: 0 }}>
              <legend style={{ fontWeight: 550, fontSize: '13px', padding: '0 4px' }}>Inboxes</legend>
              {inboxes.data?.data.length === 0 && <p class="muted">No inboxes yet: create one under Inboxes first.</p>}
              {inboxes.data?.data.map((i) => (
                <label class="row" style={{ gap: '8px', flexWrap: 'nowrap' }}>
                  <input type="checkbox" name="inbox_ids" value={i.id} />
                  <span class="mono">{i.address}</span>
                </label>
              ))}
            </fieldset>
          )}
        </Form>
      )}
    </Modal>
  );
}

/** What a key may do, in a few words for the keys table. */
export function accessOf(k: ApiKey, domains: Map<string, string>, inboxCount = k.inboxIds?.length ?? 0): string {
  if (k.permission === 'sending_access') return k.domainId ? `Sending from ${domains.get(k.domainId) ?? 'one domain'}` : 'Sending';
  if (k.permission === 'inbox_access') return `Inbox access (${inboxCount} ${inboxCount === 1 ? 'inbox' : 'inboxes'})`;
  return 'Full access';
}
