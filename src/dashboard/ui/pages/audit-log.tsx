// Settings > Audit log (/settings/audit): who did what to the box (GET /audit), newest first, a page at a time,
// filtered by kind of action. A row names its target as it was called then, so deleted things still read.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Empty, Loaded } from '../components/feedback.tsx';
import { useLoad } from '../components/load.ts';
import { BackLink, Page } from '../components/page.tsx';
import { Pager } from '../components/table.tsx';

export interface AuditRow {
  id: string;
  action: string;
  actor: { type: 'user' | 'key' | 'cli' | 'system'; id: string | null; sessionId?: string | null };
  ip: string | null;
  target: { type: string; id: string | null; name: string | null } | null;
  createdAt: string;
  data: Record<string, unknown>;
}

const PAGE = 50;
/** The filter's groups: each a list of the actions GET /audit takes. */
const GROUPS: Array<[string, string]> = [
  ['Keys', 'key.created,key.revoked'],
  ['Users and sessions', 'user.created,user.password_changed,user.login_unlocked,session.revoked'],
  ['Domains', 'domain.created,domain.updated,domain.verified,domain.deleted,domain.dkim_rotated,domain.inbound_setup'],
  ['Inboxes and forwarding', 'inbox.created,inbox.updated,inbox.deleted,inbox.forwarding_changed'],
  ['Webhooks', 'webhook.created,webhook.updated,webhook.deleted,webhook.secret_rotated'],
  ['Billing', 'billing.checkout_started,billing.plan_activated,billing.plan_canceled,sending.resumed'],
  ['The box', 'workspace.created,box.backup_created,box.restored'],
];

const dateTime = (iso: string) => new Date(iso).toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** `key.created` -> `Key created`; `domain.dkim_rotated` -> `Domain DKIM rotated`. */
export function actionLabel(action: string): string {
  const words = action.replace('.', ' ').replace(/_/g, ' ').replace(/\bdkim\b/, 'DKIM');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function actorLabel(a: AuditRow['actor'], me: string): string {
  if (a.type === 'user') return a.id === me ? 'You' : `User ${a.id ?? ''}`;
  if (a.type === 'key') return `API key …${(a.id ?? '').slice(-6)}`;
  if (a.type === 'cli') return a.id ? `CLI (${a.id})` : 'CLI';
  return `The box (${a.id ?? 'system'})`;
}

export function AuditLog({ me }: { me: string }) {
  const [group, setGroup] = useState('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<{ data: AuditRow[]; hasMore: boolean }>(`/audit?limit=${PAGE}&offset=${offset}${group ? `&action=${group}` : ''}`), [group, offset]);
  return (
    <Page title="Audit log">
      <BackLink href="/settings">Settings</BackLink>
      <p class="muted" style={{ margin: '0 0 12px' }}>
        Who did what to this box: keys, users, domains, inboxes, webhooks, billing and backups, with the address each came from. Rows are kept after what they name is deleted.
      </p>
      <div class="row" style={{ marginBottom: '12px' }}>
        <select aria-label="Kind of action" value={group} style={{ width: 'auto' }} onChange={(e) => (setGroup((e.currentTarget as HTMLSelectElement).value), setOffset(0))}>
          <option value="">Every action</option>
          {GROUPS.map(([label, actions]) => (
            <option value={actions}>{label}</option>
          ))}
        </select>
      </div>
      <Loaded state={list}>
        {(l) =>
          l.data.length === 0 ? (
            <Empty title={offset > 0 ? 'No more entries' : 'Nothing recorded yet'}>{offset > 0 ? null : 'Changes to keys, domains, inboxes, webhooks and billing appear here.'}</Empty>
          ) : (
            <>
              <table class="table" aria-label="Audit log">
                <thead>
                  <tr>
                    <th>When</th>
                    <th>Action</th>
                    <th>What</th>
                    <th>Who</th>
                    <th>From</th>
                  </tr>
                </thead>
                <tbody>
                  {l.data.map((r) => (
                    <tr>
                      <td class="muted" style={{ whiteSpace: 'nowrap' }}>{dateTime(r.createdAt)}</td>
                      <td>{actionLabel(r.action)}</td>
                      <td style={{ wordBreak: 'break-word' }}>{r.target ? r.target.name ?? r.target.id : '—'}</td>
                      <td>{actorLabel(r.actor, me)}</td>
                      <td class="mono">{r.ip ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager offset={offset} step={PAGE} shown={l.data.length} hasMore={l.hasMore} labels={['Newer', 'Older']} go={setOffset} />
            </>
          )
        }
      </Loaded>
    </Page>
  );
}
