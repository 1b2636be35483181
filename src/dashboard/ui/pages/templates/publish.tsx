// Publishing a template's draft as its next release (unsaved edits written first, errors with the sample data
// said), and a test send of it through the normal send path, from a verified domain.
import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Empty, Loaded } from '../../components/feedback.tsx';
import { Field, Form } from '../../components/forms.tsx';
import { useLoad } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import type { Me } from '../../session.ts';
import type { Handle, TemplateSummary } from './model.ts';

/** Unsaved edits, written before the draft is used; a refusal stops the action that needs them. */
async function flushed(handle: Handle): Promise<void> {
  if (handle.current && !(await handle.current.flush())) throw new Error('The draft has changes that could not be saved: fix them in the editor first');
}

export function PublishDialog({ template: t, next, handle, onClose, onDone }: { template: TemplateSummary; next: number; handle: Handle; onClose: () => void; onDone: (n: number) => void }) {
  const errors = handle.current?.errors() ?? 0;
  return (
    <Modal title={`Publish v${next}`} onClose={onClose}>
      <Form
        submit={`Publish v${next}`}
        action={async () => {
          await flushed(handle);
          const { version } = await api<{ version: { number: number } }>(`/templates/${t.id}/publish`, { method: 'POST', body: {} });
          onDone(version.number);
        }}
      >
        <p style={{ margin: 0 }}>
          The draft becomes <strong>v{next}</strong>, and every send that names <code>{t.key}</code> uses it from now on. A release never changes: to change it later, start a new draft.
        </p>
        {errors > 0 && (
          <p class="form-error" style={{ margin: 0 }}>
            The preview has {errors} {errors === 1 ? 'error' : 'errors'} with the sample data. Real sends have no sample data: a send missing a required variable is refused.
          </p>
        )}
      </Form>
    </Modal>
  );
}

export function TestSend({ template: t, me, handle, onClose }: { template: TemplateSummary; me: Me; handle: Handle; onClose: () => void }) {
  const identities = useLoad(() => api<{ domains: string[]; addresses: string[] }>('/sending-identities'), []);
  const [sent, setSent] = useState<{ id: string; to: string } | null>(null);
  const from = (ids: { domains: string[]; addresses: string[] }) => {
    const own = ids.addresses.filter((a) => ids.domains.includes(a.slice(a.lastIndexOf('@') + 1).toLowerCase()));
    return own[0] ?? (ids.domains[0] ? `test@${ids.domains[0]}` : '');
  };
  return (
    <Modal title="Send a test" onClose={onClose}>
      <Loaded state={identities}>
        {(ids) =>
          ids.domains.length === 0 ? (
            <Empty title="No verified sending domain">
              Test sends go out like real ones, so they need a domain you have verified. <a href="/domains">Add a domain</a>.
            </Empty>
          ) : sent ? (
            <div class="state" role="status">
              <strong style={{ color: 'var(--text)' }}>Test sent to {sent.to}</strong>
              <span>It is marked as a test and is not counted as a use of the release.</span>
              <div class="row">
                <a class="button small" href={`/mail/sent/${sent.id}`}>
                  Open it in Sent
                </a>
                <button class="button small" onClick={() => setSent(null)}>
                  Send another
                </button>
              </div>
            </div>
          ) : (
            <Form
              submit="Send test"
              action={async (form) => {
                await flushed(handle);
                const to = String(form.get('to'))
                  .split(/[,;\s]+/)
                  .filter(Boolean);
                const res = await api<{ id: string }>(`/templates/${t.id}/test`, { body: { to, from: String(form.get('from')).trim(), data: handle.current?.data() ?? {} } });
                setSent({ id: res.id, to: to.join(', ') });
              }}
            >
              <p class="muted" style={{ margin: 0 }}>
                The draft (or the live release when there is none) with the sample data from the editor, through the normal send path.
              </p>
              <Field label="To" hint="Up to 5 addresses, separated by commas.">
                <input name="to" required defaultValue={me.user.email} />
              </Field>
              <Field label="From" hint={`On a verified domain: ${ids.domains.join(', ')}`}>
                <input name="from" required defaultValue={from(ids)} list="test-from" />
                <datalist id="test-from">
                  {ids.addresses.map((a) => (
                    <option value={a} />
                  ))}
                </datalist>
              </Field>
            </Form>
          )
        }
      </Loaded>
    </Modal>
  );
}
