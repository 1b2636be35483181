// The mailbox: views (Inbox by tab, Important, Archive, Sent, Scheduled, Drafts, Trash, a label), search with
// the API's operators over all mail or the view alone (toolbar.tsx), the list (list.tsx), and the reading pane
// (reader.tsx). New mail arrives live through the event stream (live.ts), and sent mail's delivery
// (delivery.tsx) changes with it. What one keystroke changes can be taken back (actions.ts): Delete moves to
// the Trash, and it, Archive and Spam offer Undo.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, qs } from '../../api.ts';
import { Empty, ErrorBox, Loading, toast } from '../../components/feedback.tsx';
import { useLoad } from '../../components/load.ts';
import { navigate, useLocation } from '../../router.ts';
import { useShortcuts } from '../../shortcuts.ts';
import { openCompose } from '../compose/compose.tsx';
import { mailActions } from './actions.ts';
import { EmptyList, MailList } from './list.tsx';
import { mailChanged, useArrivals, useMailVersion } from './live.ts';
import { VIEWS, type Summary } from './model.ts';
import { Nav } from './nav.tsx';
import { Reader } from './reader.tsx';
import { Toolbar } from './toolbar.tsx';
import { DeleteForever } from './trash.tsx';

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
  const drafts = view === 'drafts' && !allMail;
  const open = (id: string | undefined) => {
    if (!id) return;
    if (drafts) return openCompose({ draftId: id });
    navigate(`${base}/${id}${searchQs}`);
  };
  const move = (step: number) => open(rows[Math.min(rows.length - 1, Math.max(0, (index < 0 ? -1 : index) + step))]?.id);
  const { act, trash, restore, deleteForever, spam } = mailActions({ base, searchQs, rows, index });
  const selected = rows.find((r) => r.id === selectedId);
  const searchBox = useRef<HTMLInputElement>(null);
  // The box shows the search of the address; what is being typed is left alone when the list re-renders (mail
  // arriving, a load finishing), which a controlled value would wipe, and when the page has just opened (its
  // defaultValue already is the address's search, and a fast typist may be ahead of this effect).
  const boxShows = useRef(search);
  useEffect(() => {
    if (searchBox.current && boxShows.current !== search) searchBox.current.value = search;
    boxShows.current = search;
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
  useEffect(() => void (document.title = `${search ? `Search: ${search}` : title} · Mailwright`), [title, search]);
  return (
    <div class={`mailbox ${selectedId ? 'reading' : ''}`}>
      <div class="mail-list">
        <Toolbar searchBox={searchBox} base={base} view={view} title={title} isLabel={isLabel} search={search} inFolder={inFolder} allMail={allMail} any={rows.length > 0} />
        {list.error ? (
          <ErrorBox message={list.error} retry={list.reload} />
        ) : list.loading && !list.data ? (
          <Loading />
        ) : rows.length === 0 ? (
          <EmptyList title={title} search={search} view={view} />
        ) : (
          <MailList rows={rows} label={allMail ? 'All mail' : title} selectedId={selectedId} allMail={allMail} searching={!!search} href={(r) => (drafts ? '#' : `${base}/${r.id}${searchQs}`)} open={open} />
        )}
      </div>
      {forever && <DeleteForever action={() => deleteForever(forever)} onClose={() => setForever(null)} />}
      <div class="reader">{selectedId ? <Reader id={selectedId} refresh={refresh} onChange={mailChanged} act={act} spam={spam} trash={trash} restore={restore} deleteForever={setForever} back={() => navigate(`${base}${searchQs}`)} /> : <Empty title="No message selected">Pick one from the list, or press <span class="kbd">j</span> and <span class="kbd">o</span>.</Empty>}</div>
    </div>
  );
}
Mailbox.Nav = Nav;
