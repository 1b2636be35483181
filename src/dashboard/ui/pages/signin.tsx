// Signing in, and the first start: the owner is created with the one-time token from the setup link that
// `mailwright setup link` prints (in the URL's fragment, so it never reaches a server log or a Referer header).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Field, Form } from '../components/forms.tsx';
import { navigate } from '../router.ts';

export function Login({ onDone }: { onDone: () => void }) {
  return (
    <div class="center">
      <div class="card">
        <h1>Sign in</h1>
        <p class="muted">to your Mailwright box</p>
        <Form
          submit="Sign in"
          action={async (f) => {
            await api('/auth/login', { body: { email: f.get('email'), password: f.get('password') } });
            navigate('/mail', true);
            onDone();
          }}
        >
          <Field label="E-mail">
            <input name="email" type="email" autocomplete="username" required autofocus />
          </Field>
          <Field label="Password">
            <input name="password" type="password" autocomplete="current-password" required />
          </Field>
        </Form>
      </div>
    </div>
  );
}

export function Setup({ onDone }: { onDone: () => void }) {
  const [token, setToken] = useState(() => location.hash.slice(1));
  useEffect(() => {
    const read = () => setToken(location.hash.slice(1));
    addEventListener('hashchange', read);
    return () => removeEventListener('hashchange', read);
  }, []);
  if (!token) {
    return (
      <div class="center">
        <div class="card">
          <h1>Set up this box</h1>
          <p>
            This box has no owner yet. On the server, run <code>mailwright setup link</code> as the user Mailwright runs as, and open the link it
            prints. It works once, for 24 hours.
          </p>
        </div>
      </div>
    );
  }
  return (
    <div class="center">
      <div class="card">
        <h1>Welcome to Mailwright</h1>
        <p class="muted">Create the owner of this box. You will sign in with this address and passphrase.</p>
        <Form
          submit="Create the owner"
          action={async (f) => {
            if (f.get('password') !== f.get('again')) throw new Error('The two passphrases differ');
            await api('/setup', { body: { token, email: f.get('email'), password: f.get('password') } });
            history.replaceState(null, '', '/mail');
            navigate('/mail', true);
            onDone();
          }}
        >
          <Field label="Your e-mail address">
            <input name="email" type="email" autocomplete="username" required autofocus />
          </Field>
          <Field label="Passphrase" hint="At least 12 characters; a few unrelated words make a strong one.">
            <input name="password" type="password" autocomplete="new-password" minLength={12} required />
          </Field>
          <Field label="Passphrase again">
            <input name="again" type="password" autocomplete="new-password" required />
          </Field>
        </Form>
      </div>
    </div>
  );
}
