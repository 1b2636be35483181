// Settings: who is signed in and to which workspace (GET /profile), changing the passphrase, and where: the
// user's live browser sessions (GET /sessions), this one marked, each revocable (DELETE /sessions/:id) and this
// one signed out.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Me } from '../session.ts';
import { api } from '../api.ts';
import { Badge, Empty, Loaded, toast } from '../components/feedback.tsx';
import { CopyButton } from '../components/forms.tsx';
import { messageOf, useLoad } from '../components/load.ts';
import { Page } from '../components/page.tsx';
import { ChangePassphrase } from './change-passphrase.tsx';
import { SpamLists } from './spam-lists.tsx';

interface Profile {
  user: { id: string; email: string; createdAt: string };
  workspace: { id: string; name: string; createdAt: string };
  access: { tier: string };
}
interface Session {
  id: string;
  createdAt: string;
  expiresAt: string;
  current: boolean;
}

const dateTime = (iso: string) => new Date(iso).toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });

export function Settings(_: { me: Me }) {
  const profile = useLoad(() => api<Profile>('/profile'));
  // A passphrase change signs out the other browsers: the list is loaded again.
  const [changes, setChanges] = useState(0);
  return (
    <Page title="Settings" actions={<a class="button" href="/settings/audit">Audit log</a>}>
      <Loaded state={profile}>
        {(p) => (
          <div class="split" style={{ marginBottom: '20px' }}>
            <div class="card" aria-label="Signed in as">
              <h2>You</h2>
              <Fact label="E-mail">{p.user.email}</Fact>
              <Fact label="Member since">{dateTime(p.user.createdAt)}</Fact>
            </div>
            <div class="card" aria-label="Workspace">
              <h2>Workspace</h2>
              <Fact label="Name">{p.workspace.name}</Fact>
              <Fact label="Id">
                <span class="row" style={{ gap: '8px' }}>
                  <code style={{ wordBreak: 'break-all' }}>{p.workspace.id}</code>
                  <CopyButton text={p.workspace.id} />
                </span>
              </Fact>
              <Fact label="Plan tier">{p.access.tier.charAt(0).toUpperCase() + p.access.tier.slice(1)}</Fact>
            </div>
          </div>
        )}
      </Loaded>
      <ChangePassphrase onChanged={() => setChanges((n) => n + 1)} />
      <SpamLists />
      <Sessions key={changes} />
    </Page>
  );
}

function Fact({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div style={{ display: 'grid', gridTemplateColumns: '120px 1fr', gap: '8px', padding: '4px 0', alignItems: 'baseline' }}>
      <span class="muted">{label}</span>
      <span style={{ minWidth: 0, wordBreak: 'break-word' }}>{children}</span>
    </div>
  );
}

function Sessions() {
  const sessions = useLoad(() => api<{ data: Session[] }>('/sessions'));
  const [busy, setBusy] = useState<string | null>(null);
  const revoke = async (ids: string[], done: string) => {
    setBusy(ids.length === 1 ? ids[0] : 'others');
    try {
      for (const id of ids) await api(`/sessions/${id}`, { method: 'DELETE' });
      toast(done);
    } catch (err) {
      toast(messageOf(err));
    } finally {
      setBusy(null);
      sessions.reload();
    }
  };
  const signOut = async () => {
    setBusy('current');
    try {
      await api('/auth/logout', { body: {} });
    } finally {
      // A full load: nothing of this session stays in memory.
      location.assign('/login');
    }
  };
  return (
    <div class="card" aria-label="Signed-in browsers">
      <Loaded state={sessions}>
        {({ data }) => {
          const others = data.filter((s) => !s.current);
          const rows = [...data.filter((s) => s.current), ...others];
          return (
            <>
              <div class="row" style={{ marginBottom: '6px' }}>
                <h2 class="grow" style={{ margin: 0 }}>
                  Signed-in browsers
                </h2>
                {others.length > 1 && (
                  <button class="button small danger" disabled={busy !== null} onClick={() => revoke(others.map((s) => s.id), 'Every other browser is signed out')}>
                    Sign out all others
                  </button>
                )}
              </div>
              <p class="muted" style={{ margin: '0 0 12px', fontSize: '13px' }}>
                Each sign-in opens a session of its own. Revoke one you do not recognise: that browser is signed out at its next request.
              </p>
              {data.length === 0 ? (
                <Empty title="No live sessions" />
              ) : (
                <ul aria-label="Sessions" style={{ display: 'grid', gap: '8px', margin: 0, padding: 0, listStyle: 'none' }}>
                  {rows.map((s) => (
                    <li class="row" aria-current={s.current ? 'true' : undefined} style={{ border: '1px solid var(--line)', borderRadius: '8px', padding: '10px 12px', background: s.current ? 'var(--accent-soft)' : undefined }}>
                      <div class="grow" style={{ minWidth: '200px' }}>
                        <div class="row" style={{ gap: '8px' }}>
                          <span style={{ fontWeight: 600 }}>Signed in {dateTime(s.createdAt)}</span>
                          {s.current && <Badge tone="info">This browser</Badge>}
                        </div>
                        <div class="muted" style={{ fontSize: '13px' }}>
                          Expires {dateTime(s.expiresAt)} · <span class="mono">…{s.id.slice(-8)}</span>
                        </div>
                      </div>
                      {s.current ? (
                        <button class="button small" disabled={busy !== null} onClick={signOut}>
                          Sign out this browser
                        </button>
                      ) : (
                        <button class="button small danger" disabled={busy !== null} onClick={() => revoke([s.id], 'Session revoked')} aria-label={`Revoke the session signed in ${dateTime(s.createdAt)}`}>
                          {busy === s.id ? 'Revoking…' : 'Revoke'}
                        </button>
                      )}
                    </li>
                  ))}
                </ul>
              )}
            </>
          );
        }}
      </Loaded>
    </div>
  );
}
