// The API keys tab: the workspace's keys (prefix, created, last used), revoking one, and creating one whose
// key is shown once in its dialog.
import { useState } from 'preact/hooks';
import { api, type List } from '../../api.ts';
import { Empty, Loaded, toast } from '../../components/feedback.tsx';
import { Field, Form } from '../../components/forms.tsx';
import { At } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { ConfirmButton, Modal } from '../../components/modal.tsx';
import { useNarrow } from '../../components/page.tsx';
import { Rows } from '../../components/table.tsx';
import type { ApiKey } from './model.ts';
import { Intro, SecretOnce } from './parts.tsx';

export function Keys() {
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
  const head = (
    <>
      <th>Name</th>
      {!narrow && <th>Key</th>}
      {!narrow && <th>Created</th>}
      <th>Last used</th>
      <th />
    </>
  );
  return (
    <>
      <Intro action={create}>
        Applications send a key as <span class="mono">Authorization: Bearer re_…</span>. Give each application its own, so one can be revoked without touching the others.
      </Intro>
      <Loaded state={keys}>
        {(l) => (
          <Rows rows={l.data} label="API keys" head={head} empty={<Empty title="No API keys">Create a key to send mail and read the API from your code.</Empty>}>
            {(k) => (
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
            )}
          </Rows>
        )}
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
