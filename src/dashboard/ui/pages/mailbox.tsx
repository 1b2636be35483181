// The mailbox: views (Inbox by tab, Important, Archive, Sent, Scheduled, Drafts, a label), search with the
// API's syntax, the list, and the reading pane. Received HTML is shown by the box's own sandboxed page
// (GET /emails/:id/html: no scripts, no forms, an opaque origin), remote images only when asked for this
// message or this sender. New mail arrives live through the event stream.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, qs } from '../api.ts';
import { Badge, bytes, Empty, ErrorBox, Loading, messageOf, toast, useLoad, when } from '../components.tsx';
import { navigate, useLocation } from '../router.ts';
import { useShortcuts } from '../shortcuts.ts';
import { openCompose } from './compose.tsx';

interface Person {
  name: string | null;
  address: string;
}
interface Summary {
  id: string;
  threadId: string;
  direction: 'in' | 'out';
  status: string;
  from: Person;
  to: Person[];
  subject: string;
  snippet: string;
  createdAt: string;
  category: string | null;
  important: boolean;
  readAt: string | null;
  archivedAt: string | null;
  labels: Array<{ id: string; name: string; color: string }>;
  attachmentCount: number;
}
interface Email extends Summary {
  cc: Person[];
  text: string | null;
  html: string | null;
  classification: string | null;
  scheduledAt: string | null;
  messageId: string;
  authentication: Record<'spf' | 'dkim' | 'dmarc' | 'arc', { result: string; domain?: string | null } | undefined> | null;
  attachments: Array<{ id: string; filename: string; contentType: string; sizeBytes: number }>;
}
interface Label {
  id: string;
  name: string;
  color: string;
  skipInbox: boolean;
  unreadCount: number;
  totalCount: number;
}

// Each view is a filter of GET /emails.
const VIEWS: Record<string, { title: string; params: Record<string, string> }> = {
  inbox: { title: 'Inbox', params: { direction: 'in', archived: 'false', category: 'primary' } },
  updates: { title: 'Updates', params: { direction: 'in', archived: 'false', category: 'updates' } },
  spam: { title: 'Spam', params: { direction: 'in', category: 'spam', include_spam: 'true' } },
  important: { title: 'Important', params: { important: 'true', archived: 'false' } },
  archive: { title: 'Archive', params: { archived: 'true' } },
  sent: { title: 'Sent', params: { direction: 'out' } },
  scheduled: { title: 'Scheduled', params: { status: 'scheduled' } },
};

const who = (p: Person) => p.name || p.address;
const senderKey = (address: string) => `mailwright.images.${address.toLowerCase()}`;

/** The mailbox's part of the sidebar: its views and the labels as a tree with unread counts. */
function Nav() {
  const { path } = useLocation();
  const labels = useLoad(() => api<{ data: Label[]; mailbox: { inboxUnread: number; updatesUnread: number; importantUnread: number; spamTotal: number } }>('/labels'), [path]);
  const counts = labels.data?.mailbox;
  const count = (n: number | undefined) => (n ? <span class="count">{n}</span> : null);
  const link = (view: string, label: string, n?: number) => (
    <a href={`/mail/${view}`} class={path === `/mail/${view}` || (view === 'inbox' && path === '/mail') ? 'active' : ''}>
      {label} {count(n)}
    </a>
  );
  return (
    <>
      <div class="section">Mail</div>
      {link('inbox', 'Inbox', counts?.inboxUnread)}
      {link('updates', 'Updates', counts?.updatesUnread)}
      {link('important', 'Important', counts?.importantUnread)}
      {link('sent', 'Sent')}
      {link('scheduled', 'Scheduled')}
      {link('drafts', 'Drafts')}
      {link('archive', 'Archive')}
      {link('spam', 'Spam', counts?.spamTotal)}
      {labels.data && labels.data.data.length > 0 && <div class="section">Labels</div>}
      {labels.data?.data
        .slice()
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((l) => {
          const depth = l.name.split('/').length - 1;
          return (
            <a href={`/mail/label/${l.id}`} class={path === `/mail/label/${l.id}` ? 'active' : ''} style={{ paddingLeft: `${10 + depth * 14}px` }} title={l.skipInbox ? 'A bucket: its mail skips the Inbox' : l.name}>
              <span>
                <span class="label-dot" style={{ background: l.color }} />
                {l.name.split('/').pop()}
                {l.skipInbox ? ' ⤵' : ''}
              </span>
              {count(l.unreadCount)}
            </a>
          );
        })}
    </>
  );
}

export function Mailbox() {
  const { path, query } = useLocation();
  const parts = path.split('/').filter(Boolean); // mail, view[, id] or mail, label, lbl_[, id]
  const isLabel = parts[1] === 'label';
  const view = isLabel ? 'label' : (parts[1] ?? 'inbox');
  const selectedId = isLabel ? parts[3] : parts[2];
  const search = query.get('q') ?? '';
  const [refresh, setRefresh] = useState(0);
  const base = isLabel ? `/mail/label/${parts[2]}` : `/mail/${view}`;

  const list = useLoad(async () => {
    if (view === 'drafts') {
      const drafts = await api<{ data: any[] }>('/drafts');
      return drafts.data.map(
        (d): Summary => ({ id: d.id, threadId: d.id, direction: 'out', status: 'draft', from: { name: null, address: d.from ?? '' }, to: (d.to ?? []).map((a: string) => ({ name: null, address: a })), subject: d.subject ?? '(no subject)', snippet: d.text ?? '', createdAt: d.updatedAt, category: null, important: false, readAt: d.updatedAt, archivedAt: null, labels: [], attachmentCount: d.attachments.length }),
      );
    }
    const params = isLabel ? { label: parts[2] } : (VIEWS[view]?.params ?? VIEWS.inbox.params);
    return (await api<{ data: Summary[] }>(`/emails?${qs({ ...params, ...(search ? { query: search } : {}), limit: 50 })}`)).data;
  }, [view, parts[2], search, refresh]);

  // New mail: the list refreshes when the box says something arrived (GET /events/stream).
  useEffect(() => {
    const stream = new EventSource('/api/v1/events/stream?types=email.received');
    stream.addEventListener('email.received', (e) => {
      const subject = JSON.parse((e as MessageEvent).data)?.data?.email?.subject;
      toast(`New mail: ${subject || '(no subject)'}`);
      setRefresh((n) => n + 1);
    });
    return () => stream.close();
  }, []);

  const rows = list.data ?? [];
  const index = rows.findIndex((r) => r.id === selectedId);
  const open = (id: string | undefined) => {
    if (!id) return;
    if (view === 'drafts') return openCompose({ draftId: id });
    navigate(`${base}/${id}${search ? `?${qs({ q: search })}` : ''}`);
  };
  const move = (step: number) => open(rows[Math.min(rows.length - 1, Math.max(0, (index < 0 ? -1 : index) + step))]?.id);
  const act = async (id: string, patch: Record<string, unknown>, done: string, leaves: boolean) => {
    try {
      await api(`/emails/${id}`, { method: 'PATCH', body: patch });
      toast(done);
      if (leaves) {
        const next = rows[index + 1] ?? rows[index - 1];
        navigate(next && next.id !== id ? `${base}/${next.id}` : base, true);
      }
      setRefresh((n) => n + 1);
    } catch (err) {
      toast(messageOf(err));
    }
  };
  const searchBox = useRef<HTMLInputElement>(null);
  useShortcuts(
    [
      { key: 'j', label: 'Next message', run: () => move(1) },
      { key: 'k', label: 'Previous message', run: () => move(-1) },
      { key: 'o', label: 'Open the selected message', run: () => open(selectedId ?? rows[0]?.id) },
      { key: 'u', label: 'Back to the list', run: () => navigate(base) },
      { key: 'e', label: 'Archive', run: () => selectedId && act(selectedId, { archived: true }, 'Archived', true) },
      { key: '#', label: 'Delete', run: () => selectedId && remove(selectedId) },
      { key: '!', label: 'Report spam', run: () => selectedId && act(selectedId, { category: 'spam' }, 'Moved to Spam', true) },
      { key: '+', label: 'Mark important', run: () => selectedId && act(selectedId, { important: true }, 'Marked important', false) },
      { key: 'U', label: 'Mark unread', run: () => selectedId && act(selectedId, { read: false }, 'Marked unread', false) },
      { key: '/', label: 'Search', run: () => searchBox.current?.focus() },
      { key: 'c', label: 'Compose', run: () => openCompose({}) },
      { key: 'r', label: 'Reply', run: () => selectedId && openCompose({ replyTo: selectedId }) },
      { key: 'f', label: 'Forward', run: () => selectedId && openCompose({ forward: selectedId }) },
      { key: 'Escape', label: 'Leave the search box', run: () => searchBox.current?.blur() },
    ],
    [rows, selectedId, view, search],
  );
  const remove = async (id: string) => {
    try {
      await api(`/emails/${id}`, { method: 'DELETE' });
      toast('Deleted');
      navigate(base, true);
      setRefresh((n) => n + 1);
    } catch (err) {
      toast(messageOf(err));
    }
  };

  const title = isLabel ? 'Label' : view === 'drafts' ? 'Drafts' : (VIEWS[view]?.title ?? 'Inbox');
  useEffect(() => void (document.title = `${title} · Mailwright`), [title]);
  return (
    <div class={`mailbox ${selectedId ? 'reading' : ''}`}>
      <div class="mail-list">
        <div class="toolbar">
          <form
            role="search"
            onSubmit={(e) => {
              e.preventDefault();
              const q = searchBox.current!.value.trim();
              navigate(`${base}${q ? `?${qs({ q })}` : ''}`);
            }}
          >
            <input ref={searchBox} type="search" name="q" placeholder={`Search ${title.toLowerCase()}  ( / )`} value={search} aria-label="Search" />
          </form>
          {['inbox', 'updates', 'spam'].includes(view) && (
            <div class="tabs" role="tablist">
              {['inbox', 'updates', 'spam'].map((v) => (
                <a href={`/mail/${v}`} class={view === v ? 'active' : ''} role="tab">
                  {v === 'inbox' ? 'Primary' : VIEWS[v].title}
                </a>
              ))}
            </div>
          )}
        </div>
        {list.error ? (
          <ErrorBox message={list.error} retry={list.reload} />
        ) : list.loading && !list.data ? (
          <Loading />
        ) : rows.length === 0 ? (
          <Empty title={search ? 'Nothing matches' : `No mail in ${title}`}>{search ? 'Try other words, or from:, to:, subject: and quotes.' : view === 'inbox' ? 'Mail sent to your inboxes arrives here as it comes in.' : null}</Empty>
        ) : (
          <div role="list" aria-label={title}>
            {rows.map((r) => (
              <a
                role="listitem"
                href={view === 'drafts' ? '#' : `${base}/${r.id}`}
                class={`mail-row ${r.id === selectedId ? 'selected' : ''} ${r.direction === 'in' && !r.readAt ? 'unread' : ''}`}
                data-id={r.id}
                onClick={(e) => {
                  e.preventDefault();
                  e.stopPropagation();
                  open(r.id);
                }}
              >
                <span class="who">{r.direction === 'out' ? `To: ${r.to.map(who).join(', ')}` : who(r.from)}</span>
                <span class="date">{r.status === 'scheduled' ? '⏱ ' : ''}{when(r.createdAt)}</span>
                <span class="subject">
                  {r.important ? '★ ' : ''}
                  {r.subject || '(no subject)'}
                  {r.attachmentCount ? ' 📎' : ''}
                </span>
                <span />
                <span class="snippet">{r.snippet}</span>
              </a>
            ))}
          </div>
        )}
      </div>
      <div class="reader">{selectedId ? <Reader id={selectedId} onChange={() => setRefresh((n) => n + 1)} act={act} remove={remove} back={() => navigate(base)} /> : <Empty title="No message selected">Pick one from the list, or press <span class="kbd">j</span> and <span class="kbd">o</span>.</Empty>}</div>
    </div>
  );
}
Mailbox.Nav = Nav;

function Reader({ id, onChange, act, remove, back }: { id: string; onChange: () => void; act: (id: string, patch: Record<string, unknown>, done: string, leaves: boolean) => Promise<void>; remove: (id: string) => Promise<void>; back: () => void }) {
  const email = useLoad(() => api<Email>(`/emails/${id}`), [id]);
  const thread = useLoad(async () => (email.data ? (await api<{ data: Email[] }>(`/threads/${email.data.threadId}`)).data : []), [email.data?.threadId]);
  // Opening a received message reads it.
  useEffect(() => {
    if (email.data && email.data.direction === 'in' && !email.data.readAt) void api(`/emails/${id}`, { method: 'PATCH', body: { read: true } }).then(onChange, () => {});
  }, [email.data?.id]);
  if (email.error) return <ErrorBox message={email.error} retry={email.reload} />;
  if (!email.data) return <Loading />;
  const e = email.data;
  const messages = thread.data && thread.data.length > 1 ? thread.data : [e];
  return (
    <article aria-label="Message">
      <div class="row" style={{ marginBottom: '12px' }}>
        <button class="button small" onClick={back} aria-label="Back to the list">
          ←
        </button>
        {e.direction === 'in' && (
          <>
            <button class="button small" onClick={() => act(id, { archived: !e.archivedAt }, e.archivedAt ? 'Moved to the Inbox' : 'Archived', !e.archivedAt)}>
              {e.archivedAt ? 'Move to Inbox' : 'Archive'}
            </button>
            <button class="button small" onClick={() => act(id, { category: e.category === 'spam' ? 'primary' : 'spam' }, e.category === 'spam' ? 'Not spam: the sender is learned' : 'Moved to Spam', true)}>
              {e.category === 'spam' ? 'Not spam' : 'Spam'}
            </button>
            <button class="button small" onClick={() => act(id, { read: false }, 'Marked unread', false)}>
              Unread
            </button>
          </>
        )}
        <button class="button small" onClick={() => act(id, { important: !e.important }, e.important ? 'No longer important' : 'Marked important', false).then(email.reload)}>
          {e.important ? '★ Important' : '☆ Important'}
        </button>
        <LabelPicker email={e} onDone={() => (email.reload(), onChange())} />
        <button class="button small" onClick={() => openCompose({ replyTo: id })}>
          Reply
        </button>
        <button class="button small" onClick={() => openCompose({ forward: id })}>
          Forward
        </button>
        {e.status === 'scheduled' && (
          <button
            class="button small danger"
            onClick={async () => {
              try {
                await api(`/emails/${id}/cancel`, { method: 'POST', body: {} });
                toast('The scheduled send was canceled');
                email.reload();
                onChange();
              } catch (err) {
                toast(messageOf(err));
              }
            }}
          >
            Cancel send
          </button>
        )}
        <button class="button small danger" onClick={() => remove(id)}>
          Delete
        </button>
      </div>
      <h2 class="subject">{e.subject || '(no subject)'}</h2>
      <div class="row" style={{ marginBottom: '12px' }}>
        {e.labels.map((l) => (
          <Badge>
            <span class="label-dot" style={{ background: l.color }} />
            {l.name}
          </Badge>
        ))}
        {e.status === 'scheduled' && <Badge tone="info">Scheduled for {new Date(e.scheduledAt!).toLocaleString()}</Badge>}
        {e.status === 'canceled' && <Badge tone="warn">Canceled</Badge>}
      </div>
      {messages.map((m) => (
        <Message key={m.id} email={m.id === e.id ? e : m} />
      ))}
    </article>
  );
}

function Message({ email: e }: { email: Email }) {
  const [images, setImages] = useState(() => localStorage.getItem(senderKey(e.from.address)) === '1');
  const remote = useMemo(() => e.html !== null && /<img\b[^>]*\bsrc\s*=\s*["']?https?:/i.test(e.html), [e.html]);
  const frame = useRef<HTMLIFrameElement>(null);
  const verdict = (name: string, v: { result: string; domain?: string | null } | undefined) =>
    v && (
      <Badge tone={v.result === 'pass' ? 'good' : v.result === 'fail' ? 'bad' : 'neutral'}>
        <span title={v.domain ? `for ${v.domain}` : undefined}>{`${name} ${v.result}`}</span>
      </Badge>
    );
  return (
    <div class="message">
      <div class="message-head">
        <div class="row">
          <strong>{who(e.from)}</strong>
          <span class="addr" title="The address the message really came from">
            &lt;{e.from.address}&gt;
          </span>
          <span class="grow" />
          <span class="muted">{new Date(e.createdAt).toLocaleString()}</span>
        </div>
        <div class="addr">To: {e.to.map((p) => (p.name ? `${p.name} <${p.address}>` : p.address)).join(', ')}</div>
        {e.direction === 'in' && (
          <div class="verdicts">
            {verdict('SPF', e.authentication?.spf)}
            {verdict('DKIM', e.authentication?.dkim)}
            {verdict('DMARC', e.authentication?.dmarc)}
            {e.classification && <span class="muted">· {e.classification}</span>}
          </div>
        )}
      </div>
      {remote && !images && (
        <div class="notice" data-testid="images-blocked">
          Remote images are hidden to protect your privacy.
          <button class="button small" onClick={() => setImages(true)}>
            Show images
          </button>
          <button
            class="button small"
            onClick={() => {
              localStorage.setItem(senderKey(e.from.address), '1');
              setImages(true);
            }}
          >
            Always show from {e.from.address}
          </button>
        </div>
      )}
      <iframe
        ref={frame}
        title={`Message from ${who(e.from)}`}
        sandbox=""
        referrerpolicy="no-referrer"
        src={`/api/v1/emails/${e.id}/html${images ? '?images=1' : ''}`}
        onLoad={() => {
          // The frame is sandboxed (no same origin), so its height cannot be read; a tall default fits most mail.
          if (frame.current) frame.current.style.height = `${Math.max(360, Math.min(1600, (e.html?.length ?? e.text?.length ?? 0) / 6))}px`;
        }}
      />
      {e.attachments.length > 0 && (
        <div class="attachments">
          {e.attachments.map((a) => (
            <a href={`/api/v1/attachments/${a.id}`} download={a.filename}>
              📎 {a.filename} <span class="muted">{bytes(a.sizeBytes)}</span>
            </a>
          ))}
        </div>
      )}
    </div>
  );
}

function LabelPicker({ email, onDone }: { email: Email; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const labels = useLoad(async () => (open ? (await api<{ data: Label[] }>('/labels')).data : []), [open]);
  const has = new Set(email.labels.map((l) => l.id));
  const change = async (body: Record<string, unknown>) => {
    try {
      await api(`/emails/${email.id}/labels`, { body });
      onDone();
    } catch (err) {
      toast(messageOf(err));
    }
  };
  return (
    <span style={{ position: 'relative' }}>
      <button class="button small" onClick={() => setOpen(!open)} aria-expanded={open}>
        Labels ▾
      </button>
      {open && (
        <div class="card" style={{ position: 'absolute', zIndex: '10', minWidth: '220px', padding: '8px', top: '32px' }}>
          {(labels.data ?? []).map((l) => (
            <label class="row" style={{ padding: '3px 4px' }}>
              <input type="checkbox" checked={has.has(l.id)} onChange={() => change(has.has(l.id) ? { remove: [l.id] } : { add: [l.id] })} />
              <span class="label-dot" style={{ background: l.color }} />
              {l.name}
            </label>
          ))}
          <form
            onSubmit={(ev) => {
              ev.preventDefault();
              const name = new FormData(ev.currentTarget as HTMLFormElement).get('name') as string;
              if (name.trim()) void change({ add: [name.trim()], create: true }).then(() => setOpen(false));
            }}
          >
            <input name="name" placeholder="New label…" aria-label="New label" />
          </form>
        </div>
      )}
    </span>
  );
}
