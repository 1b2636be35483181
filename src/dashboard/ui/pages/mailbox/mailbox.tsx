// The mailbox: views (Inbox by tab, Important, Archive, Sent, Scheduled, Drafts, Trash, a label), search with
// the API's operators over all mail or the view alone, the list, and the reading pane (reader.tsx). New mail
// arrives live through the event stream (live.ts), and sent mail's delivery (delivery.tsx) changes with it. What one
// keystroke changes can be taken back: Delete moves to the Trash, and it, Archive and Spam offer Undo.
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, qs } from '../../api.ts';
import { Empty, ErrorBox, Loading, toast } from '../../components/feedback.tsx';
import { when } from '../../components/format.tsx';
import { messageOf, useLoad } from '../../components/load.ts';
import { navigate, useLocation } from '../../router.ts';
import { useShortcuts } from '../../shortcuts.ts';
import { openCompose } from '../compose/compose.tsx';
import { VIEWS, folderOf, who, type Summary } from './model.ts';
import { Nav } from './nav.tsx';
import { DeliveryWord } from './delivery.tsx';
import { mailChanged, useArrivals, useMailVersion } from './live.ts';
import { Icon } from '../../icons.tsx';
import { Reader, type Act } from './reader.tsx';
import { DeleteForever, EmptyTrash } from './trash.tsx';

export function Mailbox() {
  const { path, query } = useLocation();
  const parts = path.split('/').filter(Boolean); // mail, view[, id] or mail, label, lbl_[, id]
  const isLabel = parts[1] === 'label';
  const view = isLabel ? 'label' : (parts[1] ?? 'inbox');
  const selectedId = isLabel ? parts[3] : parts[2];
  const search = query.get('q') ?? '';
  // A search covers all mail, as Gmail's does (spam and the Trash only when the query says in:anywhere,
  // in:spam or in:trash), unless the user keeps it to the view (scope=folder); Drafts are no email list.
  const inFolder = query.get('scope') === 'folder' && view !== 'drafts';
  const allMail = search !== '' && !inFolder;
  const searchQs = search ? `?${qs({ q: search, ...(inFolder ? { scope: 'folder' } : {}) })}` : '';
  // Each change to mail (live.ts) reads the list and the open message again.
  const refresh = useMailVersion();
  // The message `#` or its button asked to delete for good (Trash view), while the dialog asks.
  const [forever, setForever] = useState<string | null>(null);
  const base = isLabel ? `/mail/label/${parts[2]}` : `/mail/${view}`;

  const list = useLoad(async () => {
    if (view === 'drafts' && !allMail) {
      const drafts = await api<{ data: any[] }>('/drafts');
      return drafts.data.map(
        (d): Summary => ({ id: d.id, threadId: d.id, direction: 'out', status: 'draft', from: { name: null, address: d.from ?? '' }, to: (d.to ?? []).map((a: string) => ({ name: null, address: a })), subject: d.subject ?? '(no subject)', snippet: d.text ?? '', createdAt: d.updatedAt, category: null, important: false, readAt: d.updatedAt, scheduledAt: null, archivedAt: null, trashedAt: null, labels: [], attachmentCount: d.attachments.length }),
      );
    }
    const params = allMail ? {} : isLabel ? { label: parts[2] } : (VIEWS[view]?.params ?? VIEWS.inbox.params);
    return (await api<{ data: Summary[] }>(`/emails?${qs({ ...params, ...(search ? { query: search } : {}), limit: 50 })}`)).data;
  }, [view, parts[2], search, inFolder, refresh]);

  useArrivals((subject) => toast(`New mail: ${subject || '(no subject)'}`));

  const rows = list.data ?? [];
  const index = rows.findIndex((r) => r.id === selectedId);
  const open = (id: string | undefined) => {
    if (!id) return;
    if (view === 'drafts' && !allMail) return openCompose({ draftId: id });
    navigate(`${base}/${id}${searchQs}`);
  };
  const move = (step: number) => open(rows[Math.min(rows.length - 1, Math.max(0, (index < 0 ? -1 : index) + step))]?.id);
  // A message that left the view: the next one in the list is shown, or the list. One not in the list stays shown.
  const leave = (id: string) => {
    if (index < 0) return;
    const next = rows[index + 1] ?? rows[index - 1];
    navigate(`${next && next.id !== id ? `${base}/${next.id}` : base}${searchQs}`, true);
  };
  // `undo`: the PATCHes that take the change back, in order, offered by the toast.
  const act: Act = async (id, patch, done, leaves, undo) => {
    try {
      await api(`/emails/${id}`, { method: 'PATCH', body: patch });
      toast(done, undo && { label: 'Undo', run: () => void revert(id, undo, base) });
      if (leaves) leave(id);
    } catch (err) {
      toast(messageOf(err));
    }
  };
  const revert = async (id: string, undo: Array<Record<string, unknown>>, from: string) => {
    try {
      for (const patch of undo) await api(`/emails/${id}`, { method: 'PATCH', body: patch });
      toast('Undone');
      // Back to the message, unless the view was left meanwhile.
      if (location.pathname.startsWith(from)) navigate(`${from}/${id}`, true);
    } catch (err) {
      toast(messageOf(err));
    }
  };
  const trash = (id: string) => act(id, { trashed: true }, 'Moved to Trash', true, [{ trashed: false }]);
  const restore = (id: string) => act(id, { trashed: false }, 'Restored from the Trash', true, [{ trashed: true }]);
  const deleteForever = async (id: string) => {
    await api(`/emails/${id}`, { method: 'DELETE' });
    toast('Deleted forever');
    leave(id);
  };
  /** Spam and back, undone exactly for the message: its category and importance as they were. */
  const spam = (r: Pick<Summary, 'id' | 'category' | 'important'>) => {
    const undo = [{ category: r.category ?? 'primary' }, ...(r.important ? [{ important: true, learn: false }] : [])];
    return r.category === 'spam' ? act(r.id, { category: 'primary' }, 'Not spam: the sender is learned', true, [{ category: 'spam' }]) : act(r.id, { category: 'spam' }, 'Moved to Spam', true, undo);
  };
  const selected = rows.find((r) => r.id === selectedId);
  const searchBox = useRef<HTMLInputElement>(null);
  // The box shows the search of the address; what is being typed is left alone when the list re-renders (mail
  // arriving, a load finishing), which a controlled value would wipe.
  useEffect(() => {
    if (searchBox.current) searchBox.current.value = search;
  }, [search]);
  useShortcuts(
    [
      { key: 'j', label: 'Next message', run: () => move(1) },
      { key: 'k', label: 'Previous message', run: () => move(-1) },
      { key: 'o', label: 'Open the selected message', run: () => open(selectedId ?? rows[0]?.id) },
      { key: 'u', label: 'Back to the list', run: () => navigate(`${base}${searchQs}`) },
      { key: 'e', label: 'Archive', run: () => selectedId && act(selectedId, { archived: true }, 'Archived', true, [{ archived: false }]) },
      { key: '#', label: 'Move to Trash (in the Trash: delete forever, asked first)', run: () => selectedId && (view === 'trash' ? setForever(selectedId) : trash(selectedId)) },
      { key: 'z', label: 'Undo', run: () => toast.act() },
      { key: '!', label: 'Report spam', run: () => selected && selected.category !== 'spam' && spam(selected) },
      { key: '+', label: 'Mark important', run: () => selectedId && act(selectedId, { important: true }, 'Marked important', false) },
      { key: 'U', label: 'Mark unread', run: () => selectedId && act(selectedId, { read: false }, 'Marked unread', false) },
      { key: '/', label: 'Search', run: () => searchBox.current?.focus() },
      { key: 'c', label: 'Compose', run: () => openCompose({}) },
      { key: 'r', label: 'Reply', run: () => selectedId && openCompose({ replyTo: selectedId }) },
      { key: 'f', label: 'Forward', run: () => selectedId && openCompose({ forward: selectedId }) },
      { key: 'Escape', label: 'Leave the search box', run: () => searchBox.current?.blur() },
    ],
    [rows, selectedId, view, search, inFolder],
  );

  const title = isLabel ? 'Label' : view === 'drafts' ? 'Drafts' : (VIEWS[view]?.title ?? 'Inbox');
  const listTitle = allMail ? 'All mail' : title;
  useEffect(() => void (document.title = `${search ? `Search: ${search}` : title} · Mailwright`), [title, search]);
  return (
    <div class={`mailbox ${selectedId ? 'reading' : ''}`}>
      <div class="mail-list">
        <div class="toolbar">
          <form
            role="search"
            onSubmit={(e) => {
              e.preventDefault();
              const q = searchBox.current!.value.trim();
              navigate(`${base}${q ? `?${qs({ q, ...(inFolder ? { scope: 'folder' } : {}) })}` : ''}`);
            }}
          >
            <input ref={searchBox} type="search" name="q" placeholder={inFolder ? `Search ${title.toLowerCase()}  ( / )` : 'Search all mail  ( / )'} defaultValue={search} aria-label="Search" />
          </form>
          {search && view !== 'drafts' && (
            <div class="row search-scope" role="group" aria-label="Search in">
              <span class="muted">Search in:</span>
              <a href={`${base}?${qs({ q: search })}`} class={allMail ? 'active' : ''} aria-current={allMail ? 'true' : undefined}>
                All mail
              </a>
              <a href={`${base}?${qs({ q: search, scope: 'folder' })}`} class={inFolder ? 'active' : ''} aria-current={inFolder ? 'true' : undefined}>
                {isLabel ? 'This label' : title}
              </a>
            </div>
          )}
          {view === 'trash' && rows.length > 0 && (
            <div class="row" style={{ justifyContent: 'space-between', flexWrap: 'nowrap' }}>
              <span class="muted" style={{ fontSize: '13px' }}>
                Deleted for good after trash_days (30 unless configured).
              </span>
              <EmptyTrash
                done={(n) => {
                  toast(`Deleted ${n} ${n === 1 ? 'message' : 'messages'} forever`);
                  navigate(base, true);
                }}
              />
            </div>
          )}
          {['inbox', 'updates', 'spam'].includes(view) && !allMail && (
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
          <Empty title={search ? 'Nothing matches' : `No mail in ${title}`}>{search ? <SearchHint /> : view === 'inbox' ? 'Mail sent to your inboxes arrives here as it comes in.' : view === 'trash' ? 'Deleted mail waits here, so you can restore it, until it is deleted for good.' : null}</Empty>
        ) : (
          <div role="list" aria-label={listTitle}>
            {rows.map((r) => (
              <a
                role="listitem"
                href={view === 'drafts' && !allMail ? '#' : `${base}/${r.id}${searchQs}`}
                class={`mail-row ${r.id === selectedId ? 'selected' : ''} ${r.direction === 'in' && !r.readAt ? 'unread' : ''}`}
                data-id={r.id}
                onClick={(e) => {
                  e.preventDefault();
                  e.stopPropagation();
                  open(r.id);
                }}
              >
                <span class="who">{r.direction === 'out' ? `To: ${r.to.map(who).join(', ')}` : who(r.from)}</span>
                <RowDate row={r} />
                <span class="subject">
                  {allMail && <FolderBadges row={r} />}
                  {r.important && <Icon name="star" filled label="Important" />}
                  {r.important && ' '}
                  {r.subject || '(no subject)'}
                  {r.attachmentCount ? ' ' : ''}
                  {r.attachmentCount ? <Icon name="paperclip" label="Has attachments" /> : null}
                </span>
                <DeliveryWord summary={r.delivery} />
                <span class="snippet">{r.snippet}</span>
              </a>
            ))}
          </div>
        )}
      </div>
      {forever && <DeleteForever action={() => deleteForever(forever)} onClose={() => setForever(null)} />}
      <div class="reader">{selectedId ? <Reader id={selectedId} refresh={refresh} onChange={mailChanged} act={act} spam={spam} trash={trash} restore={restore} deleteForever={setForever} back={() => navigate(`${base}${searchQs}`)} /> : <Empty title="No message selected">Pick one from the list, or press <span class="kbd">j</span> and <span class="kbd">o</span>.</Empty>}</div>
    </div>
  );
}
Mailbox.Nav = Nav;

/** A row's time: when it arrived or was sent, and for a scheduled send when it will go. */
function RowDate({ row }: { row: Summary }) {
  const at = row.status === 'scheduled' && row.scheduledAt ? row.scheduledAt : row.createdAt;
  return (
    <span class="date" title={`${row.status === 'scheduled' ? 'Goes ' : ''}${new Date(at).toLocaleString()}`}>
      {row.status === 'scheduled' && (
        <>
          <Icon name="clock" label="Scheduled for" />{' '}
        </>
      )}
      {when(at)}
    </span>
  );
}

/** Where a result of an all-mail search lives: its folder, then its labels. */
function FolderBadges({ row }: { row: Summary }) {
  return (
    <span class="folders">
      <span class="badge">{folderOf(row)}</span>{' '}
      {row.labels.map((l) => (
        <Fragment key={l.id}>
          <span class="badge">
            <span class="label-dot" style={{ background: l.color }} />
            {l.name}
          </span>{' '}
        </Fragment>
      ))}
    </span>
  );
}

/** What the search box understands (the API's operators, emails/search-operators.ts). */
function SearchHint() {
  return (
    <>
      Search covers all mail but spam and the Trash (add <code>in:anywhere</code> for those). Try <code>from:</code>, <code>to:</code>, <code>subject:</code>, <code>has:attachment</code>,{' '}
      <code>filename:pdf</code>, <code>label:</code>, <code>is:unread</code>, <code>after:2026-11-01</code>, <code>before:</code>, <code>"a phrase"</code> and <code>-word</code>.
    </>
  );
}
