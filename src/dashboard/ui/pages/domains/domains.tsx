// Domains: the list with each domain's status and checks, and adding one; a domain's own page is domain.tsx.
// Paths: /domains and /domains/:id.
import { useState } from 'preact/hooks';
import { api, type List } from '../../api.ts';
import { Badge, Empty, Loaded, toast } from '../../components/feedback.tsx';
import { Field, Form } from '../../components/forms.tsx';
import { At } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import { Page } from '../../components/page.tsx';
import { Rows } from '../../components/table.tsx';
import { Icon } from '../../icons.tsx';
import { navigate, useLocation } from '../../router.ts';
import type { Me } from '../../session.ts';
import { DomainPage } from './domain.tsx';
import { DmarcPage } from './dmarc.tsx';
import { STATUS, type Checks, type DomainSummary } from './model.ts';

export function Domains(_: { me: Me }) {
  const { path } = useLocation();
  const [, , id, sub] = path.split('/');
  if (id && sub === 'dmarc') return <DmarcPage key={id} id={id} />;
  return id ? <DomainPage key={id} id={id} /> : <DomainList />;
}

function DomainList() {
  const list = useLoad(() => api<List<DomainSummary>>('/domains?limit=100'));
  const [adding, setAdding] = useState(false);
  const add = (
    <button class="button primary" onClick={() => setAdding(true)}>
      Add domain
    </button>
  );
  const head = (
    <>
      <th>Domain</th>
      <th>Status</th>
      <th>DNS</th>
      <th>Checks</th>
      <th>Last checked</th>
    </>
  );
  const empty = (
    <Empty title="No domains yet">
      <p style={{ margin: '0 0 12px' }}>Add a domain you own, such as example.com, and publish the records it shows at your DNS provider.</p>
      {add}
    </Empty>
  );
  return (
    <Page title="Domains" actions={add}>
      <p class="muted" style={{ marginTop: '-8px' }}>
        The domains you send from and receive at. Each needs a few DNS records before mail goes out.
      </p>
      <Loaded state={list}>
        {(l) => (
          <Rows rows={l.data} head={head} empty={empty}>
            {(d) => (
              <tr data-domain={d.name}>
                <td style={{ overflowWrap: 'anywhere' }}>
                  <a href={`/domains/${d.id}`}>
                    <strong>{d.name}</strong>
                  </a>
                </td>
                <td>
                  <Badge tone={STATUS[d.status][0]}>{STATUS[d.status][1]}</Badge>
                </td>
                <td>{d.setup_status === 'complete' ? <span class="muted">Complete</span> : d.setup_status === 'checking' ? <span class="muted">Checking…</span> : <a href={`/domains/${d.id}`}>Records to publish</a>}</td>
                <td>{d.local ? <span class="muted">Local to this machine: no DNS</span> : <CheckChips checks={d.checks} />}</td>
                <td>
                  <At iso={d.checkedAt} never="Never" />
                </td>
              </tr>
            )}
          </Rows>
        )}
      </Loaded>
      {adding && <AddDomain onClose={() => setAdding(false)} />}
    </Page>
  );
}

function CheckChips({ checks }: { checks: Checks }) {
  const chip = (ok: boolean, label: string) => <Badge tone={ok ? 'good' : 'neutral'}>
      {ok ? <Icon name="check" /> : '·'} {label}
    </Badge>;
  return (
    <span class="row" style={{ gap: '4px' }}>
      {chip(checks.dkim, 'DKIM')}
      {chip(checks.spf, 'SPF')}
      {chip(checks.returnPath, 'Return path')}
      {chip(checks.dmarc, 'DMARC')}
    </span>
  );
}

function AddDomain({ onClose }: { onClose: () => void }) {
  return (
    <Modal title="Add a domain" onClose={onClose}>
      <Form
        submit="Add domain"
        action={async (f) => {
          const d = await api<{ id: string; name: string }>('/domains', { body: { name: String(f.get('name') ?? '').trim() } });
          toast(`${d.name} added: publish its records next`);
          navigate(`/domains/${d.id}`);
        }}
      >
        <Field label="Domain name" hint="The domain of your From addresses, such as example.com or mail.example.com. Its bounce subdomain is set up for you.">
          <input name="name" placeholder="example.com" required autoFocus autoComplete="off" spellcheck={false} />
        </Field>
      </Form>
    </Modal>
  );
}
