// The Suppressions tab: the addresses the box sends nothing to, by reason, a page at a time; asking whether one
// address is suppressed; adding one by hand; removing one, after saying what removing it risks.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, qs, type List } from '../../api.ts';
import { Badge, Empty, Loaded, toast } from '../../components/feedback.tsx';
import { Field, Form } from '../../components/forms.tsx';
import { At } from '../../components/format.tsx';
import { messageOf, useLoad } from '../../components/load.ts';
import { ConfirmButton, Modal } from '../../components/modal.tsx';
import { useNarrow } from '../../components/page.tsx';
import { Pager, Rows } from '../../components/table.tsx';
import { Icon } from '../../icons.tsx';
import { REASONS, small, type Suppression } from './model.ts';
import { Intro } from './parts.tsx';

const PAGE = 50;

function removeWarning(s: Suppression) {
  if (s.reason === 'complaint') return 'They reported your mail as spam: mailing them again can hurt how your mail is received.';
  if (s.reason === 'hard_bounce') return 'Their server said the address does not exist; if that is still so, the next send bounces again.';
  if (s.reason === 'unsubscribe') return 'They asked to stop marketing mail: remove this only if they asked to subscribe again.';
  return 'Mail to the address goes out again from the next send.';
}

function Remove({ s, onDone }: { s: Suppression; onDone: () => void }) {
  return (
    <ConfirmButton
      label="Remove"
      title={`Send to ${s.email} again?`}
      confirm="Remove from list"
      action={async () => {
        await api(`/suppressions/${encodeURIComponent(s.email)}`, { method: 'DELETE' });
        toast(`${s.email} removed: mail to it goes out again`);
        onDone();
      }}
    >
      {removeWarning(s)}
    </ConfirmButton>
  );
}

export function Suppressions() {
  const [reason, setReason] = useState<'' | Suppression['reason']>('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<List<Suppression>>(`/suppressions?${qs({ reason, limit: PAGE, offset })}`), [reason, offset]);
  const [adding, setAdding] = useState(false);
  const [found, setFound] = useState<{ email: string; entry: Suppression | null } | null>(null);
  const removed = (s: Suppression) => {
    if (found?.email === s.email) setFound(null);
    list.reload();
  };
  return (
    <>
      <Intro
        action={
          <button class="button primary" onClick={() => setAdding(true)}>
            Add address
          </button>
        }
      >
        Addresses here get no mail: a send to them is accepted and recorded as blocked. The box adds hard bounces, complaints and unsubscribes itself.
      </Intro>
      <div class="row" style={{ marginBottom: '12px' }}>
        <select aria-label="Reason" value={reason} style={{ width: 'auto' }} onChange={(e) => (setReason((e.currentTarget as HTMLSelectElement).value as typeof reason), setOffset(0))}>
          <option value="">All reasons</option>
          {(Object.keys(REASONS) as Array<Suppression['reason']>).map((r) => (
            <option value={r}>{REASONS[r][1]}</option>
          ))}
        </select>
        <Find onFound={setFound} />
      </div>
      {found && <Found found={found} onClose={() => setFound(null)} onRemoved={removed} />}
      <Loaded state={list}>
        {(l) => (
          <>
            <SuppressionRows rows={l.data} empty={<Empty title={offset > 0 ? 'No more entries' : reason ? `No ${REASONS[reason][1].toLowerCase()} entries` : 'Nobody is suppressed'}>{offset > 0 ? null : 'Addresses that hard-bounce, complain or unsubscribe appear here.'}</Empty>} onRemoved={removed} />
            {l.data.length > 0 && <Pager offset={offset} step={PAGE} shown={l.data.length} hasMore={l.hasMore} labels={['Newer', 'Older']} go={setOffset} />}
          </>
        )}
      </Loaded>
      {adding && (
        <AddSuppression
          onClose={() => setAdding(false)}
          onDone={() => {
            setAdding(false);
            list.reload();
          }}
        />
      )}
    </>
  );
}

/** Is one address suppressed? The answer, a 404 included, goes to `onFound`. */
function Find({ onFound }: { onFound: (found: { email: string; entry: Suppression | null } | null) => void }) {
  return (
    <form
      class="row grow"
      role="search"
      style={{ flexWrap: 'nowrap', minWidth: '240px' }}
      onSubmit={async (e) => {
        e.preventDefault();
        const email = String(new FormData(e.currentTarget as HTMLFormElement).get('email') ?? '').trim();
        if (!email) return onFound(null);
        try {
          onFound({ email, entry: await api<Suppression>(`/suppressions/${encodeURIComponent(email)}`) });
        } catch (err) {
          if (err instanceof ApiError && err.status === 404) onFound({ email, entry: null });
          else toast(messageOf(err));
        }
      }}
    >
      <input name="email" type="search" placeholder="Is an address suppressed?" aria-label="Find an address" />
      <button class="button" type="submit">
        Find
      </button>
    </form>
  );
}

function Found({ found, onClose, onRemoved }: { found: { email: string; entry: Suppression | null }; onClose: () => void; onRemoved: (s: Suppression) => void }) {
  return (
    <div class="card row" role="status" style={{ marginBottom: '14px' }}>
      {found.entry ? (
        <>
          <span class="grow">
            <strong>{found.email}</strong> is suppressed: {REASONS[found.entry.reason][1].toLowerCase()}, {found.entry.scope === 'all' ? 'all mail' : 'marketing only'}, since <At iso={found.entry.createdAt} />.
          </span>
          <Remove s={found.entry} onDone={() => onRemoved(found.entry!)} />
        </>
      ) : (
        <span class="grow">
          <strong>{found.email}</strong> is not suppressed: mail to it goes out.
        </span>
      )}
      <button class="icon" aria-label="Close" onClick={onClose}>
        <Icon name="close" />
      </button>
    </div>
  );
}

function SuppressionRows({ rows, empty, onRemoved }: { rows: Suppression[]; empty: ComponentChildren; onRemoved: (s: Suppression) => void }) {
  const narrow = useNarrow();
  const head = (
    <>
      <th>Address</th>
      <th>Reason</th>
      {!narrow && <th>Detail</th>}
      {!narrow && <th>Added</th>}
      <th />
    </>
  );
  return (
    <Rows rows={rows} label="Suppressions" head={head} empty={empty}>
      {(s) => (
        <tr data-suppression={s.email}>
          <td style={{ overflowWrap: 'anywhere' }}>
            <strong>{s.email}</strong>
            {narrow && (
              <div class="muted" style={small}>
                <At iso={s.createdAt} />
              </div>
            )}
          </td>
          <td>
            <Badge tone={REASONS[s.reason][0]}>{REASONS[s.reason][1]}</Badge>
            <div class="muted" style={small}>
              {s.scope === 'all' ? 'All mail' : 'Marketing only'}
            </div>
          </td>
          {!narrow && (
            <td style={{ overflowWrap: 'anywhere' }}>
              {s.detail && <div style={{ fontSize: '13px' }}>{s.detail}</div>}
              {s.emailId && (
                <a href={`/developers/events?${qs({ email: s.emailId })}`} style={small}>
                  The email that caused it
                </a>
              )}
              {!s.detail && !s.emailId && <span class="muted">—</span>}
            </td>
          )}
          {!narrow && (
            <td>
              <At iso={s.createdAt} />
            </td>
          )}
          <td style={{ textAlign: 'right' }}>
            <Remove s={s} onDone={() => onRemoved(s)} />
          </td>
        </tr>
      )}
    </Rows>
  );
}

function AddSuppression({ onClose, onDone }: { onClose: () => void; onDone: () => void }) {
  return (
    <Modal title="Suppress an address" onClose={onClose}>
      <Form
        submit="Suppress"
        action={async (f) => {
          const entry = await api<Suppression>('/suppressions', { body: { email: String(f.get('email') ?? '').trim(), scope: String(f.get('scope') ?? 'all') } });
          toast(`${entry.email} gets no ${entry.scope === 'all' ? 'mail' : 'marketing mail'} now`);
          onDone();
        }}
      >
        <Field label="Address">
          <input name="email" type="email" placeholder="someone@example.com" required autoFocus />
        </Field>
        <Field label="Stop">
          <select name="scope">
            <option value="all">All mail</option>
            <option value="marketing">Marketing mail only</option>
          </select>
        </Field>
      </Form>
    </Modal>
  );
}
