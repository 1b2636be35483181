// Above the mailbox's list: the search box (all mail, or this view alone), Empty Trash in the Trash, and the
// tabs of the Inbox (Primary, Updates, Spam).
import type { RefObject } from 'preact';
import { qs } from '../../api.ts';
import { toast } from '../../components/feedback.tsx';
import { navigate } from '../../router.ts';
import { VIEWS } from './model.ts';
import { EmptyTrash } from './trash.tsx';

interface ToolbarProps {
  searchBox: RefObject<HTMLInputElement>;
  base: string;
  view: string;
  title: string;
  isLabel: boolean;
  search: string;
  inFolder: boolean;
  allMail: boolean;
  /** Whether the list has mail (Empty Trash is offered only then). */
  any: boolean;
}

export function Toolbar({ searchBox, base, view, title, isLabel, search, inFolder, allMail, any }: ToolbarProps) {
  return (
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
      {view === 'trash' && any && (
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
  );
}
