// Dialogs: the one frame every dialog has (focus kept inside, Escape closes: focus-trap.ts), and the question
// asked before something that cannot be taken back, as a dialog of its own or behind a button.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useFocusTrap } from '../focus-trap.ts';
import { Icon } from '../icons.tsx';
import { useAction } from './action.ts';
import { FormError } from './forms.tsx';

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

const dangerFill = { background: 'var(--bad)', borderColor: 'var(--bad)', color: '#fff' };

/**
 * Asks before `action` runs: what it will do (children), Cancel, and the button that does it. The focus starts
 * on Cancel, so Enter pressed at once keeps things as they are; the action's error shows in the dialog.
 */
export function ConfirmDialog({ title, confirm, action, onClose, danger = true, children }: { title: string; confirm: string; action: () => Promise<unknown>; onClose: () => void; danger?: boolean; children: ComponentChildren }) {
  const { busy, error, run } = useAction('inline');
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => cancel.current?.focus(), []);
  return (
    <Modal title={title} onClose={() => !busy && onClose()}>
      {/* A dialog opened from a table renders inside the button's cell, which may be right-aligned. */}
      <div style={{ display: 'grid', gap: '16px', textAlign: 'left', fontWeight: 'normal' }}>
        <div>{children}</div>
        <FormError error={error} />
        <div class="row" style={{ justifyContent: 'flex-end' }}>
          <button ref={cancel} type="button" class="button" disabled={busy} onClick={onClose}>
            Cancel
          </button>
          <button type="button" class={`button${danger ? '' : ' primary'}`} style={danger ? dangerFill : undefined} disabled={busy} onClick={() => run(action).then((done) => done && onClose())}>
            {busy ? 'Working…' : confirm}
          </button>
        </div>
      </div>
    </Modal>
  );
}

/** A button whose action runs only after a dialog says what it will do (ConfirmDialog). */
export function ConfirmButton({ label, title, confirm, action, children, danger = true, small = true }: { label: string; title: string; confirm: string; action: () => Promise<unknown>; children: ComponentChildren; danger?: boolean; small?: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" class={`button${small ? ' small' : ''}${danger ? ' danger' : ''}`} onClick={() => setOpen(true)}>
        {label}
      </button>
      {open && (
        <ConfirmDialog title={title} confirm={confirm} action={action} danger={danger} onClose={() => setOpen(false)}>
          {children}
        </ConfirmDialog>
      )}
    </>
  );
}
