// The reading pane: a message and its thread, with the actions on it (archive, spam, unread, important,
// labels, reply, forward, cancel a scheduled send, delete), and above each sent message where it stands
// (delivery.tsx), read again at each `refresh` the mailbox makes (a delivery event).
import { Fragment } from 'preact';
import { useEffect } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, ErrorBox, Loading, messageOf, toast, useLoad } from '../../components.tsx';
import { openCompose } from '../compose.tsx';
import { LabelPicker } from './label-picker.tsx';
import { Message } from './message.tsx';
import { Delivery } from './delivery.tsx';
import type { Email } from './model.ts';

export function Reader({ id, refresh, onChange, act, remove, back }: { id: string; refresh: number; onChange: () => void; act: (id: string, patch: Record<string, unknown>, done: string, leaves: boolean) => Promise<void>; remove: (id: string) => Promise<void>; back: () => void }) {
  const email = useLoad(() => api<Email>(`/emails/${id}`), [id, refresh]);
  const thread = useLoad(async () => (email.data ? (await api<{ data: Email[] }>(`/threads/${email.data.threadId}`)).data : []), [email.data?.threadId, refresh]);
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
        <Fragment key={m.id}>
          <Delivery email={m.id === e.id ? e : m} />
          <Message email={m.id === e.id ? e : m} />
        </Fragment>
      ))}
    </article>
  );
}
