// The reading pane's label menu: tick labels on and off, or type a new one. Taking a label off offers Undo;
// Escape closes the menu, back on its button.
import { useRef, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { toast } from '../../components/feedback.tsx';
import { messageOf, useLoad } from '../../components/load.ts';
import type { Email, Label } from './model.ts';
import { Icon } from '../../icons.tsx';

export function LabelPicker({ email, onDone }: { email: Email; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const labels = useLoad(async () => (open ? (await api<{ data: Label[] }>('/labels')).data : []), [open]);
  const has = new Set(email.labels.map((l) => l.id));
  const change = async (body: Record<string, unknown>) => {
    try {
      await api(`/emails/${email.id}/labels`, { body });
      onDone();
      return true;
    } catch (err) {
      toast(messageOf(err));
      return false;
    }
  };
  // Undo puts the label back; a bucket label archives what it is put on, so mail that was in the Inbox returns there.
  const removeLabel = async (l: Label) => {
    const inInbox = email.direction === 'in' && !email.archivedAt;
    if (!(await change({ remove: [l.id] }))) return;
    toast(`Removed the label ${l.name}`, {
      label: 'Undo',
      run: () =>
        void (async () => {
          await api(`/emails/${email.id}/labels`, { body: { add: [l.id], create: false } });
          if (l.skipInbox && inInbox) await api(`/emails/${email.id}`, { method: 'PATCH', body: { archived: false } });
          toast('Undone');
          onDone();
        })().catch((err: unknown) => toast(messageOf(err))),
    });
  };
  return (
    <span style={{ position: 'relative' }}>
      <button ref={button} class="button small" onClick={() => setOpen(!open)} aria-expanded={open}>
        Labels <Icon name="chevronDown" />
      </button>
      {open && (
        <div
          class="card"
          style={{ position: 'absolute', zIndex: '10', minWidth: '220px', padding: '8px', top: '32px' }}
          onKeyDown={(ev) => {
            if (ev.key !== 'Escape') return;
            ev.stopPropagation();
            setOpen(false);
            button.current?.focus();
          }}
        >
          {(labels.data ?? []).map((l) => (
            <label class="row" style={{ padding: '3px 4px' }}>
              <input type="checkbox" checked={has.has(l.id)} onChange={() => (has.has(l.id) ? removeLabel(l) : change({ add: [l.id] }))} />
              <span class="label-dot" style={{ background: l.color }} />
              {l.name}
            </label>
          ))}
          <form
            onSubmit={(ev) => {
              ev.preventDefault();
              const name = new FormData(ev.currentTarget as HTMLFormElement).get('name') as string;
              if (name.trim()) void change({ add: [name.trim()], create: true }).then(() => setOpen(false));
            }}
          >
            <input name="name" placeholder="New label…" aria-label="New label" />
          </form>
        </div>
      )}
    </span>
  );
}
