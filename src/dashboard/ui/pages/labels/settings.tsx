// A label's settings: its name (renaming keeps its mail and rules), colour and the bucket switch, which may
// also archive the received mail it already holds. Saved on request, with Undo until then.
import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { useAction } from '../../components/action.ts';
import { toast } from '../../components/feedback.tsx';
import { Field, FormError } from '../../components/forms.tsx';
import type { Label } from './model.ts';
import { BucketCheckbox, ColorPicker } from './parts.tsx';

export function LabelSettings({ label, onDone }: { label: Label; onDone: () => void }) {
  const [name, setName] = useState(label.name);
  const [color, setColor] = useState(label.color);
  const [bucket, setBucket] = useState(label.skipInbox);
  const [archiveExisting, setArchiveExisting] = useState(true);
  const { busy, error, setError, run } = useAction('inline');
  const changed = name.trim() !== label.name || color !== label.color || bucket !== label.skipInbox;
  const save = () => {
    const body: Record<string, unknown> = {};
    if (name.trim() !== label.name) body.name = name.trim();
    if (color !== label.color) body.color = color;
    if (bucket !== label.skipInbox) {
      body.skip_inbox = bucket;
      if (bucket) body.apply_to_existing = archiveExisting;
    }
    // Saved, the label comes back changed and this form anew (its key): it stays busy until then.
    return run(async () => {
      await api(`/labels/${label.id}`, { method: 'PATCH', body });
      toast(bucket && !label.skipInbox && archiveExisting && label.totalCount ? 'Saved: its received mail is being archived' : 'Label saved');
      onDone();
    }, true);
  };
  return (
    <section class="card" aria-label="Label settings">
      <h2>Settings</h2>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          if (changed) void save();
        }}
      >
        <Field label="Name" hint="Renaming keeps its emails and rules. Use / to nest.">
          <input name="name" value={name} required maxLength={100} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Colour">
          <ColorPicker value={color} onChange={(c) => setColor(c ?? label.color)} />
        </Field>
        <BucketCheckbox checked={bucket} onChange={(e) => setBucket(e.currentTarget.checked)} />
        {bucket && !label.skipInbox && label.totalCount > 0 && (
          <label class="row" style={{ paddingLeft: '24px' }}>
            <input type="checkbox" checked={archiveExisting} onChange={(e) => setArchiveExisting(e.currentTarget.checked)} />
            <span>Also archive the received mail already in it</span>
          </label>
        )}
        <FormError error={error} />
        <div class="row">
          <button class="button primary" type="submit" disabled={!changed || busy}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
          {changed && !busy && (
            <button
              class="button"
              type="button"
              onClick={() => {
                setName(label.name);
                setColor(label.color);
                setBucket(label.skipInbox);
                setError(null);
              }}
            >
              Undo
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
