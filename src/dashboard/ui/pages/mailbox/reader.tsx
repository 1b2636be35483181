// The reading pane: a message and its thread, with the actions on it (archive, spam, unread, important,
// labels, reply, forward, cancel a scheduled send, move to the Trash), and above each sent message where it
// stands (delivery.tsx), read again at each `refresh` the mailbox makes (a delivery event). A message in the Trash
// shows the rest of its thread that is there, and offers Restore and Delete forever.
import { Fragment } from 'preact';
import { useEffect } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, ErrorBox, Loading, toast } from '../../components/feedback.tsx';
import { messageOf, useLoad } from '../../components/load.ts';
import { openCompose } from '../compose/compose.tsx';
import { LabelPicker } from './label-picker.tsx';
import { Message } from './message.tsx';
import { Delivery } from './delivery.tsx';
import type { Email, Summary } from './model.ts';
import { Icon } from '../../icons.tsx';

/** A PATCH of one email with its toast; `leaves`: it leaves the view; `undo`: the PATCHes that take it back. */
export type Act = (id: string, patch: Record<string, unknown>, done: string, leaves: boolean, undo?: Array<Record<string, unknown>>) => Promise<void>;

interface ReaderProps {
  id: string;
  /** Bumped by the mailbox when a delivery event arrives: the pane reads the message again. */
  refresh: number;
  onChange: () => void;
  act: Act;
  spam: (e: Pick<Summary, 'id' | 'category' | 'important'>) => Promise<void>;
  trash: (id: string) => Promise<void>;
  restore: (id: string) => Promise<void>;
  /** Asks, then deletes for good. */
  deleteForever: (id: string) => void;
  back: () => void;
}

export function Reader({ id, refresh, onChange, act, spam, trash, restore, deleteForever, back }: ReaderProps) {
  const email = useLoad(() => api<Email>(`/emails/${id}`), [id, refresh]);
  // The thread as seen from where the message is: outside the Trash, or in it.
  const inTrash = !!email.data?.trashedAt;
  const thread = useLoad(async () => (email.data ? (await api<{ data: Email[] }>(`/threads/${email.data.threadId}${inTrash ? '?trashed=true' : ''}`)).data : []), [email.data?.threadId, inTrash, refresh]);
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
          <Icon name="back" />
        </button>
        {inTrash && (
          <>
            <button class="button small" onClick={() => restore(id)}>
              Restore
            </button>
            <button class="button small danger" onClick={() => deleteForever(id)}>
              Delete forever
            </button>
          </>
        )}
        {!inTrash && e.direction === 'in' && (
          <>
            <button class="button small" onClick={() => act(id, { archived: !e.archivedAt }, e.archivedAt ? 'Moved to the Inbox' : 'Archived', !e.archivedAt, [{ archived: !!e.archivedAt }])}>
              {e.archivedAt ? 'Move to Inbox' : 'Archive'}
            </button>
            <button class="button small" onClick={() => spam(e)}>
              {e.category === 'spam' ? 'Not spam' : 'Spam'}
            </button>
            <button class="button small" onClick={() => act(id, { read: false }, 'Marked unread', false)}>
              Unread
            </button>
          </>
        )}
        <button class="button small" aria-pressed={e.important} onClick={() => act(id, { important: !e.important }, e.important ? 'No longer important' : 'Marked important', false).then(email.reload)}>
          <Icon name="star" filled={e.important} /> Important
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
        {!inTrash && (
          <button class="button small danger" onClick={() => trash(id)} title="Move to Trash ( # )">
            Delete
          </button>
        )}
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
        {inTrash && <Badge tone="warn">In the Trash since {new Date(e.trashedAt!).toLocaleString()}</Badge>}
      </div>
      {messages.map((m) => (
        <Fragment key={m.id}>
          <Delivery email={m.id === e.id ? e : m} />
          <Message email={m.id === e.id ? e : m} />
        </Fragment>
      ))}
    </article>
  );
}
