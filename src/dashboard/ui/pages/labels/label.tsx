// A label's page: its colour and counts, its settings (settings.tsx) beside its rules (rules.tsx), opening its
// mail, and deleting it (its mail keeps everything but the label; its rules go with it).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, Empty, toast } from '../../components/feedback.tsx';
import { Form } from '../../components/forms.tsx';
import { Modal } from '../../components/modal.tsx';
import { BackLink, Page, Pending } from '../../components/page.tsx';
import { navigate } from '../../router.ts';
import { plural, type Label, type LabelsState } from './model.ts';
import { Filing } from './parts.tsx';
import { Rules } from './rules.tsx';
import { LabelSettings } from './settings.tsx';

export function LabelPage({ id, labels }: { id: string; labels: LabelsState }) {
  const [deleting, setDeleting] = useState(false);
  const label = labels.data?.data.find((l) => l.id === id || l.name.toLowerCase() === id.toLowerCase());
  useEffect(() => void (document.title = `${label?.name ?? 'Label'} · Mailwright`), [label?.name]);
  const back = (
    <BackLink href="/labels" inline>
      Labels
    </BackLink>
  );
  if (!labels.data) return <Pending title="Label" state={labels} back={back} label="Loading the label" />;
  if (!label)
    return (
      <Page title="Label">
        {back}
        <Empty title="This label does not exist">
          It may have been deleted. <a href="/labels">See every label</a>.
        </Empty>
      </Page>
    );
  return (
    <Page
      title={label.name}
      actions={
        <>
          <a class="button" href={`/mail/label/${label.id}`}>
            Open in mailbox
          </a>
          <button class="button danger" onClick={() => setDeleting(true)}>
            Delete
          </button>
        </>
      }
    >
      <div class="row" style={{ marginTop: '-12px', marginBottom: '14px', gap: '8px' }}>
        {back}
        <span class="grow" />
        <span class="label-dot" style={{ background: label.color, margin: 0 }} />
        <span class="muted">
          {plural(label.totalCount, 'email')} · {label.unreadCount} unread
        </span>
        {label.skipInbox && <Badge tone="info">Bucket</Badge>}
      </div>
      <Filing pending={labels.data.mailbox.resortPending} />
      <div class="split" style={{ alignItems: 'start' }}>
        <LabelSettings key={`${label.id}:${label.name}:${label.color}:${label.skipInbox}`} label={label} onDone={labels.reload} />
        <Rules label={label} onChange={labels.reload} />
      </div>
      {deleting && (
        <DeleteLabel
          label={label}
          onClose={() => setDeleting(false)}
          onDone={() => {
            setDeleting(false);
            navigate('/labels');
            labels.reload();
          }}
        />
      )}
    </Page>
  );
}

function DeleteLabel({ label, onClose, onDone }: { label: Label; onClose: () => void; onDone: () => void }) {
  return (
    <Modal title={`Delete ${label.name}?`} onClose={onClose}>
      <Form
        submit="Delete label"
        action={async () => {
          await api(`/labels/${label.id}`, { method: 'DELETE' });
          toast(`Deleted ${label.name}`);
          onDone();
        }}
      >
        <p style={{ margin: 0 }}>
          The {plural(label.totalCount, 'email')} in it stay where they are and no longer carry it.
          {label.rules.length > 0 && ` Its ${plural(label.rules.length, 'rule')} ${label.rules.length === 1 ? 'is' : 'are'} deleted with it, so new mail is no longer filed.`}
        </p>
      </Form>
    </Modal>
  );
}
