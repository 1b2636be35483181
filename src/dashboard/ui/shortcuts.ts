// Keyboard shortcuts, Gmail's where they exist: a page registers its own while it is shown; `?` lists them.
// Keys typed into a field are the field's, except Escape; an open dialog keeps them all. A message's body is a
// frame of its own: its keys come through keysFrom.
import { useEffect } from 'preact/hooks';
import { dialogOpen } from './focus-trap.ts';

export interface Shortcut {
  key: string;
  label: string;
  run: () => void;
}

const active: Shortcut[][] = [];
export const shortcutList = () => active.flat();

export function useShortcuts(list: Shortcut[], deps: unknown[]): void {
  useEffect(() => {
    active.push(list);
    return () => void active.splice(active.indexOf(list), 1);
  }, deps);
}

/** A key pressed on the page, or in a message's frame (its document is handed to keysFrom). */
function onKey(e: KeyboardEvent): void {
  const target = e.target as HTMLElement;
  // Across documents `instanceof HTMLElement` fails: a message's frame is another document.
  const typing = typeof target.closest === 'function' && target.closest('input, textarea, select, [contenteditable="true"]');
  if (e.metaKey || e.ctrlKey || e.altKey) return;
  if (typing && e.key !== 'Escape') return;
  // An open dialog keeps the keyboard (focus-trap.ts); the page's keys wait until it closes.
  if (dialogOpen()) return;
  // The most recently shown page wins.
  for (let i = active.length - 1; i >= 0; i--) {
    const hit = active[i].find((s) => s.key === e.key);
    if (hit) {
      e.preventDefault();
      hit.run();
      return;
    }
  }
}

export function installShortcuts(): void {
  addEventListener('keydown', onKey);
}

/**
 * The shortcuts in a frame the page can read (a message's body: same origin, no script of its own), whose key
 * presses never reach the page. Returns the function that stops listening.
 */
export function keysFrom(doc: Document): () => void {
  doc.addEventListener('keydown', onKey);
  return () => doc.removeEventListener('keydown', onKey);
}
