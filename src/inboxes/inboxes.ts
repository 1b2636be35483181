// Inboxes of a workspace: an address (local part @ one of its domains) that receives mail, with a status
// and forwarding state. Every query is scoped by workspace; the address is unique across the box.
import type { Clock } from '../clock.ts';
import { iso } from '../clock.ts';
import { newId } from '../db/ids.ts';
import { all, column, constraintViolated, get, run, type Query } from '../db/query.ts';

export type InboxStatus = 'active' | 'disabled';

export interface InboxRow {
  id: string;
  workspace_id: string;
  domain_id: string;
  local_part: string;
  address: string;
  name: string;
  status: InboxStatus;
  forward_to: string | null;
  forward_status: 'off' | 'pending' | 'active';
  created_at: number;
}

export class InboxExists extends Error {}

export function* createInbox(clock: Clock, input: { workspaceId: string; domainId: string; domain: string; localPart: string; name: string }): Query<InboxRow> {
  const id = newId('inb', clock.now());
  const address = `${input.localPart}@${input.domain}`.toLowerCase();
  try {
    yield* run(
      'INSERT INTO inboxes (id, workspace_id, domain_id, local_part, address, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      id,
      input.workspaceId,
      input.domainId,
      input.localPart.toLowerCase(),
      address,
      input.name,
      clock.now(),
    );
  } catch (err) {
    if (constraintViolated(err) === 'unique') throw new InboxExists(address);
    throw err;
  }
  return (yield* getInbox(input.workspaceId, id))!;
}

/** The workspace's active inbox at `address` (any case), if it has one. */
export const activeInboxAt = (workspaceId: string, address: string) =>
  get<InboxRow>("SELECT * FROM inboxes WHERE address = ? AND workspace_id = ? AND status = 'active'", address.toLowerCase(), workspaceId);

export function* getInbox(workspaceId: string, id: string): Query<InboxRow | null> {
  return (yield* get<InboxRow>('SELECT * FROM inboxes WHERE workspace_id = ? AND id = ?', workspaceId, id)) ?? null;
}

/** `only`: an inbox key's inboxes; absent, all of the workspace's. */
export function listInboxes(workspaceId: string, domainId: string | undefined, page: { limit: number; offset: number }, only?: string[]): Query<InboxRow[]> {
  const ids = only === undefined ? null : JSON.stringify(only);
  return all<InboxRow>(
    // CAST: PostgreSQL cannot tell the type of a value that is only tested for NULL.
    `SELECT * FROM inboxes WHERE workspace_id = ? AND (CAST(? AS TEXT) IS NULL OR domain_id = ?) AND (CAST(? AS TEXT) IS NULL OR id IN (SELECT value FROM json_each(?)))
       ORDER BY id DESC LIMIT ? OFFSET ?`,
    workspaceId, domainId ?? null, domainId ?? null, ids, ids, page.limit + 1, page.offset,
  );
}

export function* updateInbox(workspaceId: string, id: string, changes: { name?: string; status?: InboxStatus }): Query<InboxRow | null> {
  if (changes.name !== undefined) yield* run('UPDATE inboxes SET name = ? WHERE workspace_id = ? AND id = ?', changes.name, workspaceId, id);
  if (changes.status !== undefined) yield* run('UPDATE inboxes SET status = ? WHERE workspace_id = ? AND id = ?', changes.status, workspaceId, id);
  return yield* getInbox(workspaceId, id);
}

export function* deleteInbox(workspaceId: string, id: string): Query<boolean> {
  return (yield* run('DELETE FROM inboxes WHERE workspace_id = ? AND id = ?', workspaceId, id)) > 0;
}

/** Inbox addresses of a workspace, for GET /sending-identities. */
export const inboxAddresses = (workspaceId: string) => column<string>('SELECT address FROM inboxes WHERE workspace_id = ? ORDER BY address', workspaceId);

/**
 * Whether mail to the inbox is taken now, as receive/route.ts decides at RCPT: it must be active and its domain's
 * inbound MX confirmed (`ready`, from the domain's last MX check); else why not.
 */
export type ReceivingStatus = 'receiving' | 'disabled' | 'waiting_for_mx' | 'inbound_not_set_up';

export function receivingStatus(row: Pick<InboxRow, 'status'>, domainInbound: 'not_configured' | 'dns_pending' | 'ready' | null): ReceivingStatus {
  if (row.status !== 'active') return 'disabled';
  if (domainInbound === 'ready') return 'receiving';
  return domainInbound === 'dns_pending' ? 'waiting_for_mx' : 'inbound_not_set_up';
}

export function presentInbox(row: InboxRow, domainInbound: 'not_configured' | 'dns_pending' | 'ready' | null) {
  const receiving = receivingStatus(row, domainInbound);
  return {
    id: row.id,
    address: row.address,
    status: row.status,
    receiving: receiving === 'receiving',
    receivingStatus: receiving,
    name: row.name,
    domainId: row.domain_id,
    forwardTo: row.forward_to,
    forwardStatus: row.forward_status,
    createdAt: iso(row.created_at),
  };
}
