// The Trash's two ways to delete for good, each asked first: one message (its reading pane's button, or `#` in
// the Trash view) and the whole Trash. Moving mail in and out of the Trash is a PATCH with an Undo (mailbox.tsx).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { messageOf, Modal } from '../../components/feedback.tsx';
import { ConfirmButton } from '../domains/domains.tsx';

const dangerFill = { background: 'var(--bad)', borderColor: 'var(--bad)', color: '#fff' };

/** Asks before deleting one message for good; `action` runs on yes, its error is shown here. */
export function DeleteForever({ action, onClose }: { action: () => Promise<void>; onClose: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // The dialog opens from the keyboard too (#): the focus goes to the safe answer, so Enter keeps the message.
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => cancel.current?.focus(), []);
  return (
    <Modal title="Delete forever?" onClose={() => !busy && onClose()}>
      <div style={{ display: 'grid', gap: '16px' }}>
        <div>The message is deleted from the box for good, with its files and its history. This cannot be undone.</div>
        {error && (
          <p class="form-error" role="alert">
            {error}
          </p>
        )}
        <div class="row" style={{ justifyContent: 'flex-end' }}>
          <button ref={cancel} type="button" class="button" disabled={busy} onClick={onClose}>
            Cancel
          </button>
          <button
            type="button"
            class="button"
            style={dangerFill}
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              setError(null);
              try {
                await action();
                onClose();
              } catch (err) {
                setError(messageOf(err));
                setBusy(false);
              }
            }}
          >
            {busy ? 'Working…' : 'Delete forever'}
          </button>
        </div>
      </div>
    </Modal>
  );
}

/** Empty Trash, after asking; `done` hears how many messages went. */
export function EmptyTrash({ done }: { done: (deleted: number) => void }) {
  return (
    <ConfirmButton label="Empty Trash" title="Empty the Trash?" confirm="Delete forever" action={async () => done((await api<{ deleted: number }>('/emails/trash/empty', { method: 'POST', body: {} })).deleted)}>
      Every message in the Trash is deleted from the box for good, with its files and its history. This cannot be undone.
    </ConfirmButton>
  );
}
