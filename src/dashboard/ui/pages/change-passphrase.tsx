// Settings' "Change passphrase" card: the current passphrase and a new one twice, sent to POST /auth/password.
// The box judges the new one by the same rule as at setup; on success it signs out every other browser and
// renews this one's session (a fresh cookie), so the page stays signed in.
import { useState } from 'preact/hooks';
import { api, ApiError } from '../api.ts';
import { toast } from '../components/feedback.tsx';
import { Field, Form } from '../components/forms.tsx';

const RULE = 'At least 12 characters with at least 6 different ones; not a common password, a simple sequence or your e-mail address. A few unrelated words make a strong one.';

const signedOut = (n: number) => (n === 0 ? 'no other browser was signed in' : n === 1 ? 'the 1 other signed-in browser was signed out' : `the ${n} other signed-in browsers were signed out`);

/** The box's answer in the words of the form: "new_password: is a simple sequence" reads "The new passphrase is a simple sequence". */
function explain(err: unknown): unknown {
  if (!(err instanceof ApiError)) return err;
  const field = err.body?.error?.errors?.[0] as { path?: string; message?: string } | undefined;
  if (err.code === 'validation_error' && field?.path === 'new_password') return new Error(`The new passphrase ${field.message}`);
  return err;
}

export function ChangePassphrase({ onChanged }: { onChanged: () => void }) {
  // A new key after each change gives a fresh, empty form.
  const [round, setRound] = useState(0);
  return (
    <div class="card" aria-label="Change passphrase" style={{ marginBottom: '20px' }}>
      <h2>Change passphrase</h2>
      <p class="muted" style={{ margin: '0 0 12px', fontSize: '13px' }}>
        Changing it signs out every other browser signed in as you; this one stays signed in.
      </p>
      <Form
        key={round}
        submit="Change passphrase"
        action={async (f) => {
          if (f.get('new_password') !== f.get('again')) throw new Error('The two new passphrases differ');
          let done: { sessionsRevoked: number };
          try {
            done = await api<{ sessionsRevoked: number }>('/auth/password', { body: { current_password: f.get('current_password'), new_password: f.get('new_password') } });
          } catch (err) {
            throw explain(err);
          }
          setRound((r) => r + 1);
          toast(`Passphrase changed; ${signedOut(done.sessionsRevoked)}`);
          onChanged();
        }}
      >
        <Field label="Current passphrase">
          <input name="current_password" type="password" autocomplete="current-password" required />
        </Field>
        <Field label="New passphrase" hint={RULE}>
          <input name="new_password" type="password" autocomplete="new-password" minLength={12} required />
        </Field>
        <Field label="New passphrase again">
          <input name="again" type="password" autocomplete="new-password" required />
        </Field>
      </Form>
    </div>
  );
}
