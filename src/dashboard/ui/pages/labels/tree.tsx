// The Labels page: the labels as a tree of their `/` names, each with its colour, counts, rules and the bucket
// mark, and making a new one (name, colour or Auto, bucket).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, Empty, ErrorBox, Loading, toast } from '../../components/feedback.tsx';
import { Field, Form } from '../../components/forms.tsx';
import { Modal } from '../../components/modal.tsx';
import { Page } from '../../components/page.tsx';
import { Icon } from '../../icons.tsx';
import { navigate } from '../../router.ts';
import { plural, tree, type Label, type LabelsState } from './model.ts';
import { BucketCheckbox, ColorPicker, Filing } from './parts.tsx';

export function LabelTree({ labels }: { labels: LabelsState }) {
  const [creating, setCreating] = useState(false);
  useEffect(() => void (document.title = 'Labels · Mailwright'), []);
  const newButton = (
    <button class="button primary" onClick={() => setCreating(true)}>
      New label
    </button>
  );
  return (
    <Page title="Labels and rules" actions={newButton}>
      <p class="muted" style={{ margin: '-8px 0 16px' }}>
        Labels sort mail into folders; rules put new mail in them as it arrives or leaves. A bucket label keeps its mail out of the Inbox.
      </p>
      {labels.error ? (
        <ErrorBox message={labels.error} retry={labels.reload} />
      ) : !labels.data ? (
        <Loading label="Loading labels" />
      ) : labels.data.data.length === 0 ? (
        <Empty title="No labels yet">
          <p style={{ margin: '0 0 10px' }}>
            Make one for a client, a project or receipts, then add a rule so matching mail files itself. Use <code>/</code> to nest: <code>Clients/Acme</code>.
          </p>
          <button class="button primary" onClick={() => setCreating(true)}>
            Create a label
          </button>
        </Empty>
      ) : (
        <>
          <Filing pending={labels.data.mailbox.resortPending} />
          <div class="card" role="list" aria-label="Labels" style={{ padding: 0, overflow: 'hidden' }}>
            {tree(labels.data.data).map((n, i) => {
              const l = n.label;
              const indent = { paddingLeft: `${16 + n.depth * 22}px`, borderTop: i ? '1px solid var(--line)' : '0' };
              if (!l)
                return (
                  <div role="listitem" class="row muted" style={{ padding: '10px 16px', ...indent }}>
                    <Icon name="chevronRight" /> {n.leaf}
                    <small>(folder)</small>
                  </div>
                );
              return (
                <a role="listitem" href={`/labels/${l.id}`} data-label={l.name} class="row" style={{ padding: '10px 16px', ...indent, color: 'var(--text)', textDecoration: 'none', gap: '8px' }}>
                  <span class="label-dot" style={{ background: l.color, margin: 0, flex: '0 0 auto' }} />
                  <span class="grow" style={{ minWidth: '120px' }}>
                    <strong style={{ fontWeight: 600 }} title={l.name}>
                      {n.leaf}
                    </strong>
                  </span>
                  {l.skipInbox && (
                    <span title="Its received mail skips the Inbox">
                      <Badge tone="info">Bucket</Badge>
                    </span>
                  )}
                  {l.rules.length > 0 && <span class="muted" style={{ fontSize: '13px' }}>{plural(l.rules.length, 'rule')}</span>}
                  <span class="muted" style={{ fontSize: '13px', minWidth: '76px', textAlign: 'right' }}>
                    {plural(l.totalCount, 'email')}
                  </span>
                  {l.unreadCount > 0 ? <Badge tone="info">{`${l.unreadCount} unread`}</Badge> : null}
                </a>
              );
            })}
          </div>
        </>
      )}
      {creating && (
        <NewLabel
          onClose={() => setCreating(false)}
          onDone={(made) => {
            setCreating(false);
            labels.reload();
            navigate(`/labels/${made.id}`);
          }}
        />
      )}
    </Page>
  );
}

function NewLabel({ onClose, onDone }: { onClose: () => void; onDone: (l: Label) => void }) {
  const [color, setColor] = useState<string | null>(null);
  return (
    <Modal title="New label" onClose={onClose}>
      <Form
        submit="Create label"
        action={async (form) => {
          const made = await api<Label>('/labels', { body: { name: String(form.get('name')).trim(), ...(color ? { color } : {}), skip_inbox: form.get('skip_inbox') === 'on' } });
          toast(`Created ${made.name}`);
          onDone(made);
        }}
      >
        <Field label="Name" hint="Use / to nest it under another: Clients/Acme. At most 100 characters, no commas.">
          <input name="name" required maxLength={100} autoFocus placeholder="Receipts" />
        </Field>
        <Field label="Colour">
          <ColorPicker value={color} onChange={setColor} auto />
        </Field>
        <BucketCheckbox name="skip_inbox" />
      </Form>
    </Modal>
  );
}
