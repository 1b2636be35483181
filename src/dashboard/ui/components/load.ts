// Loading what a page shows: a load's state (data, error, loading, reload), a 404 as a value, and the words of
// an error. The states are drawn by feedback.tsx (Loaded, ErrorBox, Loading).
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api.ts';

export const messageOf = (err: unknown) => (err instanceof ApiError ? err.message : err instanceof Error ? err.message : String(err));

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

/** What useLoad gives, for a component handed a load. */
export type Load<T> = ReturnType<typeof useLoad<T>>;

/** A 404 as a value, so a page can say the thing is gone instead of offering to try again. */
export const GONE = 'gone' as const;
export const orGone = <T,>(p: Promise<T>): Promise<T | typeof GONE> =>
  p.catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) return GONE;
    throw err;
  });
