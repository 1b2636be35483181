// Inboxes: the addresses that receive mail here. The list, creating one on a domain with inbound set up,
// enabling and disabling (a disabled inbox refuses mail), forwarding with its confirmation state, delete.
import { useState } from 'preact/hooks';
import type { Me } from '../session.ts';
import { api, type List } from '../api.ts';
import { useAction } from '../components/action.ts';
import { Badge, Empty, Loaded, toast } from '../components/feedback.tsx';
import { Field, Form } from '../components/forms.tsx';
import { At } from '../components/format.tsx';
import { messageOf, useLoad } from '../components/load.ts';
import { ConfirmButton, Modal } from '../components/modal.tsx';
import { Page, useNarrow } from '../components/page.tsx';
import { Rows } from '../components/table.tsx';
import type { Domain, DomainSummary } from './domains/model.ts';

interface Inbox {
  id: string;
  address: string;
  status: 'active' | 'disabled';
  /** Whether mail to it is taken now; receivingStatus says why not (its domain's last MX check). */
  receiving: boolean;
  receivingStatus: 'receiving' | 'disabled' | 'waiting_for_mx' | 'inbound_not_set_up';
  name: string;
  domainId: string;
  forwardTo: string | null;
  forwardStatus: 'off' | 'pending' | 'active';
  createdAt: string;
}

export function Inboxes(_: { me: Me }) {
  const inboxes = useLoad(() => api<List<Inbox>>('/inboxes?limit=100'));
  // The list of domains does not say whether inbound is set up, so each domain is read whole.
  const domains = useLoad(async () => {
    const list = await api<List<DomainSummary>>('/domains?limit=100');
    return Promise.all(list.data.map((d) => api<Domain>(`/domains/${d.id}`)));
  });
  const [creating, setCreating] = useState(false);
  const [forwarding, setForwarding] = useState<Inbox | null>(null);
  const narrow = useNarrow();
  const create = (
    <button class="button primary" onClick={() => setCreating(true)}>
      New inbox
    </button>
  );
  const setStatus = async (inbox: Inbox, status: Inbox['status']) => {
    await api(`/inboxes/${inbox.id}`, { method: 'PATCH', body: { status } });
    toast(status === 'active' ? `${inbox.address} receives mail again` : `${inbox.address} now refuses mail`);
    inboxes.reload();
  };
  const head = (
    <>
      <th>Address</th>
      {!narrow && <th>Status</th>}
      {!narrow && <th>Created</th>}
      <th />
    </>
  );
  const empty = (
    <Empty title="No inboxes yet">
      <p style={{ margin: '0 0 12px' }}>Create an address such as support@ on a domain with inbound mail set up.</p>
      {create}
    </Empty>
  );
  return (
    <Page title="Inboxes" actions={create}>
      <p class="muted" style={{ marginTop: '-8px' }}>
        Addresses that receive mail in this box. Each can forward what it receives to one other address.
      </p>
      <Loaded state={inboxes}>
        {(l) => (
          <Rows rows={l.data} label="Inboxes" head={head} empty={empty}>
            {(i) => {
              const state = (
                <div style={{ display: 'grid', gap: '4px', justifyItems: 'start', marginTop: narrow ? '6px' : 0 }}>
                  <Receiving inbox={i} />
                  <Forwarding inbox={i} />
                </div>
              );
              return (
                <tr data-inbox={i.address}>
                  <td>
                    <strong style={{ overflowWrap: 'anywhere' }}>{i.address}</strong>
                    {i.name && <div class="muted">{i.name}</div>}
                    {narrow && state}
                  </td>
                  {!narrow && <td>{state}</td>}
                  {!narrow && (
                    <td>
                      <At iso={i.createdAt} />
                    </td>
                  )}
                  <td>
                    <div class="row" style={{ gap: '6px', justifyContent: 'flex-end', ...(narrow ? { flexDirection: 'column', alignItems: 'stretch' } : {}) }}>
                      <button class="button small" onClick={() => setForwarding(i)}>
                        Forwarding
                      </button>
                      {i.status === 'active' ? (
                        <ConfirmButton label="Disable" danger={false} title={`Disable ${i.address}?`} confirm="Disable" action={() => setStatus(i, 'disabled')}>
                          Mail sent to {i.address} will be refused until you enable it again. Mail already received stays.
                        </ConfirmButton>
                      ) : (
                        <button class="button small" onClick={() => setStatus(i, 'active').catch((err) => toast(messageOf(err)))}>
                          Enable
                        </button>
                      )}
                      <ConfirmButton
                        label="Delete"
                        title={`Delete ${i.address}?`}
                        confirm="Delete inbox"
                        action={async () => {
                          await api(`/inboxes/${i.id}`, { method: 'DELETE' });
                          toast(`${i.address} deleted`);
                          inboxes.reload();
                        }}
                      >
                        New mail to {i.address} will be refused. Mail it already received stays in your mailbox.
                      </ConfirmButton>
                    </div>
                  </td>
                </tr>
              );
            }}
          </Rows>
        )}
      </Loaded>
      {creating && (
        <CreateInbox
          domains={domains}
          onClose={() => setCreating(false)}
          onDone={(inbox) => {
            setCreating(false);
            toast(`${inbox.address} created`);
            inboxes.reload();
          }}
        />
      )}
      {forwarding && (
        <ForwardingDialog
          inbox={forwarding}
          onClose={() => setForwarding(null)}
          onDone={() => {
            setForwarding(null);
            inboxes.reload();
          }}
        />
      )}
    </Page>
  );
}

// Never "Receiving" before the domain's MX points here: until then mail to the address is refused.
function Receiving({ inbox }: { inbox: Inbox }) {
  const domain = inbox.address.slice(inbox.address.lastIndexOf('@') + 1);
  if (inbox.receivingStatus === 'receiving') return <Badge tone="good">Receiving</Badge>;
  if (inbox.receivingStatus === 'disabled') return <Badge tone="bad">Disabled</Badge>;
  return (
    <>
      <Badge tone="warn">{inbox.receivingStatus === 'waiting_for_mx' ? 'Waiting for MX' : 'Inbound not set up'}</Badge>
      <span class="muted" style={{ fontSize: '12px' }}>
        Mail is refused until{' '}
        <a href={`/domains/${inbox.domainId}`}>{inbox.receivingStatus === 'waiting_for_mx' ? `the MX record of ${domain} points here` : `inbound mail is set up on ${domain}`}</a>.
      </span>
    </>
  );
}

function Forwarding({ inbox }: { inbox: Inbox }) {
  if (inbox.forwardStatus === 'off' || !inbox.forwardTo) return <span class="muted" style={{ fontSize: '12px' }}>No forwarding</span>;
  return (
    <span style={{ fontSize: '12px', overflowWrap: 'anywhere' }}>
      {inbox.forwardStatus === 'active' ? <Badge tone="info">Forwarding active</Badge> : <Badge tone="warn">Awaiting confirmation</Badge>} → {inbox.forwardTo}
    </span>
  );
}

function CreateInbox({ domains, onClose, onDone }: { domains: ReturnType<typeof useLoad<Domain[]>>; onClose: () => void; onDone: (inbox: Inbox) => void }) {
  const [domainId, setDomainId] = useState('');
  const [local, setLocal] = useState('');
  return (
    <Modal title="New inbox" onClose={onClose}>
      <Loaded state={domains}>
        {(all) => {
          const receiving = all.filter((d) => d.inbound.status !== 'not_configured');
          if (receiving.length === 0)
            return (
              <Empty title="No domain receives mail yet">
                {all.length === 0 ? (
                  <>
                    Add a domain first on the <a href="/domains">Domains</a> page.
                  </>
                ) : (
                  <>
                    Open a domain on the <a href="/domains">Domains</a> page and press Set up inbound.
                  </>
                )}
              </Empty>
            );
          const chosen = receiving.find((d) => d.id === domainId) ?? receiving[0];
          return (
            <Form
              submit="Create inbox"
              action={async (f) => {
                const name = String(f.get('name') ?? '').trim();
                onDone(await api<Inbox>('/inboxes', { body: { domain_id: chosen.id, local_part: local.trim(), ...(name ? { name } : {}) } }));
              }}
            >
              <Field label="Domain">
                <select name="domain_id" value={chosen.id} onChange={(e) => setDomainId((e.currentTarget as HTMLSelectElement).value)}>
                  {receiving.map((d) => (
                    <option value={d.id}>
                      {d.name}
                      {d.inbound.status === 'ready' ? '' : ' (MX not confirmed yet)'}
                    </option>
                  ))}
                </select>
              </Field>
              <Field label="Address" hint={`Such as support or first.last. The address will be ${local.trim() || '…'}@${chosen.name}.`}>
                <div class="row" style={{ flexWrap: 'nowrap', gap: '6px' }}>
                  <input name="local_part" value={local} onInput={(e) => setLocal((e.currentTarget as HTMLInputElement).value)} placeholder="support" required autoFocus autoComplete="off" spellcheck={false} />
                  <span class="muted" style={{ whiteSpace: 'nowrap' }}>
                    @{chosen.name}
                  </span>
                </div>
              </Field>
              <Field label="Name (optional)" hint="Shown as the sender when you write from this address.">
                <input name="name" placeholder="Support team" />
              </Field>
              {chosen.inbound.status !== 'ready' && <p class="muted" style={{ margin: 0 }}>Mail arrives once the MX record of {chosen.name} points here.</p>}
            </Form>
          );
        }}
      </Loaded>
    </Modal>
  );
}

function ForwardingDialog({ inbox, onClose, onDone }: { inbox: Inbox; onClose: () => void; onDone: () => void }) {
  const stopping = useAction();
  const on = inbox.forwardStatus !== 'off' && inbox.forwardTo;
  // Stopped, the dialog closes: it stays busy until then.
  const stop = () =>
    stopping.run(async () => {
      await api(`/inboxes/${inbox.id}/forwarding`, { method: 'PUT', body: { forward_to: null } });
      toast('Forwarding stopped');
      onDone();
    }, true);
  return (
    <Modal title={`Forwarding for ${inbox.address}`} onClose={onClose}>
      <p style={{ marginTop: 0 }}>
        {inbox.forwardStatus === 'active' ? (
          <>
            <Badge tone="info">Active</Badge> Mail is forwarded to <strong>{inbox.forwardTo}</strong>.
          </>
        ) : inbox.forwardStatus === 'pending' ? (
          <>
            <Badge tone="warn">Awaiting confirmation</Badge> A confirmation link went to <strong>{inbox.forwardTo}</strong>; forwarding starts once it is pressed.
          </>
        ) : (
          <>
            <Badge>Off</Badge> Mail stays here only.
          </>
        )}
      </p>
      <Form
        submit={on ? 'Change address' : 'Start forwarding'}
        action={async (f) => {
          const r = await api<Inbox>(`/inboxes/${inbox.id}/forwarding`, { method: 'PUT', body: { forward_to: String(f.get('forward_to') ?? '').trim() } });
          toast(r.forwardStatus === 'active' ? `Forwarding to ${r.forwardTo}` : `Confirmation sent to ${r.forwardTo}: forwarding starts once they confirm`);
          onDone();
        }}
      >
        <Field label="Forward to" hint="Your own sign-in address starts at once; any other address gets a confirmation email first. Spam is never forwarded.">
          <input name="forward_to" type="email" defaultValue={inbox.forwardTo ?? ''} placeholder="you@example.com" required />
        </Field>
      </Form>
      {on && (
        <p style={{ marginBottom: 0 }}>
          <button class="button danger" disabled={stopping.busy} onClick={stop}>
            {stopping.busy ? 'Stopping…' : 'Stop forwarding'}
          </button>
        </p>
      )}
    </Modal>
  );
}
