// Inboxes of a workspace: an address (local part @ one of its domains) that receives mail, with a status
// and forwarding state. Every query is scoped by workspace; the address is unique across the box.
import type { Clock } from '../clock.ts';
import { iso } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';

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

export function createInbox(db: Db, clock: Clock, input: { workspaceId: string; domainId: string; domain: string; localPart: string; name: string }): InboxRow {
  const id = newId('inb', clock.now());
  const address = `${input.localPart}@${input.domain}`.toLowerCase();
  try {
    db.prepare('INSERT INTO inboxes (id, workspace_id, domain_id, local_part, address, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
      id,
      input.workspaceId,
      input.domainId,
      input.localPart.toLowerCase(),
      address,
      input.name,
      clock.now(),
    );
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new InboxExists(address);
    throw err;
  }
  return getInbox(db, input.workspaceId, id)!;
}

/** The workspace's active inbox at `address` (any case), if it has one. */
export const activeInboxAt = (db: Db, workspaceId: string, address: string) =>
  db.prepare("SELECT * FROM inboxes WHERE address = ? AND workspace_id = ? AND status = 'active'").get(address.toLowerCase(), workspaceId) as InboxRow | undefined;

export const getInbox = (db: Db, workspaceId: string, id: string) =>
  (db.prepare('SELECT * FROM inboxes WHERE workspace_id = ? AND id = ?').get(workspaceId, id) as InboxRow | undefined) ?? null;

/** `only`: an inbox key's inboxes; absent, all of the workspace's. */
export function listInboxes(db: Db, workspaceId: string, domainId: string | undefined, page: { limit: number; offset: number }, only?: string[]): InboxRow[] {
  const ids = only === undefined ? null : JSON.stringify(only);
  return db
    .prepare(
      `SELECT * FROM inboxes WHERE workspace_id = ? AND (? IS NULL OR domain_id = ?) AND (? IS NULL OR id IN (SELECT value FROM json_each(?)))
       ORDER BY id DESC LIMIT ? OFFSET ?`,
    )
    .all(workspaceId, domainId ?? null, domainId ?? null, ids, ids, page.limit + 1, page.offset) as InboxRow[];
}

export function updateInbox(db: Db, workspaceId: string, id: string, changes: { name?: string; status?: InboxStatus }): InboxRow | null {
  if (changes.name !== undefined) db.prepare('UPDATE inboxes SET name = ? WHERE workspace_id = ? AND id = ?').run(changes.name, workspaceId, id);
  if (changes.status !== undefined) db.prepare('UPDATE inboxes SET status = ? WHERE workspace_id = ? AND id = ?').run(changes.status, workspaceId, id);
  return getInbox(db, workspaceId, id);
}

export const deleteInbox = (db: Db, workspaceId: string, id: string) => db.prepare('DELETE FROM inboxes WHERE workspace_id = ? AND id = ?').run(workspaceId, id).changes > 0;

/** Inbox addresses of a workspace, for GET /sending-identities. */
export const inboxAddresses = (db: Db, workspaceId: string) => db.prepare('SELECT address FROM inboxes WHERE workspace_id = ? ORDER BY address').pluck().all(workspaceId) as string[];

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
