// How the dashboard tells what is going on, the same on every page: loading, failed (with Try again), empty, a
// status badge, and the one-line notice (toast) with its Undo.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Load } from './load.ts';

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
export function Loaded<T>({ state, children }: { state: Load<T>; children: (data: T) => ComponentChildren }) {
  if (state.error) return <ErrorBox message={state.error} retry={state.reload} />;
  if (state.data === null) return <Loading />;
  return <>{children(state.data)}</>;
}

export type Tone = 'neutral' | 'good' | 'bad' | 'warn' | 'info';

export function Badge({ tone = 'neutral', children }: { tone?: Tone; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}

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
