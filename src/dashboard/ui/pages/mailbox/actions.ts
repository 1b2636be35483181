// What one keystroke or button does to a message in the mailbox: a PATCH with its notice and an Undo that
// takes it back, moving on to the next message when it leaves the view; spam with its category and importance
// restored exactly; delete for good (asked first, by the caller).
import { api } from '../../api.ts';
import { toast } from '../../components/feedback.tsx';
import { messageOf } from '../../components/load.ts';
import { navigate } from '../../router.ts';
import type { Summary } from './model.ts';
import type { Act } from './reader.tsx';

/** `base` and `searchQs`: where the view is; `rows` and `index`: the list and where the open message is in it. */
export function mailActions({ base, searchQs, rows, index }: { base: string; searchQs: string; rows: Summary[]; index: number }) {
  // A message that left the view: the next one in the list is shown, or the list. One not in the list stays shown.
  const leave = (id: string) => {
    if (index < 0) return;
    const next = rows[index + 1] ?? rows[index - 1];
    navigate(`${next && next.id !== id ? `${base}/${next.id}` : base}${searchQs}`, true);
  };
  // `undo`: the PATCHes that take the change back, in order, offered by the toast.
  const act: Act = async (id, patch, done, leaves, undo) => {
    try {
      await api(`/emails/${id}`, { method: 'PATCH', body: patch });
      toast(done, undo && { label: 'Undo', run: () => void revert(id, undo, base) });
      if (leaves) leave(id);
    } catch (err) {
      toast(messageOf(err));
    }
  };
  const revert = async (id: string, undo: Array<Record<string, unknown>>, from: string) => {
    try {
      for (const patch of undo) await api(`/emails/${id}`, { method: 'PATCH', body: patch });
      toast('Undone');
      // Back to the message, unless the view was left meanwhile.
      if (location.pathname.startsWith(from)) navigate(`${from}/${id}`, true);
    } catch (err) {
      toast(messageOf(err));
    }
  };
  const trash = (id: string) => act(id, { trashed: true }, 'Moved to Trash', true, [{ trashed: false }]);
  const restore = (id: string) => act(id, { trashed: false }, 'Restored from the Trash', true, [{ trashed: true }]);
  const deleteForever = async (id: string) => {
    await api(`/emails/${id}`, { method: 'DELETE' });
    toast('Deleted forever');
    leave(id);
  };
  /** Spam and back, undone exactly for the message: its category and importance as they were. */
  const spam = (r: Pick<Summary, 'id' | 'category' | 'important'>) => {
    const undo = [{ category: r.category ?? 'primary' }, ...(r.important ? [{ important: true, learn: false }] : [])];
    return r.category === 'spam' ? act(r.id, { category: 'primary' }, 'Not spam: the sender is learned', true, [{ category: 'spam' }]) : act(r.id, { category: 'spam' }, 'Moved to Spam', true, undo);
  };
  return { act, trash, restore, deleteForever, spam };
}
