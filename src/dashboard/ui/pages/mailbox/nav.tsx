// The mailbox's part of the sidebar: its views and the labels as a tree with unread counts, read again at each
// change (live.ts): mail that arrives, mail read or moved, a label made, on whichever page is open.
import { api } from '../../api.ts';
import { useLoad } from '../../components/load.ts';
import { useLocation } from '../../router.ts';
import type { Label } from './model.ts';
import { useLiveMail, useMailVersion } from './live.ts';
import { Icon } from '../../icons.tsx';

export function Nav() {
  const { path } = useLocation();
  useLiveMail();
  const version = useMailVersion();
  const labels = useLoad(() => api<{ data: Label[]; mailbox: { inboxUnread: number; updatesUnread: number; importantUnread: number; spamTotal: number } }>('/labels'), [path, version]);
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
      {link('trash', 'Trash')}
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
                {l.skipInbox && <Icon name="bucket" label="Bucket" />}
              </span>
              {count(l.unreadCount)}
            </a>
          );
        })}
    </>
  );
}
