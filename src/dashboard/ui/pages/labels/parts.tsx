// What the label pages share: the notice that stored mail is being filed, the colour picker, and the bucket
// switch (received mail filed under the label skips the Inbox).
import type { InputHTMLAttributes } from 'preact';
import { PALETTE, plural } from './model.ts';

/** Says that stored mail is being filed in the background, while it is. */
export function Filing({ pending }: { pending: number }) {
  if (!pending) return null;
  return (
    <div class="card row" role="status" style={{ marginBottom: '14px', padding: '10px 14px' }}>
      <span class="spinner" aria-hidden="true" />
      <span>Filing {plural(pending, 'stored email')} in the background. Counts update as it goes.</span>
    </div>
  );
}

export function ColorPicker({ value, onChange, auto }: { value: string | null; onChange: (c: string | null) => void; auto?: boolean }) {
  const swatch = (selected: boolean) => ({ width: '26px', height: '26px', borderRadius: '50%', cursor: 'pointer', padding: 0, border: '2px solid var(--panel)', boxShadow: selected ? '0 0 0 2px var(--text)' : '0 0 0 1px var(--line)' });
  return (
    <div class="row" role="group" aria-label="Colour" style={{ gap: '8px' }}>
      {auto && (
        <button type="button" aria-pressed={value === null} onClick={() => onChange(null)} class="button small" style={{ borderColor: value === null ? 'var(--text)' : undefined }}>
          Auto
        </button>
      )}
      {PALETTE.map((c) => (
        <button type="button" aria-label={`Colour ${c}`} aria-pressed={value === c} title={c} onClick={() => onChange(c)} style={{ ...swatch(value === c), background: c }} />
      ))}
      <label class="row" style={{ gap: '4px' }} title="Any colour">
        <input type="color" aria-label="Custom colour" value={value ?? '#2563eb'} onInput={(e) => onChange(e.currentTarget.value)} style={{ width: '34px', height: '28px', padding: '1px' }} />
      </label>
    </div>
  );
}

/** The bucket checkbox with what it does; `input` is the checkbox's own attributes (a form field, or controlled). */
export function BucketCheckbox(input: InputHTMLAttributes<HTMLInputElement>) {
  return (
    <label class="row" style={{ alignItems: 'flex-start', flexWrap: 'nowrap' }}>
      <input type="checkbox" {...input} style={{ marginTop: '4px' }} />
      <span>
        <strong>Bucket: skip the Inbox</strong>
        <br />
        <small class="muted">Received mail filed here is archived at once and shows only under the label.</small>
      </span>
    </label>
  );
}
