// A page's frame: its title (also the tab's) and actions, the link back to the list it came from, what a page
// of one thing shows before it has the thing, and whether it is laid out for a phone.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ErrorBox, Loading } from './feedback.tsx';

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

/** The way back to the list: a line of its own, or `inline` in the row of the page's marks. */
export function BackLink({ href, children, style, inline }: { href: string; children: string; style?: Record<string, string>; inline?: boolean }) {
  if (inline)
    return (
      <a href={href} class="muted" style={{ display: 'inline-block', marginBottom: '8px' }}>
        {`← ${children}`}
      </a>
    );
  return (
    <p style={style ?? { margin: '-10px 0 16px' }}>
      <a href={href} class="muted">
        ← {children}
      </a>
    </p>
  );
}

/**
 * A page of one thing before it has it: the way back, then the load's error (with Try again) or a spinner;
 * a Page of its own with `title`, else inside the page that shows it.
 */
export function Pending({ title, state, back, label }: { title?: string; state: { error: string | null; reload: () => void }; back: ComponentChildren; label: string }) {
  const body = (
    <>
      {back}
      {state.error ? <ErrorBox message={state.error} retry={state.reload} /> : <Loading label={label} />}
    </>
  );
  return title ? <Page title={title}>{body}</Page> : body;
}

/** True at phone widths, where the stylesheet hides table columns after the third: tables there show fewer, fuller cells. */
export function useNarrow(): boolean {
  const query = '(max-width: 760px)';
  const [narrow, setNarrow] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const m = matchMedia(query);
    const on = () => setNarrow(m.matches);
    m.addEventListener('change', on);
    on();
    return () => m.removeEventListener('change', on);
  }, []);
  return narrow;
}
