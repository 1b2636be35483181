// The dashboard's building blocks: every page is made of these, so states (loading, empty, error) and
// controls look and behave the same everywhere.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api.ts';
import { useFocusTrap } from '../focus-trap.ts';
import { Icon } from '../icons.tsx';

/** Loads data for a page: `{data, error, loading, reload}`; reloads when `deps` change. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data: T | null; error: string | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (err: unknown) => live && setState({ data: null, error: messageOf(err), loading: false }),
    );
    return () => void (live = false);
  }, [...deps, n]);
  return { ...state, reload: () => setN((x) => x + 1) };
}

export const messageOf = (err: unknown) => (err instanceof ApiError ? err.message : err instanceof Error ? err.message : String(err));

export function Loading({ label = 'Loading' }: { label?: string }) {
  return (
    <div class="state" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> {label}…
    </div>
  );
}

export function ErrorBox({ message, retry }: { message: string; retry?: () => void }) {
  return (
    <div class="state error" role="alert">
      <strong>Something went wrong.</strong> {message}
      {retry && (
        <button class="button small" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="state empty">
      <strong>{title}</strong>
      {children && <div>{children}</div>}
    </div>
  );
}

/** Renders the three states of a load, then `children(data)`. */
export function Loaded<T>({ state, children }: { state: ReturnType<typeof useLoad<T>>; children: (data: T) => ComponentChildren }) {
  if (state.error) return <ErrorBox message={state.error} retry={state.reload} />;
  if (state.data === null) return <Loading />;
  return <>{children(state.data)}</>;
}

export function Page({ title, actions, children }: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => void (document.title = `${title} · Mailwright`), [title]);
  return (
    <section class="page">
      <header class="page-head">
        <h1>{title}</h1>
        {actions && <div class="actions">{actions}</div>}
      </header>
      {children}
    </section>
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

/** A dialog over the page: focus moves into it and stays until it closes (focus-trap.ts), Escape closes it. */
export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const dialog = useFocusTrap<HTMLDivElement>(onClose);
  return (
    <div class="modal-back" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div ref={dialog} class="modal" role="dialog" aria-modal="true" aria-label={title} tabIndex={-1}>
        <header data-dialog-bar>
          <h2>{title}</h2>
          <button class="icon" aria-label="Close" onClick={onClose}>
            <Icon name="close" />
          </button>
        </header>
        {children}
      </div>
    </div>
  );
}

/** A form whose submit runs `action`, shows its error, and disables itself meanwhile. */
export function Form({ action, children, submit, class: cls }: { action: (data: FormData) => Promise<void>; children: ComponentChildren; submit: string; class?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <form
      class={cls ?? 'form'}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          await action(new FormData(e.currentTarget as HTMLFormElement));
        } catch (err) {
          setError(messageOf(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      {children}
      {error && (
        <p class="form-error" role="alert">
          {error}
        </p>
      )}
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

export function Badge({ tone = 'neutral', children }: { tone?: 'neutral' | 'good' | 'bad' | 'warn' | 'info'; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}

export const when = (iso: string | null | undefined) => {
  if (!iso) return '';
  const d = new Date(iso);
  const today = new Date();
  return d.toDateString() === today.toDateString() ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : d.toLocaleDateString([], { month: 'short', day: 'numeric', year: d.getFullYear() === today.getFullYear() ? undefined : 'numeric' });
};

export const bytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`);

/** What a notice may offer: one button (Undo) that closes it and runs. */
export interface ToastAction {
  label: string;
  run: () => void;
}

/**
 * A one-line notice that fades: what just happened, with an action when it can be taken back (Undo), shown long
 * enough to reach. `toast.act()` runs the action of the notice on screen (the `z` shortcut).
 */
export const toast = (() => {
  interface Notice {
    text: string;
    action?: ToastAction;
  }
  let set: ((n: Notice | null) => void) | null = null;
  let shown: Notice | null = null;
  const take = () => {
    const action = shown?.action;
    set?.(null);
    action?.run();
  };
  function Toast() {
    const [notice, setNotice] = useState<Notice | null>(null);
    set = setNotice;
    shown = notice;
    useEffect(() => {
      if (!notice) return;
      const t = setTimeout(() => setNotice(null), notice.action ? 8000 : 3500);
      return () => clearTimeout(t);
    }, [notice]);
    return notice ? (
      <div class="toast" role="status">
        <span>{notice.text}</span>
        {notice.action && (
          <button type="button" onClick={take}>
            {notice.action.label}
          </button>
        )}
      </div>
    ) : null;
  }
  return Object.assign((text: string, action?: ToastAction) => set?.({ text, action }), { Toast, act: take });
})();
