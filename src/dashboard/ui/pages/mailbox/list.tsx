// The mailbox's list: a row a message (who, when or when it goes, its marks, subject, delivery and snippet or new text),
// its folder and labels in an all-mail search, and what to say when nothing is there.
import { Fragment } from 'preact';
import { Empty } from '../../components/feedback.tsx';
import { when } from '../../components/format.tsx';
import { Icon } from '../../icons.tsx';
import { DeliveryWord } from './delivery.tsx';
import { folderOf, who, type Summary } from './model.ts';

/** `href` of a row, and `open` on a click: the mailbox decides where a row leads (a draft opens the composer). */
export function MailList({ rows, label, selectedId, allMail, searching = false, href, open }: { rows: Summary[]; label: string; selectedId: string | undefined; allMail: boolean; searching?: boolean; href: (r: Summary) => string; open: (id: string) => void }) {
  return (
    <div role="list" aria-label={label}>
      {rows.map((r) => (
        <a
          role="listitem"
          href={href(r)}
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
          <span class="snippet">{snippetOf(r, searching)}</span>
        </a>
      ))}
    </div>
  );
}

/**
 * A received reply shows its new words (extractedText: no quoted history, no signature); a search keeps the
 * snippet cut around the word searched for.
 */
const snippetOf = (r: Summary, searching: boolean) => (!searching && r.extractedText ? r.extractedText.replace(/\s+/g, ' ').trim().slice(0, 200) : r.snippet);

/** What an empty list says: why nothing matches a search, or what the view holds once there is some. */
export function EmptyList({ title, search, view }: { title: string; search: string; view: string }) {
  return <Empty title={search ? 'Nothing matches' : `No mail in ${title}`}>{search ? <SearchHint /> : view === 'inbox' ? 'Mail sent to your inboxes arrives here as it comes in.' : view === 'trash' ? 'Deleted mail waits here, so you can restore it, until it is deleted for good.' : null}</Empty>;
}

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
