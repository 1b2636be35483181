// The Trash's two ways to delete for good, each asked first: one message (its reading pane's button, or `#` in
// the Trash view) and the whole Trash. Moving mail in and out of the Trash is a PATCH with an Undo (mailbox.tsx).
import { api } from '../../api.ts';
import { ConfirmButton, ConfirmDialog } from '../../components/modal.tsx';

/**
 * Asks before deleting one message for good; `action` runs on yes, its error is shown here. The dialog opens
 * from the keyboard too (#): the focus starts on Cancel, so Enter keeps the message.
 */
export function DeleteForever({ action, onClose }: { action: () => Promise<void>; onClose: () => void }) {
  return (
    <ConfirmDialog title="Delete forever?" confirm="Delete forever" action={action} onClose={onClose}>
      The message is deleted from the box for good, with its files and its history. This cannot be undone.
    </ConfirmDialog>
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
