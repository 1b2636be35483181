// The dashboard app: who is signed in, the sidebar of sections, the page the path names, and `?` for the
// shortcuts. Every page talks to the box through api.ts only.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import 'uplot/dist/uPlot.min.css';
import { api, session } from './api.ts';
import type { Me } from './session.ts';
import { Loading, toast } from './components/feedback.tsx';
import { Modal } from './components/modal.tsx';
import { navigate, onLinkClick, useLocation } from './router.ts';
import { installShortcuts, shortcutList, useShortcuts } from './shortcuts.ts';
import { Login, Setup } from './pages/signin.tsx';
import { Mailbox } from './pages/mailbox/mailbox.tsx';
import { Overview } from './pages/overview/overview.tsx';
import { Domains } from './pages/domains/domains.tsx';
import { Inboxes } from './pages/inboxes.tsx';
import { Labels } from './pages/labels/labels.tsx';
import { Templates } from './pages/templates/templates.tsx';
import { Developers } from './pages/developers/developers.tsx';
import { Billing } from './pages/billing.tsx';
import { SettingsSection } from './pages/settings-section.tsx';
import { ComposeHost, openCompose } from './pages/compose/compose.tsx';
import { TryBanner } from './try-banner.tsx';
import { Icon } from './icons.tsx';


const SECTIONS: Array<[string, string, (p: { me: Me }) => preact.JSX.Element]> = [
  ['/overview', 'Overview', Overview],
  ['/domains', 'Domains', Domains],
  ['/inboxes', 'Inboxes', Inboxes],
  ['/labels', 'Labels and rules', Labels],
  ['/templates', 'Templates', Templates],
  ['/developers', 'Developers', Developers],
  ['/billing', 'Billing', Billing],
  ['/settings', 'Settings', SettingsSection],
];

function App() {
  const { path } = useLocation();
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [navOpen, setNavOpen] = useState(false);
  const [help, setHelp] = useState(false);

  const whoAmI = async () => {
    try {
      setMe(await api<Me>('/profile', { quiet: true }));
    } catch {
      setMe(null);
      const { needed } = await api<{ needed: boolean }>('/setup').catch(() => ({ needed: false }));
      if (!['/login', '/setup'].includes(location.pathname)) navigate(needed ? '/setup' : '/login', true);
    }
  };
  useEffect(() => {
    session.onExpired = () => {
      setMe(null);
      navigate('/login', true);
    };
    void whoAmI();
  }, []);
  useEffect(() => setNavOpen(false), [path]);
  // The drawer (phone width) closes on Escape, as a menu does (a no-op while it is closed).
  useEffect(() => {
    const esc = (e: KeyboardEvent) => e.key === 'Escape' && setNavOpen(false);
    addEventListener('keydown', esc);
    return () => removeEventListener('keydown', esc);
  }, []);
  useShortcuts([{ key: '?', label: 'Show these shortcuts', run: () => setHelp((h) => !h) }], []);

  if (path === '/setup') return <Setup onDone={whoAmI} />;
  if (me === undefined) return <Loading label="Opening" />;
  if (me === null || path === '/login') return <Login onDone={whoAmI} />;
  if (path === '/') {
    navigate('/mail', true);
    return null;
  }
  const section = SECTIONS.find(([prefix]) => path === prefix || path.startsWith(`${prefix}/`));
  const Current = section?.[2];
  return (
    <div class="shell" onClick={onLinkClick}>
      <button class="button menu-toggle" aria-label="Menu" aria-expanded={navOpen} onClick={() => setNavOpen(!navOpen)}>
        <Icon name="menu" />
      </button>
      <nav class={`nav ${navOpen ? 'open' : ''}`} aria-label="Sections">
        <a class="brand" href="/mail">
          <span class="brand-mark" aria-hidden="true" /> Mailwright
        </a>
        {me.tryMode && <TryBanner />}
        <button class="button primary" onClick={() => openCompose({})}>
          Compose
        </button>
        <Mailbox.Nav />
        <div class="section">Box</div>
        {SECTIONS.map(([href, label]) => (
          <a href={href} class={path.startsWith(href) ? 'active' : ''}>
            {label}
          </a>
        ))}
        <div class="spacer" />
        <div class="muted" style={{ padding: '8px 10px', fontSize: '12px' }}>
          {me.user.email}
        </div>
        <button
          class="link"
          onClick={async () => {
            await api('/auth/logout', { method: 'POST', body: {} });
            setMe(null);
            navigate('/login');
          }}
        >
          Sign out
        </button>
      </nav>
      <main class="main">{path.startsWith('/mail') ? <Mailbox /> : Current ? <Current me={me} /> : <NotFound />}</main>
      <ComposeHost me={me} />
      <toast.Toast />
      {help && (
        <Modal title="Keyboard shortcuts" onClose={() => setHelp(false)}>
          <table class="table">
            <tbody>
              {shortcutList().map((s) => (
                <tr>
                  <td>
                    <span class="kbd">{s.key}</span>
                  </td>
                  <td>{s.label}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Modal>
      )}
    </div>
  );
}

function NotFound() {
  return (
    <section class="page">
      <h1>Not here</h1>
      <p class="muted">
        This page does not exist. <a href="/mail">Go to the mailbox</a>.
      </p>
    </section>
  );
}

installShortcuts();
render(<App />, document.getElementById('app')!);
