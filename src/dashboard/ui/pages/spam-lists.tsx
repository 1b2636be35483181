// Settings' "Spam" card: what the content filter has learned (GET /spam/filter), and the workspace's allow and
// block lists (GET/POST/DELETE /spam/allow and /spam/block): senders or domains whose mail never goes to Spam
// by its content, or always does (refused at the door when the envelope names them). The box checks each entry.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Empty, Loaded, toast } from '../components/feedback.tsx';
import { messageOf, useLoad } from '../components/load.ts';

interface Entry {
  entry: string;
  type: 'address' | 'domain';
  createdAt: string;
}
interface FilterState {
  filter: 'builtin' | 'off' | string;
  state: 'untrained' | 'learning' | 'trained';
  learned: { spam: number; ham: number };
  minimumEach: number;
  pending: number;
}

const LISTS = {
  allow: { title: 'Always allow', hint: 'Never put in Spam by its content (GTUBE and SPF or DMARC failures still are).', empty: 'No sender is always allowed' },
  block: { title: 'Always block', hint: 'Always Spam; refused at the door when the sending server names it.', empty: 'No sender is blocked' },
} as const;

function learnedText(f: FilterState): string {
  if (f.filter === 'off') return 'The built-in content filter is off (spam_filter = "off" in the configuration).';
  const taught = `It has learned ${f.learned.spam} spam and ${f.learned.ham} other messages from your moves to and from Spam and your replies`;
  const state = f.state === 'trained' ? '' : `; until it has ${f.minimumEach} of each, it moves mail to Spam only when it is very sure`;
  return `${taught}${state}.${f.pending ? ` ${f.pending} more to learn.` : ''}`;
}

export function SpamLists() {
  const filter = useLoad(() => api<FilterState>('/spam/filter'));
  return (
    <div class="card" aria-label="Spam" style={{ marginBottom: '20px' }}>
      <h2>Spam</h2>
      <Loaded state={filter}>{(f) => <p class="muted" style={{ margin: '0 0 12px', fontSize: '13px' }}>{learnedText(f)}</p>}</Loaded>
      <div class="split">
        <SpamList list="allow" />
        <SpamList list="block" />
      </div>
    </div>
  );
}

function SpamList({ list }: { list: 'allow' | 'block' }) {
  const words = LISTS[list];
  const entries = useLoad(() => api<{ data: Entry[]; hasMore: boolean }>(`/spam/${list}?limit=100`));
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const add = async (e: Event) => {
    e.preventDefault();
    setBusy('add');
    setError(null);
    try {
      const added = await api<Entry>(`/spam/${list}`, { body: { entry: value } });
      setValue('');
      toast(`${added.entry} added to ${words.title.toLowerCase()}`);
      entries.reload();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(null);
    }
  };
  const remove = async (entry: string) => {
    setBusy(entry);
    try {
      await api(`/spam/${list}/${encodeURIComponent(entry)}`, { method: 'DELETE' });
      toast(`${entry} removed from ${words.title.toLowerCase()}`);
    } catch (err) {
      toast(messageOf(err));
    } finally {
      setBusy(null);
      entries.reload();
    }
  };
  return (
    <section aria-label={words.title}>
      <h3 style={{ margin: '0 0 4px' }}>{words.title}</h3>
      <p class="muted" style={{ margin: '0 0 8px', fontSize: '13px' }}>
        {words.hint}
      </p>
      <form class="row" onSubmit={add} style={{ marginBottom: '8px' }}>
        <input
          class="grow"
          name="entry"
          aria-label={`Address or domain to ${list}`}
          placeholder="name@example.com or example.com"
          value={value}
          onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)}
          required
        />
        <button class="button small" type="submit" disabled={busy !== null}>
          {busy === 'add' ? 'Adding…' : 'Add'}
        </button>
      </form>
      {error && (
        <p class="form-error" role="alert" style={{ marginBottom: '8px' }}>
          {error}
        </p>
      )}
      <Loaded state={entries}>
        {({ data, hasMore }) =>
          data.length === 0 ? (
            <Empty title={words.empty} />
          ) : (
            <ul aria-label={`${words.title} entries`} style={{ display: 'grid', gap: '6px', margin: 0, padding: 0, listStyle: 'none' }}>
              {data.map((e) => (
                <li class="row" style={{ border: '1px solid var(--line)', borderRadius: '8px', padding: '6px 10px' }}>
                  <div class="grow" style={{ minWidth: 0 }}>
                    <div class="mono" style={{ wordBreak: 'break-all' }}>
                      {e.entry}
                    </div>
                    <div class="muted" style={{ fontSize: '12px' }}>
                      {e.type === 'domain' ? 'domain and subdomains' : 'address'}
                    </div>
                  </div>
                  <button class="button small danger" disabled={busy !== null} onClick={() => remove(e.entry)} aria-label={`Remove ${e.entry}`}>
                    {busy === e.entry ? 'Removing…' : 'Remove'}
                  </button>
                </li>
              ))}
              {hasMore && <li class="muted">The newest 100 are shown: GET /api/v1/spam/{list} lists them all.</li>}
            </ul>
          )
        }
      </Loaded>
    </section>
  );
}
