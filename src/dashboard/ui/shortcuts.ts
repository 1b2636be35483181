// Keyboard shortcuts, Gmail's where they exist: a page registers its own while it is shown; `?` lists them.
// Keys typed into a field are the field's, except Escape.
import { useEffect } from 'preact/hooks';

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

export function installShortcuts(): void {
  addEventListener('keydown', (e) => {
    const target = e.target as HTMLElement;
    const typing = target.closest('input, textarea, select, [contenteditable="true"]');
    if (e.metaKey || e.ctrlKey || e.altKey) return;
    if (typing && e.key !== 'Escape') return;
    // The most recently shown page wins.
    for (let i = active.length - 1; i >= 0; i--) {
      const hit = active[i].find((s) => s.key === e.key);
      if (hit) {
        e.preventDefault();
        hit.run();
        return;
      }
    }
  });
}
