// What a button does when pressed: one run at a time, `busy` meanwhile (the button says so and is disabled),
// and the error told where the user looks: in a notice, or kept for the form or dialog to show.
import { useState } from 'preact/hooks';
import { toast } from './feedback.tsx';
import { messageOf } from './load.ts';

/** `errors`: where an error goes, a notice (`toast`) or `error` for the caller to show (`inline`). */
export function useAction(errors: 'toast' | 'inline' = 'toast') {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  /**
   * Runs `work`; true when it succeeded. With `stay`, busy stays on after a success: what follows (a reload, a
   * new page, the dialog closing) takes the control away, and it must not flash back meanwhile.
   */
  const run = async (work: () => Promise<unknown>, stay = false): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      await work();
      if (!stay) setBusy(false);
      return true;
    } catch (err) {
      setBusy(false);
      if (errors === 'toast') toast(messageOf(err));
      else setError(messageOf(err));
      return false;
    }
  };
  return { busy, error, setError, run };
}

/** Runs `work` with nothing to show meanwhile, and says how it went in a notice: `done`, or its error. */
export async function tell(work: () => Promise<unknown>, done: string): Promise<void> {
  try {
    await work();
    toast(done);
  } catch (err) {
    toast(messageOf(err));
  }
}
