// The API keys tab: the workspace's keys (prefix, what each may do, created, last used), revoking one, and
// creating one (key-create.tsx) whose key is shown once in its dialog.
import { useState } from 'preact/hooks';
import { api, type List } from '../../api.ts';
import { Empty, Loaded, toast } from '../../components/feedback.tsx';
import { At } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { ConfirmButton } from '../../components/modal.tsx';
import { useNarrow } from '../../components/page.tsx';
import { Rows } from '../../components/table.tsx';
import type { ApiKey } from './model.ts';
import { Intro } from './parts.tsx';
import { accessOf, CreateKey } from './key-create.tsx';

export function Keys() {
  const keys = useLoad(() => api<List<ApiKey>>('/keys?limit=100'));
  const domains = useLoad(() => api<List<{ id: string; name: string }>>('/domains?limit=100'));
  const domainNames = new Map((domains.data?.data ?? []).map((d) => [d.id, d.name]));
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
      <th>Access</th>
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
                <td data-access={k.permission}>{accessOf(k, domainNames)}</td>
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
