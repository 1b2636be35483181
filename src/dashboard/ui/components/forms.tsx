// Forms and their controls: a form whose submit runs an action (busy meanwhile, its error shown), a labelled
// field, the error line, and the copy button beside a value to paste elsewhere.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useAction } from './action.ts';

/** A form whose submit runs `action`, shows its error, and disables itself meanwhile. */
export function Form({ action, children, submit, class: cls }: { action: (data: FormData) => Promise<void>; children: ComponentChildren; submit: string; class?: string }) {
  const { busy, error, run } = useAction('inline');
  return (
    <form
      class={cls ?? 'form'}
      onSubmit={(e) => {
        e.preventDefault();
        const data = new FormData(e.currentTarget as HTMLFormElement);
        void run(() => action(data));
      }}
    >
      {children}
      <FormError error={error} />
      <button class="button primary" type="submit" disabled={busy}>
        {busy ? 'Working…' : submit}
      </button>
    </form>
  );
}

export function Field({ label, hint, children }: { label: string; hint?: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span>{label}</span>
      {children}
      {hint && <small>{hint}</small>}
    </label>
  );
}

/** What went wrong with what was just asked, where it was asked (a form, a dialog, a card). */
export function FormError({ error }: { error: string | null }) {
  if (!error) return null;
  return (
    <p class="form-error" role="alert">
      {error}
    </p>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="button small"
      onClick={async () => {
        await navigator.clipboard?.writeText(text).catch(() => {});
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}
