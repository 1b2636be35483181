// Keeps the keyboard inside an open dialog, as WAI-ARIA's modal dialog pattern asks: focus moves into it when it
// opens, Tab and Shift+Tab cycle through its controls, Escape closes the topmost one, and focus goes back to what
// opened it when it closes. Every dialog is a Modal (components/modal.tsx), which uses this hook.
import { useLayoutEffect, useRef, useState } from 'preact/hooks';

const FOCUSABLE = ['a[href]', 'button:not([disabled])', 'input:not([disabled]):not([type="hidden"])', 'select:not([disabled])', 'textarea:not([disabled])', 'iframe', '[tabindex]:not([tabindex="-1"])', '[contenteditable="true"]'].join(', ');

/** The dialogs open now, the topmost last: only it hears the keyboard. */
const open: HTMLElement[] = [];

/** Whether a dialog is open: the page's shortcuts wait while one is. */
export const dialogOpen = () => open.length > 0;

/** The controls of `root` that Tab reaches, in order (the visible ones). */
export const focusables = (root: HTMLElement) => [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.getClientRects().length > 0);

/** Traps focus in the element the returned ref is put on (focusable itself: tabIndex -1); `onClose` on Escape. */
export function useFocusTrap<T extends HTMLElement>(onClose: () => void) {
  const ref = useRef<T>(null);
  // Taken at the first render, before anything in the dialog can take the focus.
  const [opener] = useState(() => document.activeElement as HTMLElement | null);
  const close = useRef(onClose);
  close.current = onClose;
  // Before the dialog is painted: a key pressed the moment it shows lands in it.
  useLayoutEffect(() => {
    const dialog = ref.current!;
    open.push(dialog);
    // A control the dialog asked for (autofocus), or its first one below the title bar, or the dialog itself.
    if (!dialog.contains(document.activeElement)) {
      const wanted = dialog.querySelector<HTMLElement>('[autofocus]') ?? focusables(dialog).find((el) => !el.closest('[data-dialog-bar]'));
      (wanted ?? dialog).focus();
    }
    const onKey = (e: KeyboardEvent) => {
      if (open[open.length - 1] !== dialog) return;
      if (e.key === 'Escape') {
        e.preventDefault();
        close.current();
        return;
      }
      if (e.key !== 'Tab') return;
      const items = focusables(dialog);
      const at = items.indexOf(document.activeElement as HTMLElement);
      if (e.shiftKey ? at <= 0 : at === -1 || at === items.length - 1) {
        e.preventDefault();
        (items.length ? items[e.shiftKey ? items.length - 1 : 0] : dialog).focus();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      open.splice(open.indexOf(dialog), 1);
      if (opener && opener !== document.body && opener.isConnected) opener.focus();
    };
  }, []);
  return ref;
}
