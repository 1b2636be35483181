// The reading pane's label menu: tick labels on and off, or type a new one.
import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { messageOf, toast, useLoad } from '../../components.tsx';
import type { Email, Label } from './model.ts';

export function LabelPicker({ email, onDone }: { email: Email; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const labels = useLoad(async () => (open ? (await api<{ data: Label[] }>('/labels')).data : []), [open]);
  const has = new Set(email.labels.map((l) => l.id));
  const change = async (body: Record<string, unknown>) => {
    try {
      await api(`/emails/${email.id}/labels`, { body });
      onDone();
    } catch (err) {
      toast(messageOf(err));
    }
  };
  return (
    <span style={{ position: 'relative' }}>
      <button class="button small" onClick={() => setOpen(!open)} aria-expanded={open}>
        Labels ▾
      </button>
      {open && (
        <div class="card" style={{ position: 'absolute', zIndex: '10', minWidth: '220px', padding: '8px', top: '32px' }}>
          {(labels.data ?? []).map((l) => (
            <label class="row" style={{ padding: '3px 4px' }}>
              <input type="checkbox" checked={has.has(l.id)} onChange={() => change(has.has(l.id) ? { remove: [l.id] } : { add: [l.id] })} />
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
